// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdmactl/conn.h>
#include <rdmactl/ops.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/dev_core.h>

#define DEFAULT_SQ 128
#define DEFAULT_RQ 16
/* 4.096 us * 2^16 = 268 ms per try, 7 retries: a dead peer is noticed in
 * about 2 s rather than the minutes of the default under emulation. */
#define ACK_TIMEOUT 16
#define RD_ATOMIC_MAX 16

void rc_peer_name(struct rdma_cm_id *id, char *buf, size_t len)
{
	struct sockaddr *sa = rdma_get_peer_addr(id);
	char host[INET6_ADDRSTRLEN] = "?";
	uint16_t port = 0;

	if (sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, host, sizeof(host));
		port = ntohs(((struct sockaddr_in *)sa)->sin_port);
		snprintf(buf, len, "%s:%u", host, port);
	} else if (sa->sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, host, sizeof(host));
		port = ntohs(((struct sockaddr_in6 *)sa)->sin6_port);
		snprintf(buf, len, "[%s]:%u", host, port);
	} else {
		snprintf(buf, len, "?");
	}
}

/* rdma_create_event_channel failed: what is missing, and the fix. */
static int cm_unavailable(struct rc_err *err)
{
	int e = errno;

	return rc_err_set(
		err, e,
		"cannot open the RDMA CM (%s): no RDMA device here, or rdma_ucm is not loaded: 'modprobe rdma_ucm'; for SoftRoCE over an Ethernet interface IF, 'rdma link add rxe0 type rxe netdev IF'; 'rdmactl probe-topology' shows what this host has",
		strerror(e));
}

int rc_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

