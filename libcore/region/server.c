// SPDX-License-Identifier: MIT
/*
 * The region server behind `register`. One thread: the listener's CM event
 * channel and every connection's completion channel are polled together.
 * Data moves one-sided, so the only work here is admitting connections
 * (token check) and answering LIST requests on the control channel.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ops.h>
#include <rdmactl/parse.h>
#include <rdmactl/server.h>

#include "srv_mig.h"

#define SRV_RECVS 16
#define SRV_MAX_CONNS 256
#define SRV_KEEPALIVE_MS 5000      /* default probe interval */
#define SRV_FLUSH_SLICE (8u << 20) /* bytes written back per step */

struct srv_conn {
	struct rc_conn *c;
	struct ibv_mr *mr;
	double probe_at;   /* next keepalive probe */
	double probe_sent; /* the one in flight */
	bool probing;      /* one in flight */
	bool admin;        /* it presented the admin token: migration steps */
	struct {
		unsigned char recv[SRV_RECVS][RC_CTRL_MSG_MAX];
		/* The reply to the request in recv[i]: its own buffer, and recv[i]
		 * is posted again only once that reply has gone, so no reply
		 * overwrites one still being sent. */
		unsigned char send[SRV_RECVS][RC_CTRL_MSG_MAX];
	} buf;
};

struct rc_server {
	struct rc_server_opts o;
	char token[RC_TOKEN_MAX + 1];
	char admin[RC_TOKEN_MAX + 1];
	struct rc_listener *l;
	struct rc_gid_info gid;
	struct rc_region regions[RC_MAX_REGIONS];
	int nregions;
	struct srv_conn *conns[SRV_MAX_CONNS];
	int nconns;
	int max_conns;
	bool draining;       /* a fence's drain_all is under way */
	struct srv_mig *mig; /* a migration's pull connection and hash */
	struct {
		double at;  /* the next pass starts then */
		bool on;    /* a pass is under way */
		int reg;    /* the region it writes back */
		size_t off; /* and how far it got there */
	} flush;
	struct rc_server_stats st; /* its counters; conns is filled when asked */
};

int rc_server_nregions(const struct rc_server *s)
{
	return s->nregions;
}
const struct rc_region *rc_server_region(const struct rc_server *s, int i)
{
	return &s->regions[i];
}
const struct rc_listener *rc_server_listener(const struct rc_server *s)
{
	return s->l;
}
const struct rc_gid_info *rc_server_gid(const struct rc_server *s)
{
	return &s->gid;
}
const char *rc_server_token(const struct rc_server *s)
{
	return s->token[0] ? s->token : NULL;
}
int rc_server_nconns(const struct rc_server *s)
{
	return s->nconns;
}

void rc_server_stats(const struct rc_server *s, struct rc_server_stats *out)
{
	*out = s->st;
	out->conns = s->nconns;
}

static void emit(struct rc_server *s, enum rc_server_event_kind kind, const char *peer,
		 const char *reason)
{
	struct rc_server_event ev = { .kind = kind, .peer = peer, .reason = reason };

	if (s->o.on_event)
		s->o.on_event(s->o.arg, &ev);
}

