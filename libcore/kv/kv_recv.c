// SPDX-License-Identifier: MIT
/*
 * kvxfer serve: one decode (destination) rank. It owns a page pool,
 * accepts the QPs of the source ranks that feed it, hands out pages per
 * request and learns that a layer landed by counting WRITE_WITH_IMM
 * notifications: one per data QP of each contributing source rank. Pages of
 * a cancelled or failed request go back to the free list only once every
 * source that had their addresses confirmed it stopped (or its QPs are
 * destroyed), so a late write can never land in a reused page.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_recv.h"

static void on_msg(struct kv_receiver *r, struct rpeer *p, const struct kv_msg *m)
{
	struct rreq *q;

	if (m->type == KV_MSG_HB)
		return;
	if (m->type == KV_MSG_HELLO && !p->hello) {
		kvr_on_hello(r, p, m);
		return;
	}
	if (!p->hello) {
		snprintf(p->why, sizeof(p->why), "sent %s before HELLO", kv_msg_name(m->type));
		p->dead = true;
		return;
	}
	switch (m->type) {
	case KV_MSG_REQ:
		kvr_on_req(r, p, m);
		return;
	case KV_MSG_CANCEL:
		/* The sender stopped: nothing of it is in flight for this request. */
		q = kvr_req_find(r, m->req);
		if (!q)
			return;
		q->quiesced |= 1ULL << p->rank;
		q->last = rc_now();
		kvr_cancel_req(r, q, m->u.cancel.code ? KV_EV_FAILED : KV_EV_CANCELLED,
			   m->u.cancel.code, m->u.cancel.text);
		kvr_maybe_finish(r, q);
		return;
	default:
		snprintf(p->why, sizeof(p->why), "unexpected %s message", kv_msg_name(m->type));
		p->dead = true;
	}
}

static int prep_ctrl(struct rc_conn *c, void *arg)
{
	struct rconn *conn = arg;

	conn->c = c;
	return kv_chan_init(&conn->ch, c, NULL);
}

static int prep_data(struct rc_conn *c, void *arg)
{
	int rc = 0;

	((struct rconn *)arg)->c = c;
	for (int i = 0; !rc && i < DATA_RECVS; i++)
		rc = rc_post_recv(c, NULL, 0, 0, 0, NULL);
	return rc;
}

static void on_connect_request(struct kv_receiver *r, struct rc_cm_event *ev)
{
	struct rc_conn_opts co = { .timeout_ms = r->o->c.timeout_ms };
	struct kv_hello_pd pd;
	struct rpeer *p = NULL;
	struct rconn *conn = NULL;
	const char *why = NULL;
	struct rc_err e;
	int bad = kv_pd_decode(ev->param.private_data, ev->param.private_data_len, &pd);

	if (bad)
		why = "rdmactl: not a kvxfer source (no rank in the connect request)";
	else if (pd.rank >= r->g->src_tp || !(r->contrib >> pd.rank & 1))
		why = "rdmactl: that source rank does not feed this decode rank";
	else if (r->nconns >= MAX_CONNS)
		why = "rdmactl: too many connections";
	for (int i = 0; !why && i < KV_MAX_PEERS; i++) {
		struct rpeer *c = &r->peers[i];

		if (c->used && !c->dead && c->rank == pd.rank && c->session == pd.session)
			p = c;
	}
	if (!why && !p && r->by_rank[pd.rank] && !r->by_rank[pd.rank]->dead)
		why = "rdmactl: that source rank is connected already";
	for (int i = 0; !why && !p && i < KV_MAX_PEERS; i++) {
		if (r->peers[i].used)
			continue;
		p = &r->peers[i];
		*p = (struct rpeer){ .used = true, .rank = pd.rank, .nqps = pd.nqps,
				     .session = pd.session, .last_rx = rc_now() };
		p->last_hb = p->last_rx;
		snprintf(p->peer, sizeof(p->peer), "%s", ev->peer);
		r->by_rank[pd.rank] = p;
	}
	if (!why && !p)
		why = "rdmactl: too many source ranks";
	if (!why && (p->nqps != pd.nqps || p->q[pd.qp]))
		why = "rdmactl: a QP of that source rank is connected already";
	if (!why && !(conn = calloc(1, sizeof(*conn))))
		why = "rdmactl: out of memory";
	if (!why) {
		conn->p = p;
		conn->qp = pd.qp;
		co.sq_depth = pd.qp ? 2 : KV_CHAN_SENDS + 2;
		co.rq_depth = pd.qp ? DATA_RECVS : KV_CHAN_RECVS;
		co.on_qp = pd.qp ? prep_data : prep_ctrl;
		co.on_qp_arg = conn;
		if (rc_cm_accept(r->l, ev, &co, &conn->c, &e)) {
			kv_chan_fini(&conn->ch);
			why = "rdmactl: accept failed";
		}
	}
	if (why) {
		free(conn);
		rc_cm_refuse(ev, why);
		return;
	}
	conn->c->user = conn;
	p->q[pd.qp] = conn;
	r->conns[r->nconns++] = conn;
}