/* Wait for the next event on a channel, at most timeout_ms (-1: forever). */
static int get_event(struct rdma_event_channel *ech, int timeout_ms, struct rdma_cm_event **ev)
{
	for (;;) {
		if (rdma_get_cm_event(ech, ev) == 0)
			return 0;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (timeout_ms == 0)
			return -EAGAIN;

		struct pollfd p = { .fd = ech->fd, .events = POLLIN };
		int n = poll(&p, 1, timeout_ms);

		if (n == 0)
			return -EAGAIN;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

static int expect_event(struct rc_conn *c, enum rdma_cm_event_type want, const char *what,
			struct rc_err *err)
{
	struct rdma_cm_event *ev;
	int rc = get_event(c->ech, c->timeout_ms, &ev);

	if (rc == -EAGAIN)
		return rc_err_set(err, ETIMEDOUT, "%s %s: no answer within %d ms", what, c->peer,
				  c->timeout_ms);
	if (rc)
		return rc_err_set(err, -rc, "%s %s: %s", what, c->peer, strerror(-rc));
	if (ev->event == want) {
		if (want == RDMA_CM_EVENT_ESTABLISHED)
			rc_conn_keep_accept(c, ev->param.conn.private_data,
					    ev->param.conn.private_data_len);
		rdma_ack_cm_event(ev);
		return 0;
	}

	enum rdma_cm_event_type got = ev->event;
	int status = ev->status;
	char reason[64] = "";

	if (got == RDMA_CM_EVENT_REJECTED)
		rc_reject_reason(ev->param.conn.private_data, ev->param.conn.private_data_len,
				 reason, sizeof(reason));
	rdma_ack_cm_event(ev);
	switch (got) {
	case RDMA_CM_EVENT_ADDR_ERROR:
		return rc_err_set(err, EHOSTUNREACH,
				  "cannot resolve %s to a local RDMA device (status %d: %s)",
				  c->peer, status, strerror(status < 0 ? -status : status));
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return rc_err_set(err, EHOSTUNREACH, "no route to %s (status %d)", c->peer, status);
	case RDMA_CM_EVENT_REJECTED:
		if (reason[0])
			return rc_err_set(err, rc_reject_errno(reason),
					  "connection to %s rejected: %s", c->peer, reason);
		/* An IB CM reject with reason 8 (invalid service ID): nobody listens. */
		if (status == 8)
			return rc_err_set(err, ECONNREFUSED,
					  "connection to %s refused: nothing listens on that port",
					  c->peer);
		return rc_err_set(err, ECONNREFUSED, "connection to %s rejected (reason %d)",
				  c->peer, status);
	case RDMA_CM_EVENT_UNREACHABLE:
		return rc_err_set(err, EHOSTUNREACH, "%s is unreachable (status %d)", c->peer,
				  status);
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return rc_err_set(err, ECONNRESET, "connection to %s failed (status %d)", c->peer,
				  status);
	default:
		return rc_err_set(err, EPROTO, "%s %s: unexpected event %s", what, c->peer,
				  rdma_event_str(got));
	}
}

/* Resolve the address in tries of at most RESOLVE_TRY_MS within the
 * connection's timeout, as rping does: a neighbour that is not resolved yet
 * may be retried by the kernel only at the deadline it was given, so one long
 * try can give up just as the answer is there. */
#define RESOLVE_TRY_MS 1000
static int resolve_addr(struct rc_conn *c, struct sockaddr *src, struct sockaddr *dst,
			struct rc_err *err)
{
	double deadline = rc_now() + c->timeout_ms / 1000.0;

	for (;;) {
		int left = (int)((deadline - rc_now()) * 1000), try_ms, rc;
		struct rdma_cm_event *ev;

		if (left <= 0)
			return rc_err_set(err, ETIMEDOUT, "resolving %s: no answer within %d ms",
					  c->peer, c->timeout_ms);
		try_ms = left < RESOLVE_TRY_MS ? left : RESOLVE_TRY_MS;
		if (!c->id && rdma_create_id(c->ech, &c->id, c, RDMA_PS_TCP))
			return rc_err_set(err, errno, "cannot create an RDMA CM id: %s",
					  strerror(errno));
		if (rdma_resolve_addr(c->id, src, dst, try_ms))
			return rc_err_set(err, errno, "cannot resolve %s to an RDMA device: %s",
					  c->peer, strerror(errno));
		rc = get_event(c->ech, try_ms + 200, &ev);
		if (rc == 0 && ev->event == RDMA_CM_EVENT_ADDR_RESOLVED) {
			rdma_ack_cm_event(ev);
			return 0;
		}
		if (rc == 0 && ev->event != RDMA_CM_EVENT_ADDR_ERROR) {
			int status = ev->status;
			enum rdma_cm_event_type got = ev->event;

			rdma_ack_cm_event(ev);
			return rc_err_set(err, EPROTO,
					  "resolving %s: unexpected event %s (status %d)", c->peer,
					  rdma_event_str(got), status);
		}
		if (rc == 0) {
			int status = ev->status;

			rdma_ack_cm_event(ev);
			/* No route or no RDMA device for it: trying again will not help. */
			if (status != -ETIMEDOUT && status != -ENODATA)
				return rc_err_set(
					err, EHOSTUNREACH,
					"cannot resolve %s to a local RDMA device (status %d: %s)",
					c->peer, status, strerror(-status));
		} else if (rc != -EAGAIN) {
			return rc_err_set(err, -rc, "resolving %s: %s", c->peer, strerror(-rc));
		}
		/* A fresh id for the next try: this one may still answer late. */
		rdma_destroy_id(c->id);
		c->id = NULL;
	}
}

static int make_qp(struct rc_conn *c, struct rdma_cm_id *id, const struct rc_conn_opts *o,
		   struct rc_err *err)
{
	struct ibv_qp_init_attr qa = { 0 };
	struct ibv_device_attr da;

	c->verbs = id->verbs;
	snprintf(c->dev_name, sizeof(c->dev_name), "%s", ibv_get_device_name(id->verbs->device));
	c->port_num = id->port_num;
	if (o->pd) {
		c->pd = o->pd;
	} else {
		c->pd = ibv_alloc_pd(id->verbs);
		if (!c->pd)
			return rc_err_set(err, errno,
					  "cannot allocate a protection domain on %s: %s",
					  c->dev_name, strerror(errno));
		c->own_pd = true;
	}
	if (o->shared) {
		int rc = rc_shared_use(o->shared, c, id->verbs, &qa.srq, err);

		if (rc)
			return rc;
	} else {
		c->cch = ibv_create_comp_channel(id->verbs);
		if (!c->cch)
			return rc_err_set(err, errno, "cannot create a completion channel: %s",
					  strerror(errno));
		rc_set_nonblock(c->cch->fd);
		c->cq = ibv_create_cq(id->verbs, c->sq_depth + c->rq_depth, c, c->cch, 0);
		if (!c->cq)
			return rc_err_set(err, errno,
					  "cannot create a completion queue of %d entries: %s",
					  c->sq_depth + c->rq_depth, strerror(errno));
	}
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = (uint32_t)c->sq_depth;
	qa.cap.max_recv_wr = qa.srq ? 0 : (uint32_t)c->rq_depth;
	if (c->send_sge > 1 && !ibv_query_device(id->verbs, &da) && da.max_sge < c->send_sge)
		c->send_sge = da.max_sge > 1 ? da.max_sge : 1;
	qa.cap.max_send_sge = (uint32_t)c->send_sge;
	qa.cap.max_recv_sge = qa.srq ? 0 : 1;
	qa.sq_sig_all = 0;
	if (rdma_create_qp(id, c->pd, &qa))
		return rc_err_set(err, errno, "cannot create an RC queue pair on %s: %s",
				  c->dev_name, strerror(errno));
	c->qp = id->qp;
	if (c->shared && rc_shared_add(c->shared, c))
		return rc_err_set(err, ENOMEM,
				  "cannot enter QP %u in the shared completion queue's table",
				  c->qp->qp_num);
	return 0;
}

static struct rc_conn *conn_new(const struct rc_conn_opts *o)
{
	struct rc_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->sq_depth = o->sq_depth > 0 ? o->sq_depth : DEFAULT_SQ;
	c->rq_depth = o->rq_depth > 0 ? o->rq_depth : DEFAULT_RQ;
	c->send_sge = o->send_sge > 1 ? o->send_sge : 1;
	c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 10000;
	c->busy_poll = o->busy_poll;
	return c;
}

static void conn_params(struct ibv_context *verbs, struct rdma_conn_param *p)
{
	struct ibv_device_attr da;

	memset(p, 0, sizeof(*p));
	p->initiator_depth = RD_ATOMIC_MAX;
	p->responder_resources = RD_ATOMIC_MAX;
	if (!ibv_query_device(verbs, &da)) {
		if (da.max_qp_init_rd_atom < p->initiator_depth)
			p->initiator_depth = (uint8_t)da.max_qp_init_rd_atom;
		if (da.max_qp_rd_atom < p->responder_resources)
			p->responder_resources = (uint8_t)da.max_qp_rd_atom;
	}
	/* 6, not 7: rdma_rxe reads a transport retry count of 7 as "retry for
	 * ever" (as 7 means for RNR retries), so a peer that died mid-transfer
	 * was never given up on; 6 ends in a retry-exceeded completion after
	 * about 2 s (ACK_TIMEOUT) everywhere. */
	p->retry_count = 6;
	p->rnr_retry_count = 7;
}

/* The RNR NAK delay this side asks of its peer: 12, 0.64 ms, as perftest.
 * The CM leaves min_rnr_timer at 0, which the IB encoding reads as 655 ms,
 * so each receive-not-ready cost the sender two thirds of a second. RTS to
 * RTS may change it; a device that refuses keeps the slow delay, nothing
 * worse, so a failure is not an error. */
static void short_rnr_timer(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .min_rnr_timer = 12 };

	(void)ibv_modify_qp(qp, &a, IBV_QP_MIN_RNR_TIMER);
}

/* -d DEV and the device the route to the peer went through: none called DEV
 * at all (rc_dev_exists says so), or another one. */
static int route_dev_check(struct rc_conn *c, const char *dev, struct rc_err *err)
{
	const char *via = ibv_get_device_name(c->id->verbs->device);

	if (!strcmp(dev, via))
		return 0;
	if (rc_dev_exists(dev, err))
		return -ENODEV;
	return rc_err_set(err, EINVAL,
			  "%s is reached through device %s, not %s (bind a local address of %s)",
			  c->peer, via, dev, dev);
}

int rc_connect(const char *host, const char *port, const struct rc_conn_opts *o,
	       struct rc_conn **out, struct rc_err *err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *dst = NULL, *src = NULL;
	struct rdma_conn_param cp;
	struct rc_conn *c;
	uint8_t ack = ACK_TIMEOUT;
	int rc;

	c = conn_new(o);
	if (!c)
		return rc_err_set(err, ENOMEM, "out of memory");
	snprintf(c->peer, sizeof(c->peer), strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, port);
	if (o->private_len > RC_TOKEN_MAX) {
		rc = rc_err_set(err, EINVAL, "connect private data is limited to %d bytes",
				RC_TOKEN_MAX);
		goto fail;
	}
	rc = getaddrinfo(host, port, &hints, &dst);
	if (rc) {
		rc = rc_err_set(err, EINVAL, "cannot resolve '%s': %s", host, gai_strerror(rc));
		goto fail;
	}
	if (o->bind_addr) {
		rc = getaddrinfo(o->bind_addr, NULL, &hints, &src);
		if (rc) {
			rc = rc_err_set(err, EINVAL, "cannot resolve bind address '%s': %s",
					o->bind_addr, gai_strerror(rc));
			goto fail;
		}
	}
	c->ech = rdma_create_event_channel();
	if (!c->ech) {
		rc = cm_unavailable(err);
		goto fail;
	}
	rc_set_nonblock(c->ech->fd);
	rc = resolve_addr(c, src ? src->ai_addr : NULL, dst->ai_addr, err);
	if (rc)
		goto fail;
	if (o->dev_name && (rc = route_dev_check(c, o->dev_name, err)))
		goto fail;
	rdma_set_option(c->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &ack, sizeof(ack));
	if (rdma_resolve_route(c->id, c->timeout_ms)) {
		rc = rc_err_set(err, errno, "cannot resolve a route to %s: %s", c->peer,
				strerror(errno));
		goto fail;
	}
	rc = expect_event(c, RDMA_CM_EVENT_ROUTE_RESOLVED, "routing to", err);
	if (rc)
		goto fail;
	rc = make_qp(c, c->id, o, err);
	if (rc)
		goto fail;
	conn_params(c->id->verbs, &cp);
	cp.private_data = o->private_data;
	cp.private_data_len = o->private_len;
	if (rdma_connect(c->id, &cp)) {
		rc = rc_err_set(err, errno, "cannot connect to %s: %s", c->peer, strerror(errno));
		goto fail;
	}
	rc = expect_event(c, RDMA_CM_EVENT_ESTABLISHED, "connecting to", err);
	if (rc)
		goto fail;
	short_rnr_timer(c->qp);
	c->established = true;
	freeaddrinfo(dst);
	if (src)
		freeaddrinfo(src);
	*out = c;
	return 0;
fail:
	if (dst)
		freeaddrinfo(dst);
	if (src)
		freeaddrinfo(src);
	rc_conn_close(c);
	return rc;
}

int rc_conn_close(struct rc_conn *c)
{
	int rc = 0, r;

	if (!c)
		return 0;
	if (c->established && !c->disconnected)
		rdma_disconnect(c->id);
	if (c->shared)
		rc_shared_remove(c->shared, c); /* what it left in the CQ maps to nothing */
	if (c->qp) {
		rdma_destroy_qp(c->id);
		c->qp = NULL;
	}
	/* The ibv_ calls return their error (errno is not theirs); rdma_cm's set errno. */
	if (!c->shared && c->cq && (r = ibv_destroy_cq(c->cq)) && !rc)
		rc = -abs(r);
	if (!c->shared && c->cch && (r = ibv_destroy_comp_channel(c->cch)) && !rc)
		rc = -abs(r);
	if (c->own_pd && c->pd && (r = ibv_dealloc_pd(c->pd)) && !rc)
		rc = -abs(r);
	if (c->id && rdma_destroy_id(c->id) && !rc)
		rc = -errno;
	if (c->ech)
		rdma_destroy_event_channel(c->ech);
	free(c);
	return rc;
}

static struct ibv_context *find_cm_device(const char *name)
{
	struct ibv_context **list = rdma_get_devices(NULL), *found = NULL;

	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]->device), name))
			found = list[i];
	if (list)
		rdma_free_devices(list);
	return found;
}

