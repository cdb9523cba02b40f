// SPDX-License-Identifier: MIT
/*
 * The verbs transport: the seam of pipe_core.h over libibverbs and rdma_cm,
 * each call the existing verbs function beneath it (rc_dev_open,
 * rc_connect, rc_chain_post, rc_poll_any, rc_conn_event). An endpoint is a
 * struct rc_conn, a device a struct ibv_context, a memory key the MR's
 * lkey or rkey widened to 64 bits.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/conn_core.h>
#include <rdmactl/dev_core.h>
#include <rdmactl/pipe_core.h>

static int v_dev_open(const char *name, void **dev, struct rc_err *err)
{
	struct ibv_context *ctx = NULL;
	int rc = rc_dev_open(name, &ctx, err);

	*dev = ctx;
	return rc;
}

static void v_dev_close(void *dev)
{
	if (dev)
		ibv_close_device(dev);
}

static int v_mem_reg(void *ep, void *addr, size_t len, int access, void **mr, uint64_t *lkey,
		     uint64_t *rkey, struct rc_err *err)
{
	struct rc_conn *c = ep;
	struct ibv_mr *m = ibv_reg_mr(c->pd, addr, len, access);

	if (!m)
		return rc_err_set(err, errno, "cannot register %zu bytes on %s: %s", len,
				  c->dev_name, strerror(errno));
	*mr = m;
	*lkey = m->lkey;
	*rkey = m->rkey;
	return 0;
}

static int v_mem_dereg(void *mr)
{
	return mr ? -ibv_dereg_mr(mr) : 0;
}

/* rdma_cm names the peer by "host:port" (the last colon splits it). */
static int v_connect(const struct rc_tp_addr *addr, const void *pd, size_t pd_len,
		     const struct rc_conn_opts *o, void **ep, struct rc_err *err)
{
	char host[RC_TP_ADDR_MAX + 1], *colon;
	struct rc_conn_opts co = *o;
	struct rc_conn *c = NULL;
	int rc;

	if (addr->len > RC_TP_ADDR_MAX || pd_len > 56)
		return rc_err_set(err, EINVAL, "an address of %u bytes or private data of %zu",
				  addr->len, pd_len);
	memcpy(host, addr->data, addr->len);
	host[addr->len] = 0;
	colon = strrchr(host, ':');
	if (!colon)
		return rc_err_set(err, EINVAL, "the address %s names no port", host);
	*colon = 0;
	co.private_data = pd;
	co.private_len = (uint8_t)pd_len;
	rc = rc_connect(host, colon + 1, &co, &c, err);
	*ep = c;
	return rc;
}

static int v_close(void *ep)
{
	return rc_conn_close(ep);
}

/* The listener's address text is "host:port", split at the last colon. */
static int v_listen(const struct rc_tp_addr *addr, const char *dev, void **listener,
		    struct rc_err *err)
{
	char host[RC_TP_ADDR_MAX + 1], *colon;
	struct rc_listener *l = NULL;
	int rc;

	if (addr->len > RC_TP_ADDR_MAX)
		return rc_err_set(err, EINVAL, "an address of %u bytes", addr->len);
	memcpy(host, addr->data, addr->len);
	host[addr->len] = 0;
	if (!(colon = strrchr(host, ':')))
		return rc_err_set(err, EINVAL, "the address %s names no port", host);
	*colon = 0;
	rc = rc_listen(host, colon + 1, dev, &l, err);
	*listener = l;
	return rc;
}

static int v_listener_close(void *listener)
{
	return rc_listener_close(listener);
}

/* Events other than a request (an accepted connection up or gone) change
 * their connection's state as rc_cm_sort says, and are passed over. */
static int v_request(void *listener, int timeout_ms, struct rc_tp_request *req, struct rc_err *err)
{
	struct rc_cm_event *ev = malloc(sizeof(*ev));
	int rc;

	if (!ev)
		return rc_err_set(err, ENOMEM, "out of memory");
	rc = rc_listener_next(listener, timeout_ms, ev);
	if (rc || ev->kind != RC_CM_REQUEST) {
		free(ev);
		if (rc == -EAGAIN || !rc)
			return 0;
		return rc_err_set(err, -rc, "cannot read a connection event: %s", strerror(-rc));
	}
	req->peer.len = (uint32_t)snprintf((char *)req->peer.data, RC_TP_ADDR_MAX, "%s", ev->peer);
	req->pd_len = ev->param.private_data_len;
	memcpy(req->pd, ev->private_data, req->pd_len);
	req->handle = ev;
	return 1;
}