static int handle_cm(struct kv_receiver *r, struct rc_err *err)
{
	struct rc_cm_event ev;

	while (rc_listener_next(r->l, 0, &ev) == 0) {
		struct rconn *conn = ev.conn ? ev.conn->user : NULL;

		if (ev.kind == RC_CM_REQUEST) {
			on_connect_request(r, &ev);
			continue;
		}
		if (ev.kind == RC_CM_DEVICE_GONE)
			return rc_err_set(err, ENODEV, "the RDMA device %s was removed", r->l->dev_name);
		if (ev.kind == RC_CM_GONE && conn) {
			if (!conn->p->dead)
				snprintf(conn->p->why, sizeof(conn->p->why), "%s (%s)",
					 ev.type == RDMA_CM_EVENT_DISCONNECTED ? "disconnected"
									       : "connection failed",
					 rdma_event_str(ev.type));
			conn->p->dead = true;
		}
	}
	return 0;
}

static void handle_cqs(struct kv_receiver *r)
{
	struct ibv_wc wc[32];
	struct kv_msg m;
	struct rc_err e;

	for (int i = 0; i < r->nconns; i++) {
		struct rconn *conn = r->conns[i];
		struct rpeer *p = conn->p;
		int n;

		while (!p->dead && (n = rc_cq_take(conn->c, wc, 32)) != 0) {
			for (int j = 0; n > 0 && j < n && !p->dead; j++) {
				if (wc[j].status != IBV_WC_SUCCESS) {
					rc_wc_error(conn->c, &wc[j], &e);
					snprintf(p->why, sizeof(p->why), "%.200s", e.msg);
					p->dead = true;
				} else if (conn->qp == 0) {
					int k = kv_chan_wc(&conn->ch, &wc[j], &m, r->pages_tmp, &e);

					if (k == 1)
						on_msg(r, p, &m);
					if (k < 0) {
						snprintf(p->why, sizeof(p->why), "%.200s", e.msg);
						p->dead = true;
					}
				} else if (wc[j].opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
					   rc_post_recv(conn->c, NULL, 0, 0, 0, NULL) == 0) {
					kvr_on_imm(r, p, be32toh(wc[j].imm_data));
				} else {
					snprintf(p->why, sizeof(p->why), "unexpected completion on a data QP");
					p->dead = true;
				}
			}
			if (n < 0) {
				snprintf(p->why, sizeof(p->why), "cannot poll the completion queue");
				p->dead = true;
			}
		}
	}
}

/* Destroy the QPs of dead sources; only then may their pages be reused. */
static void reap(struct kv_receiver *r)
{
	for (int i = 0; i < KV_MAX_PEERS; i++) {
		struct rpeer *p = &r->peers[i];
		struct kv_event ev = { .kind = KV_EV_PEER_DOWN, .rank = p->rank, .peer = p->peer,
				       .reason = p->why };
		char why[KV_REASON_MAX];

		if (!p->used || !p->dead)
			continue;
		for (uint32_t k = 0; k <= p->nqps; k++) {
			struct rconn *conn = p->q[k];

			if (!conn)
				continue;
			for (int j = 0; j < r->nconns; j++)
				if (r->conns[j] == conn)
					r->conns[j] = r->conns[--r->nconns];
			rc_conn_close(conn->c);
			kv_chan_fini(&conn->ch);
			free(conn);
		}
		if (r->by_rank[p->rank] == p)
			r->by_rank[p->rank] = NULL;
		kvr_emit(r, &ev);
		snprintf(why, sizeof(why), "source rank %u (%.64s) is gone: %.150s", p->rank, p->peer, p->why);
		for (int k = 0; k < KV_MAX_SLOTS; k++) {
			struct rreq *q = &r->reqs[k];

			if (!q->used || !(q->asked >> p->rank & 1))
				continue;
			q->quiesced |= 1ULL << p->rank;
			kvr_cancel_req(r, q, KV_EV_FAILED, ECONNRESET, why);
			kvr_maybe_finish(r, q);
		}
		memset(p, 0, sizeof(*p));
	}
}