int rc_server_create(const struct rc_server_opts *o, struct rc_server **out, struct rc_err *err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
	struct rc_server *s;
	int rc;

	if (o->token && !rc_token_valid(o->token))
		return rc_err_set(err, EINVAL,
				  "a token is 1 to %d printable characters without spaces",
				  RC_TOKEN_MAX);
	if (o->admin_token && !rc_token_valid(o->admin_token))
		return rc_err_set(err, EINVAL,
				  "an admin token is 1 to %d printable characters without spaces",
				  RC_TOKEN_MAX);
	if (o->admin_token && o->token && !strcmp(o->admin_token, o->token))
		return rc_err_set(err, EINVAL,
				  "the admin token must differ from the token: it grants more");
	s = calloc(1, sizeof(*s));
	if (!s)
		return rc_err_set(err, ENOMEM, "out of memory");
	s->o = *o;
	if (o->flush_every_ms > 0)
		s->flush.at = rc_now() + o->flush_every_ms / 1000.0;
	s->max_conns = o->max_conns > 0 && o->max_conns <= SRV_MAX_CONNS ? o->max_conns : 64;
	if (o->token)
		strcpy(s->token, o->token);
	if (o->admin_token)
		strcpy(s->admin, o->admin_token);
	rc = rc_listen(o->addr, o->port, o->dev_name, &s->l, err);
	if (rc) {
		free(s);
		return rc;
	}
	rc = -ENOENT;
	if (o->gid_index < 0 && !getaddrinfo(o->addr, NULL, &hints, &ai)) {
		rc = rc_gid_find_addr(s->l->verbs, s->l->port_num, ai->ai_addr, &s->gid);
		freeaddrinfo(ai);
	}
	if (rc)
		rc = rc_gid_pick(s->l->verbs, s->l->port_num, o->gid_index, &s->gid, err);
	if (rc) {
		rc_listener_close(s->l);
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int rc_server_add_region(struct rc_server *s, const char *name, enum rc_mem_kind kind, size_t len,
			 const char *path, enum rc_access access, struct rc_err *err)
{
	struct rc_mem_spec spec = { .kind = kind, .len = len, .path = path };

	return rc_server_add_region_spec(s, name, &spec, access, err);
}

int rc_server_add_region_spec(struct rc_server *s, const char *name, const struct rc_mem_spec *spec,
			      enum rc_access access, struct rc_err *err)
{
	enum rc_mem_kind kind = spec->kind;
	const char *path = spec->path;
	size_t len = spec->len;
	struct rc_region *r;
	int rc;

	if (!rc_region_name_valid(name))
		return rc_err_set(err, EINVAL,
				  "invalid region name '%s': 1 to %d of A-Z a-z 0-9 _ . -", name,
				  RC_NAME_MAX - 1);
	for (int i = 0; i < s->nregions; i++)
		if (!strcmp(s->regions[i].d.name, name))
			return rc_err_set(err, EEXIST, "a region named '%s' is already served",
					  name);
	if (s->nregions >= RC_MAX_REGIONS)
		return rc_err_set(err, ENOSPC, "at most %d regions per server", RC_MAX_REGIONS);
	r = &s->regions[s->nregions];
	memset(r, 0, sizeof(*r));
	rc = rc_mem_alloc_spec(&r->mem, spec, access != RC_ACCESS_RO, err);
	if (rc)
		return rc;
	/* GPU memory: dma-buf, peer memory, then a bounce buffer (mem.c). */
	rc = rc_mem_register(&r->mem, s->l->pd, rc_access_ibv(access), &r->mr,
			     kind == RC_MEM_CUDA ? err : NULL);
	if (rc && kind == RC_MEM_CUDA) {
		rc_mem_free(&r->mem);
		return rc;
	}
	if (rc) {
		int e = -rc;

		rc_mem_free(&r->mem);
		if (e == ENOMEM || e == EPERM)
			return rc_err_set(err, e,
					  "cannot register %zu bytes on %s: %s (is the memlock limit, "
					  "ulimit -l, large enough?)",
					  len, s->l->dev_name, strerror(e));
		return rc_err_set(err, e, "cannot register %zu bytes on %s: %s", len,
				  s->l->dev_name, strerror(e));
	}
	snprintf(r->d.name, sizeof(r->d.name), "%s", name);
	r->d.addr = r->mem.mr_addr;
	r->d.length = r->mem.len;
	r->d.rkey = r->mr->rkey;
	r->d.access = access;
	if (path)
		snprintf(r->path, sizeof(r->path), "%s", path);
	s->nregions++;
	return 0;
}

static int post_ctrl_recv(struct srv_conn *sc, int i)
{
	return rc_post_recv(sc->c, sc->buf.recv[i], RC_CTRL_MSG_MAX, sc->mr->lkey, (uint64_t)i,
			    NULL);
}

static int prepare_conn(struct rc_conn *c, void *arg)
{
	struct srv_conn *sc = arg;
	int rc;

	sc->c = c;
	sc->mr = ibv_reg_mr(c->pd, &sc->buf, sizeof(sc->buf), IBV_ACCESS_LOCAL_WRITE);
	if (!sc->mr)
		return -errno;
	for (int i = 0; i < SRV_RECVS; i++) {
		rc = post_ctrl_recv(sc, i);
		if (rc)
			return rc;
	}
	return 0;
}

static void conn_free(struct srv_conn *sc)
{
	if (sc->c)
		rc_conn_close(sc->c);
	if (sc->mr)
		ibv_dereg_mr(sc->mr);
	free(sc);
}

static void drain_all(void *arg, const void *skip);
static void mig_reply(void *arg, const void *conn, int slot, const void *msg, size_t len);

/* Whether sc is still served: a migration's fence drains every connection
 * from inside the handling of one (drain_all), and may drop any of them. */
static bool conn_live(const struct rc_server *s, const struct srv_conn *sc)
{
	for (int i = 0; i < s->nconns; i++)
		if (s->conns[i] == sc)
			return true;
	return false;
}

static struct srv_mig_host mig_host(struct rc_server *s)
{
	return (struct srv_mig_host){ .regions = s->regions,
				      .nregions = s->nregions,
				      .pd = s->l->pd,
				      .bind_addr = s->l->addr,
				      .dev_name = s->l->dev_name,
				      .drain_all = drain_all,
				      .reply = mig_reply,
				      .arg = s };
}

static void drop_conn(struct rc_server *s, struct srv_conn *sc, bool peer_gone, bool tell,
		      const char *why)
{
	char peer[sizeof(sc->c->peer)];

	snprintf(peer, sizeof(peer), "%s", sc->c->peer);
	for (int i = 0; i < s->nconns; i++) {
		if (s->conns[i] != sc)
			continue;
		s->conns[i] = s->conns[--s->nconns];
		break;
	}
	if (why)
		s->st.dropped++;
	if (peer_gone)
		sc->c->disconnected = true;
	if (s->mig) {
		struct srv_mig_host mh = mig_host(s);

		srv_mig_conn_gone(s->mig, &mh, sc);
	}
	conn_free(sc);
	if (tell)
		emit(s, RC_EV_DISCONNECTED, peer, why);
}

/* Whether the connect request carries the admin token (compared in full,
 * in constant time, as the token). */
static bool admin_ok(const struct rc_server *s, const struct rdma_conn_param *p)
{
	const unsigned char *pd = p->private_data;
	size_t len = pd ? p->private_data_len : 0;

	return s->admin[0] && len && pd[0] && rc_token_equal(s->admin, pd, len);
}

static bool token_ok(const struct rc_server *s, const struct rdma_conn_param *p, const char **why)
{
	const unsigned char *pd = p->private_data;
	size_t len = pd ? p->private_data_len : 0;

	if (admin_ok(s, p))
		return true;
	if (!s->token[0])
		return true;
	if (len == 0 || pd[0] == 0) {
		*why = "rdmactl: a token is required";
		return false;
	}
	/* The CM pads private data with zeros up to its fixed size; the
	 * comparison takes the same time wherever the tokens differ. */
	if (!rc_token_equal(s->token, pd, len)) {
		*why = "rdmactl: invalid token";
		return false;
	}
	return true;
}

static void on_connect_request(struct rc_server *s, struct rc_cm_event *ev)
{
	struct rc_conn_opts co = { .sq_depth = SRV_RECVS + 1,
				   .rq_depth = SRV_RECVS,
				   .timeout_ms = 5000 };
	struct srv_conn *sc;
	const char *why = NULL;
	struct rc_err e;

	if (ev->other_device)
		why = "rdmactl: request arrived on another device";
	else if (s->nconns >= s->max_conns)
		why = "rdmactl: too many connections";
	else
		token_ok(s, &ev->param, &why);
	if (why) {
		rc_cm_refuse(ev, why);
		s->st.rejected++;
		emit(s, RC_EV_REJECTED, ev->peer, why + strlen("rdmactl: "));
		return;
	}
	sc = calloc(1, sizeof(*sc));
	if (!sc) {
		rc_cm_refuse(ev, "rdmactl: out of memory");
		s->st.rejected++;
		return;
	}
	co.on_qp = prepare_conn;
	co.on_qp_arg = sc;
	if (rc_cm_accept(s->l, ev, &co, &sc->c, &e)) {
		if (sc->mr)
			ibv_dereg_mr(sc->mr);
		free(sc);
		rc_cm_refuse(ev, "rdmactl: accept failed");
		s->st.rejected++;
		emit(s, RC_EV_REJECTED, ev->peer, e.msg);
		return;
	}
	sc->c->user = sc;
	sc->admin = s->admin[0] ? admin_ok(s, &ev->param) : s->o.allow_unauth_migration;
	s->conns[s->nconns++] = sc;
}

static int handle_cm(struct rc_server *s, struct rc_err *err)
{
	struct rc_cm_event ev;

	while (rc_listener_next(s->l, 0, &ev) == 0) {
		struct srv_conn *sc = ev.conn ? ev.conn->user : NULL;

		switch (ev.kind) {
		case RC_CM_REQUEST:
			on_connect_request(s, &ev);
			break;
		case RC_CM_ESTABLISHED:
			if (ev.conn) {
				s->st.accepted++;
				emit(s, RC_EV_CONNECTED, ev.conn->peer, NULL);
			}
			break;
		case RC_CM_GONE:
			if (sc)
				drop_conn(s, sc, true, ev.was_established, NULL);
			break;
		case RC_CM_DEVICE_GONE:
			return rc_err_set(err, ENODEV, "the RDMA device %s was removed",
					  s->l->dev_name);
		case RC_CM_OTHER:
			break;
		}
	}
	return 0;
}

static void handle_ctrl(struct rc_server *s, struct srv_conn *sc, struct ibv_wc *wc)
{
	int slot = (int)(wc->wr_id & RC_WRID_MASK);
	unsigned char *out;
	struct rc_ctrl_hdr h;
	int len = 0;

	if (slot >= SRV_RECVS)
		return;
	/* A reply has gone: its request's slot takes the next request. */
	if (rc_wrid_op(wc->wr_id) == RC_OP_SEND) {
		post_ctrl_recv(sc, slot);
		return;
	}
	if (rc_wrid_op(wc->wr_id) != RC_OP_RECV)
		return;
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		struct rc_server_event ev = { .kind = RC_EV_IMM,
					      .peer = sc->c->peer,
					      .imm = be32toh(wc->imm_data) };

		s->st.imms++;
		if (s->o.on_event)
			s->o.on_event(s->o.arg, &ev);
		post_ctrl_recv(sc, slot);
		return;
	}
	s->st.requests++;
	out = sc->buf.send[slot];
	if (rc_ctrl_decode_hdr(sc->buf.recv[slot], wc->byte_len, &h) == 0 &&
	    h.type == RC_CTRL_LIST_REQ) {
		struct rc_region_desc d[RC_MAX_REGIONS];

		for (int i = 0; i < s->nregions; i++)
			d[i] = s->regions[i].d;
		len = rc_ctrl_encode_list(out, RC_CTRL_MSG_MAX, h.seq, d, s->nregions);
	} else {
		struct srv_mig_host mh = mig_host(s);

		len = srv_mig_handle(&s->mig, &mh, sc, sc->admin, slot, sc->buf.recv[slot],
				     wc->byte_len, out, RC_CTRL_MSG_MAX);
		if (len == SRV_MIG_LATER)
			return; /* the slot is the request's until mig_reply */
	}
	/* With a reply out, the slot waits for its completion (above). */
	if (len > 0 &&
	    rc_post_send(sc->c, out, (uint32_t)len, sc->mr->lkey, (uint64_t)slot, NULL) == 0)
		return;
	post_ctrl_recv(sc, slot);
}

/* Take every completion: the CQ is left empty and armed. An error
 * completion (a LIST reply or a keepalive probe the peer never
 * acknowledged) drops the connection, and says why. */
static void drain_cq(struct rc_server *s, struct srv_conn *sc)
{
	struct ibv_wc wc[8];
	struct rc_err e;
	int got;

	while ((got = rc_cq_take(sc->c, wc, 8)) > 0) {
		for (int j = 0; j < got; j++) {
			if (wc[j].status != IBV_WC_SUCCESS) {
				rc_wc_error(sc->c, &wc[j], &e);
				drop_conn(s, sc, false, true, e.msg);
				return;
			}
			if (rc_wrid_op(wc[j].wr_id) == RC_OP_WRITE)
				sc->probing = false;
			else
				handle_ctrl(s, sc, &wc[j]);
			/* A fence in there drained every connection: this one
			 * may have been dropped on the way. */
			if (!conn_live(s, sc))
				return;
		}
	}
}

/*
 * --flush-every: each pass writes every writable file-backed region back to
 * its file (pwrite, then fsync at the region's end), in slices of
 * SRV_FLUSH_SLICE per step, so that a large region does not hold up the
 * keepalive and the LIST answers for the whole write. A failure is reported
 * and the pass goes on with the next region; the next pass tries again.
 * Returns whether a pass is still under way (the step then does not wait).
 */
static bool flush_step(struct rc_server *s)
{
	if (s->o.flush_every_ms <= 0)
		return false;
	if (!s->flush.on) {
		if (rc_now() < s->flush.at)
			return false;
		s->flush.on = true;
		s->flush.reg = 0;
		s->flush.off = 0;
	}
	while (s->flush.reg < s->nregions) {
		struct rc_region *r = &s->regions[s->flush.reg];
		size_t left = r->mem.len - s->flush.off,
		       n = left < SRV_FLUSH_SLICE ? left : SRV_FLUSH_SLICE;
		struct rc_err e = { 0 };

		if (r->mem.kind != RC_MEM_FILE || !r->mem.writable || !left) {
			s->flush.reg++;
			s->flush.off = 0;
			continue;
		}
		if (rc_mem_sync_range(&r->mem, s->flush.off, n, &e)) {
			struct rc_server_event ev = { .kind = RC_EV_FLUSH_FAILED,
						      .region = r->d.name,
						      .reason = e.msg };

			s->st.flush_failed++;
			if (s->o.on_event)
				s->o.on_event(s->o.arg, &ev);
			n = left; /* on to the next region */
		}
		s->flush.off += n;
		if (s->flush.off == r->mem.len) {
			s->flush.reg++;
			s->flush.off = 0;
		}
		return true;
	}
	s->flush.on = false;
	s->flush.at = rc_now() + s->o.flush_every_ms / 1000.0;
	return false;
}

/*
 * A peer host that vanishes (crash, power-off, partition) sends no
 * disconnect, and its connection would hold a slot for ever. Every
 * keepalive_ms each connection gets a zero-length RDMA WRITE, which the
 * peer's adapter acknowledges by itself (no buffer, no CPU, no rkey for no
 * bytes). From a vanished host it comes back as a retry-exceeded error
 * after the transport's retries, or not at all; either way the connection
 * is dropped (drain_cq, or here after three intervals).
 */
static void keepalive(struct rc_server *s)
{
	int every = s->o.keepalive_ms ? s->o.keepalive_ms : SRV_KEEPALIVE_MS;
	double now = rc_now();

	char why[160];

	if (s->o.keepalive_ms < 0)
		return;
	for (int i = s->nconns - 1; i >= 0; i--) { /* a drop moves the last one here */
		struct srv_conn *sc = s->conns[i];

		/* The transport's own retries may never end (an RC QP with no ack
		 * timeout waits for ever): a probe unanswered for three intervals
		 * is the answer. */
		if (sc->probing && now - sc->probe_sent > 3 * every / 1000.0) {
			snprintf(why, sizeof(why),
				 "keepalive: no answer from the peer in %d ms "
				 "(its host is gone or unreachable)",
				 3 * every);
			drop_conn(s, sc, false, true, why);
			continue;
		}
		if (!sc->c->established || sc->probing || now < sc->probe_at)
			continue;
		sc->probe_at = now + every / 1000.0;
		if (rc_post_rdma(sc->c, RC_OP_WRITE, NULL, 0, 0, 0, 0, 0, 0, true, NULL) == 0) {
			sc->probing = true;
			sc->probe_sent = now;
		}
	}
}

/* A fence's: every connection but skip, the one whose request is being
 * handled (dropping it would free what its handler still writes to). Not
 * again from inside itself (a fence in another connection's queue). */
static void drain_all(void *arg, const void *skip)
{
	struct rc_server *s = arg;
	struct srv_conn *all[SRV_MAX_CONNS];
	int n = s->nconns;

	if (s->draining)
		return;
	s->draining = true;
	/* A snapshot: draining one may drop others and reorder the table. */
	memcpy(all, s->conns, (size_t)n * sizeof(all[0]));
	for (int i = 0; i < n; i++)
		if (all[i] != skip && conn_live(s, all[i]))
			drain_cq(s, all[i]);
	s->draining = false;
}

/* A PULL or HASH the worker finished: its answer goes in its slot. */
static void mig_reply(void *arg, const void *conn, int slot, const void *msg, size_t len)
{
	struct rc_server *s = arg;
	struct srv_conn *sc = (struct srv_conn *)conn;

	if (!conn_live(s, sc) || slot < 0 || slot >= SRV_RECVS || len > RC_CTRL_MSG_MAX)
		return;
	memcpy(sc->buf.send[slot], msg, len);
	if (rc_post_send(sc->c, sc->buf.send[slot], (uint32_t)len, sc->mr->lkey, (uint64_t)slot,
			 NULL))
		post_ctrl_recv(sc, slot);
}

static void handle_cqs(struct rc_server *s, struct pollfd *pfd, int n)
{
	struct srv_conn *ready[SRV_MAX_CONNS];
	int k = 0;

	/* Collected first: draining one may drop it and reorder the table. */
	for (int i = 0; i < n && i < s->nconns; i++)
		if (pfd[i].revents & POLLIN)
			ready[k++] = s->conns[i];
	for (int i = 0; i < k; i++)
		if (conn_live(s, ready[i])) /* not dropped by an earlier one */
			drain_cq(s, ready[i]);
}

int rc_server_step(struct rc_server *s, int timeout_ms, struct rc_err *err)
{
	struct pollfd pfd[SRV_MAX_CONNS + 2];
	int n = s->nconns, r, mfd = srv_mig_fd(s->mig);

	if (flush_step(s))
		timeout_ms = 0;
	keepalive(s);
	for (int i = s->nconns - 1; i >= 0; i--) /* a drop moves the last one here */
		if (i < s->nconns /* a fence may drop several */ && !s->conns[i]->c->armed)
			drain_cq(s, s->conns[i]);
	n = s->nconns;
	for (int i = 0; i < n; i++)
		pfd[i] = (struct pollfd){ .fd = s->conns[i]->c->cch->fd, .events = POLLIN };
	pfd[n] = (struct pollfd){ .fd = s->l->ech->fd, .events = POLLIN };
	pfd[n + 1] = (struct pollfd){ .fd = mfd, .events = POLLIN };
	r = poll(pfd, (nfds_t)n + (mfd >= 0 ? 2 : 1), timeout_ms);
	if (r < 0)
		return errno == EINTR ? 0
				      : rc_err_set(err, errno, "poll failed: %s", strerror(errno));
	/* Completions first: a connection may be dropped by a CM event below. */
	handle_cqs(s, pfd, n);
	if (mfd >= 0 && (pfd[n + 1].revents & POLLIN)) {
		struct srv_mig_host mh = mig_host(s);

		srv_mig_poll(s->mig, &mh);
	}
	return handle_cm(s, err);
}

int rc_server_run(struct rc_server *s, int stop_fd, struct rc_err *err)
{
	for (;;) {
		struct pollfd p = { .fd = stop_fd, .events = POLLIN };
		int rc;

		if (poll(&p, 1, 0) > 0)
			return 0;
		rc = rc_server_step(s, 200, err);
		if (rc)
			return rc;
	}
}

int rc_server_destroy(struct rc_server *s, struct rc_err *err)
{
	struct rc_err other = { 0 };
	int rc = 0, synced = 0, r;

	if (!s)
		return 0;
	srv_mig_free(s->mig); /* its connection shares the listener's PD */
	s->mig = NULL;
	while (s->nconns)
		drop_conn(s, s->conns[s->nconns - 1], false, false, NULL);
	/* A region whose content did not reach its file is data lost: that
	 * error is the one returned, whatever else failed before or after. */
	for (int i = 0; i < s->nregions; i++) {
		struct rc_region *reg = &s->regions[i];
		struct rc_err e = { 0 };

		if (reg->mr && (r = ibv_dereg_mr(reg->mr)) && !rc) /* its error, not errno */
			rc = rc_err_set(&other, r, "cannot deregister region '%s': %s", reg->d.name,
					strerror(abs(r)));
		r = rc_mem_sync(&reg->mem, &e);
		if (r && !synced)
			synced = rc_err_set(err, -r, "region '%s': %s", reg->d.name, e.msg);
		r = rc_mem_free(&reg->mem);
		if (r && !rc)
			rc = rc_err_set(&other, -r, "cannot release region '%s': %s", reg->d.name,
					strerror(-r));
	}
	r = rc_listener_close(s->l);
	if (r && !rc)
		rc = rc_err_set(&other, -r, "cannot close the listener: %s", strerror(-r));
	free(s);
	if (synced)
		return synced;
	if (rc && err)
		*err = other;
	return rc;
}