static int v_accept(void *listener, struct rc_tp_request *req, const void *pd, size_t pd_len,
		    const struct rc_conn_opts *o, void **ep, struct rc_err *err)
{
	struct rc_conn_opts co = *o;
	struct rc_conn *c = NULL;
	int rc;

	if (pd_len > RC_ACCEPT_DATA_MAX)
		return rc_err_set(err, EINVAL, "an answer of %zu bytes", pd_len);
	co.private_data = pd;
	co.private_len = (uint8_t)pd_len;
	rc = rc_cm_accept(listener, req->handle, &co, &c, err);
	*ep = c;
	if (!rc) {
		free(req->handle);
		req->handle = NULL;
	}
	return rc;
}

static void v_refuse(struct rc_tp_request *req, const char *why)
{
	rc_cm_refuse(req->handle, why);
	free(req->handle);
	req->handle = NULL;
}

static int v_post(void *ep, const struct rc_wr *wr, int n, struct rc_err *err)
{
	struct rc_chain ch;
	int done = 0;

	ch.n = 0;
	for (int i = 0; i < n; i++) {
		if (!rc_chain_add(&ch, &wr[i])) {
			int rc = rc_chain_post(ep, &ch, err);

			if (rc < 0)
				return rc;
			done += rc;
			rc_chain_add(&ch, &wr[i]);
		}
	}
	int rc = rc_chain_post(ep, &ch, err);

	return rc < 0 ? rc : done + rc;
}

static int v_poll(void *const *eps, int n, struct rc_cqe *cqe, int max, int timeout_ms, int *which,
		  struct rc_err *err)
{
	struct ibv_wc wc[64];
	int got;

	if (max > 64)
		max = 64;
	got = rc_poll_any((struct rc_conn *const *)eps, n, wc, max, timeout_ms, which, err);
	for (int i = 0; i < got; i++)
		cqe[i] = (struct rc_cqe){ .user = wc[i].wr_id & RC_WRID_MASK,
					  .op = rc_wrid_op(wc[i].wr_id),
					  .len = wc[i].byte_len,
					  .imm = be32toh(wc[i].imm_data),
					  .has_imm = !!(wc[i].wc_flags & IBV_WC_WITH_IMM) };
	return got;
}

static int v_event(void *ep, int timeout_ms, bool *gone, struct rc_err *err)
{
	struct rdma_cm_event *ev = NULL;
	int rc = rc_conn_event(ep, timeout_ms, &ev);

	*gone = false;
	if (rc == -EAGAIN)
		return 0;
	if (rc < 0)
		return rc_err_set(err, -rc, "cannot read a connection event: %s", strerror(-rc));
	*gone = ev->event == RDMA_CM_EVENT_DISCONNECTED || ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL;
	rdma_ack_cm_event(ev);
	return 1;
}

static const char *v_peer(const void *ep)
{
	return ((const struct rc_conn *)ep)->peer;
}

static uint32_t v_max_msg(const void *ep)
{
	return rc_conn_max_msg(ep);
}

static int v_sq_depth(const void *ep)
{
	return ((const struct rc_conn *)ep)->sq_depth;
}

const struct rc_transport rc_verbs_transport = {
	.name = "verbs",
	.dev_open = v_dev_open,
	.dev_close = v_dev_close,
	.mem_reg = v_mem_reg,
	.mem_dereg = v_mem_dereg,
	.connect = v_connect,
	.close = v_close,
	.listen = v_listen,
	.listener_close = v_listener_close,
	.request = v_request,
	.accept = v_accept,
	.refuse = v_refuse,
	.post = v_post,
	.poll = v_poll,
	.event = v_event,
	.peer = v_peer,
	.max_msg = v_max_msg,
	.sq_depth = v_sq_depth,
};