static void timers(struct kv_receiver *r)
{
	double now = rc_now(), dead = r->o->c.hb_timeout_ms / 1000.0;
	double quiet = r->o->c.timeout_ms / 1000.0;
	char why[KV_REASON_MAX];

	for (int i = 0; i < KV_MAX_PEERS; i++) {
		struct rpeer *p = &r->peers[i];
		double last;

		if (!p->used || p->dead)
			continue;
		last = p->q[0] && p->q[0]->ch.last_rx > p->last_rx ? p->q[0]->ch.last_rx : p->last_rx;
		if (!p->hello && now - last > quiet) {
			snprintf(p->why, sizeof(p->why), "no HELLO within %d ms", r->o->c.timeout_ms);
			p->dead = true;
		} else if (p->hello && now - last > dead) {
			snprintf(p->why, sizeof(p->why), "no heartbeat for %d ms", r->o->c.hb_timeout_ms);
			p->dead = true;
		}
	}
	kvr_heartbeats(r);
	for (int k = 0; k < KV_MAX_SLOTS; k++) {
		struct rreq *q = &r->reqs[k];

		if (!q->used || now - q->last <= quiet)
			continue;
		if (!q->cancelling) {
			snprintf(why, sizeof(why), "request %u: nothing from its sources for %d ms "
				 "(%u of %u layers landed)", q->id, r->o->c.timeout_ms, q->layers_landed,
				 r->g->layers);
			q->last = now;
			kvr_cancel_req(r, q, KV_EV_FAILED, ETIMEDOUT, why);
			continue;
		}
		for (uint32_t s = 0; s < r->g->src_tp; s++) {
			if (!((q->alloced & ~q->quiesced) >> s & 1) || !r->by_rank[s])
				continue;
			snprintf(r->by_rank[s]->why, sizeof(r->by_rank[s]->why),
				 "did not confirm the end of request %u within %d ms", q->id,
				 r->o->c.timeout_ms);
			r->by_rank[s]->dead = true;
		}
	}
}

/* Sources still connected: when done, let them leave first, so that they
 * read their last DONE before they see this rank go. */
static bool sources_connected(struct kv_receiver *r)
{
	for (int i = 0; i < KV_MAX_PEERS; i++)
		if (r->peers[i].used && !r->peers[i].dead)
			return true;
	return false;
}