int rc_listen(const char *addr, const char *port, const char *dev_name, struct rc_listener **out,
	      struct rc_err *err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai = NULL;
	struct rc_listener *l = calloc(1, sizeof(*l));
	int rc;

	if (!l)
		return rc_err_set(err, ENOMEM, "out of memory");
	rc = getaddrinfo(addr, port, &hints, &ai);
	if (rc) {
		rc = rc_err_set(err, EINVAL, "cannot resolve listen address '%s:%s': %s", addr,
				port, gai_strerror(rc));
		goto fail;
	}
	l->ech = rdma_create_event_channel();
	if (!l->ech) {
		rc = cm_unavailable(err);
		goto fail;
	}
	rc_set_nonblock(l->ech->fd);
	if (rdma_create_id(l->ech, &l->id, l, RDMA_PS_TCP)) {
		rc = rc_err_set(err, errno, "cannot create an RDMA CM id: %s", strerror(errno));
		goto fail;
	}
	if (rdma_bind_addr(l->id, ai->ai_addr)) {
		rc = rc_err_set(
			err, errno,
			"cannot listen on %s:%s: %s (is the address on an RDMA device, and the port free?)",
			addr, port, strerror(errno));
		goto fail;
	}
	if (rdma_listen(l->id, 64)) {
		rc = rc_err_set(err, errno, "cannot listen on %s:%s: %s", addr, port,
				strerror(errno));
		goto fail;
	}
	l->verbs = l->id->verbs;
	if (dev_name) {
		struct ibv_context *d = find_cm_device(dev_name);

		if (!d) {
			rc = rc_dev_exists(dev_name, err);
			rc = rc ? rc
				: rc_err_set(err, ENODEV, "no RDMA device named '%s'", dev_name);
			goto fail;
		}
		if (l->verbs && l->verbs != d) {
			rc = rc_err_set(err, EINVAL, "%s belongs to device %s, not %s", addr,
					ibv_get_device_name(l->verbs->device), dev_name);
			goto fail;
		}
		l->verbs = d;
	}
	if (!l->verbs) {
		rc = rc_err_set(err, EINVAL,
				"listening on a wildcard address needs a device (-d NAME), "
				"or give an address that belongs to an RDMA device");
		goto fail;
	}
	snprintf(l->dev_name, sizeof(l->dev_name), "%s", ibv_get_device_name(l->verbs->device));
	l->port_num = l->id->port_num ? l->id->port_num : 1;
	l->pd = ibv_alloc_pd(l->verbs);
	if (!l->pd) {
		rc = rc_err_set(err, errno, "cannot allocate a protection domain on %s: %s",
				l->dev_name, strerror(errno));
		goto fail;
	}
	getnameinfo(ai->ai_addr, ai->ai_addrlen, l->addr, sizeof(l->addr), NULL, 0, NI_NUMERICHOST);
	l->port = ntohs(rdma_get_src_port(l->id));
	freeaddrinfo(ai);
	*out = l;
	return 0;
fail:
	if (ai)
		freeaddrinfo(ai);
	rc_listener_close(l);
	return rc;
}