static int setup(struct kv_receiver *r, struct rc_err *err)
{
	const struct kv_recv_opts *o = r->o;
	struct kv_route routes[KV_MAX_ROUTES];
	uint64_t len, x = o->scatter_seed ? o->scatter_seed : 1;
	int n, rc;

	if ((rc = kv_geom_check(r->g, err)))
		return rc;
	if (o->c.rank >= r->g->dst_tp)
		return rc_err_set(err, EINVAL, "--rank %u: the decode side has ranks 0 to %u",
				  o->c.rank, r->g->dst_tp - 1);
	if (o->pool_pages < 1)
		return rc_err_set(err, EINVAL, "the pool needs at least one page");
	n = kv_routes(r->g, routes, KV_MAX_ROUTES);
	r->contrib = kv_route_sources(routes, n, o->c.rank);
	r->page_bytes = kv_page_bytes(r->g, true);
	/* layers * halves fits 32 bits; times pages and page bytes may wrap. */
	if (__builtin_mul_overflow((uint64_t)r->g->layers * kv_halves(r->g), (uint64_t)o->pool_pages,
				   &len) ||
	    __builtin_mul_overflow(len, r->page_bytes, &len) || len > SIZE_MAX)
		return rc_err_set(err, EOVERFLOW,
				  "a pool of %u pages of %llu bytes for %u layers is more memory than "
				  "the address space holds", o->pool_pages,
				  (unsigned long long)r->page_bytes, r->g->layers);
	/* The pool first: a size the machine cannot hold fails here, at once. */
	if ((rc = rc_mem_alloc(&r->pool, RC_MEM_HOST, (size_t)len, NULL, true, err)))
		return rc;
	r->freel = malloc(o->pool_pages * sizeof(uint32_t));
	if (!r->freel)
		return rc_err_set(err, ENOMEM, "out of memory");
	for (uint32_t i = 0; i < o->pool_pages; i++)
		r->freel[i] = i;
	for (uint32_t i = o->pool_pages - 1; o->scatter && i > 0; i--) {
		uint32_t j, t;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = (uint32_t)(x % (i + 1));
		t = r->freel[i];
		r->freel[i] = r->freel[j];
		r->freel[j] = t;
	}
	r->nfree = o->pool_pages;
	if ((rc = rc_listen(o->addr, o->port, o->c.dev_name, &r->l, err)))
		return rc;
	r->mr = ibv_reg_mr(r->l->pd, r->pool.buf, (size_t)len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!r->mr)
		return rc_err_set(err, errno, "cannot register a pool of %llu bytes on %s: %s",
				  (unsigned long long)len, r->l->dev_name, strerror(errno));
	return 0;
}

static void teardown(struct kv_receiver *r)
{
	for (int i = 0; i < KV_MAX_PEERS; i++)
		if (r->peers[i].used && !r->peers[i].dead) {
			snprintf(r->peers[i].why, sizeof(r->peers[i].why), "decode rank stopped");
			r->peers[i].dead = true;
		}
	reap(r);
	for (int k = 0; k < KV_MAX_SLOTS; k++)
		if (r->reqs[k].used)
			kvr_req_release(r, &r->reqs[k]);
	if (r->mr)
		ibv_dereg_mr(r->mr);
	rc_listener_close(r->l);
	rc_mem_free(&r->pool);
	free(r->freel);
}

int kv_recv_run(const struct kv_recv_opts *o, struct kv_summary *sum, struct rc_err *err)
{
	struct kv_receiver *r = calloc(1, sizeof(*r));
	struct pollfd pfd[MAX_CONNS + 2];
	int rc;

	memset(sum, 0, sizeof(*sum));
	if (!r)
		return rc_err_set(err, ENOMEM, "out of memory");
	r->o = o;
	r->g = &o->c.g;
	r->sum = sum;
	r->pool.fd = -1;
	r->pool.dmabuf_fd = -1;
	rc = setup(r, err);
	if (!rc) {
		struct kv_event ev = { .kind = KV_EV_READY, .rank = o->c.rank, .peer = r->l->addr,
				       .port = r->l->port, .dev = r->l->dev_name };

		kvr_emit(r, &ev);
	}
	r->first = rc_now();
	while (!rc && (!o->c.requests || r->finished < o->c.requests || sources_connected(r))) {
		int n = 0, wait = o->c.hb_ms < 100 ? o->c.hb_ms : 100;

		/* Finished: wait (bounded) for the sources to disconnect. */
		if (o->c.requests && r->finished >= o->c.requests && rc_now() > r->last_finish + 2)
			break;

		if (o->c.stop_fd >= 0)
			pfd[n++] = (struct pollfd){ .fd = o->c.stop_fd, .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = r->l->ech->fd, .events = POLLIN };
		for (int i = 0; i < r->nconns; i++)
			pfd[n++] = (struct pollfd){ .fd = r->conns[i]->c->cch->fd, .events = POLLIN };
		if (poll(pfd, (nfds_t)n, wait) < 0 && errno != EINTR) {
			rc = rc_err_set(err, errno, "poll failed: %s", strerror(errno));
			break;
		}
		if (o->c.stop_fd >= 0 && pfd[0].revents)
			break;
		if ((rc = handle_cm(r, err)))
			break;
		handle_cqs(r);
		timers(r);
		reap(r);
	}
	teardown(r);
	free(r);
	return rc;
}