int rc_listener_close(struct rc_listener *l)
{
	int rc = 0;

	if (!l)
		return 0;
	if (l->pd && (rc = ibv_dealloc_pd(l->pd))) /* its error, not errno */
		rc = -abs(rc);
	if (l->id && rdma_destroy_id(l->id) && !rc)
		rc = -errno;
	if (l->ech)
		rdma_destroy_event_channel(l->ech);
	free(l);
	return rc;
}

int rc_conn_event(struct rc_conn *c, int timeout_ms, struct rdma_cm_event **ev)
{
	return c->ech ? get_event(c->ech, timeout_ms, ev) : -EINVAL;
}

int rc_listener_event(struct rc_listener *l, int timeout_ms, struct rdma_cm_event **ev)
{
	return get_event(l->ech, timeout_ms, ev);
}

int rc_accept(struct rc_listener *l, struct rdma_cm_id *child, const struct rdma_conn_param *req,
	      const struct rc_conn_opts *o, struct rc_conn **out, struct rc_err *err)
{
	struct rc_conn_opts oo = *o;
	struct rdma_conn_param cp;
	struct rc_conn *c = conn_new(o);
	int rc;

	if (!c)
		return rc_err_set(err, ENOMEM, "out of memory");
	rc_peer_name(child, c->peer, sizeof(c->peer));
	c->id = child;
	child->context = c;
	oo.pd = l->pd;
	rc = make_qp(c, child, &oo, err);
	if (rc)
		goto fail;
	if (o->hold_access && (rc = rc_qp_remote_access(c, 0, &c->held_access))) {
		rc = rc_err_set(err, -rc, "cannot withhold %s's remote access", c->peer);
		goto fail;
	}
	if (o->on_qp) {
		rc = o->on_qp(c, o->on_qp_arg);
		if (rc) {
			rc = rc_err_set(err, -rc, "cannot prepare the connection from %s: %s",
					c->peer, strerror(-rc));
			goto fail;
		}
	}
	conn_params(child->verbs, &cp);
	cp.private_data = o->private_data;
	cp.private_data_len =
		o->private_len < RC_ACCEPT_DATA_MAX ? o->private_len : RC_ACCEPT_DATA_MAX;
	if (req) {
		if (req->initiator_depth < cp.responder_resources)
			cp.responder_resources = req->initiator_depth;
		if (req->responder_resources < cp.initiator_depth)
			cp.initiator_depth = req->responder_resources;
	}
	rc = o->rnr_retry > 0 || o->hold_access
		     ? rc_accept_own_rnr(child, &cp, o->rnr_retry > 0 ? o->rnr_retry : 7)
		     : (rdma_accept(child, &cp) ? -errno : 0);
	if (rc) {
		rc = rc_err_set(err, -rc, "cannot accept %s: %s", c->peer, strerror(-rc));
		goto fail;
	}
	short_rnr_timer(c->qp);
	*out = c;
	return 0;
fail:
	/* The caller still owns the child id: it rejects and destroys it. */
	if (c->qp)
		rdma_destroy_qp(child);
	c->qp = NULL;
	c->id = NULL;
	child->context = NULL;
	rc_conn_close(c);
	return rc;
}
