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
#include <rdmactl/err_core.h>
#include <rdmactl/mem_core.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/kv_core.h>

static void on_msg(struct kv_receiver *r, struct rpeer *p, const struct kv_msg *m)
{
	struct rreq *q;

	if (p->refused)
		return; /* its ERROR is on the way out; it is closed right after */
	if (!p->hello) {
		/* Nothing before a valid HELLO counts, a heartbeat neither: a peer
		 * without the token cannot keep a connection (or a rank) alive. */
		if (m->type == KV_MSG_HELLO) {
			kvr_on_hello(r, p, m);
			return;
		}
		snprintf(p->why, sizeof(p->why), "sent %s before HELLO", kv_msg_name(m->type));
		p->dead = true;
		return;
	}
	switch (m->type) {
	case KV_MSG_HB:
		return;
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

static int handle_cm(struct kv_receiver *r, int rail, struct rc_err *err)
{
	struct rc_listener *l = r->rails[rail].l;
	struct rc_cm_event ev;

	while (rc_listener_next(l, 0, &ev) == 0) {
		struct rconn *conn = ev.conn ? ev.conn->user : NULL;

		if (ev.kind == RC_CM_REQUEST) {
			kvr_on_connect_request(r, rail, &ev);
			continue;
		}
		if (ev.kind == RC_CM_DEVICE_GONE)
			return rc_err_set(err, ENODEV, "the RDMA device %s was removed",
					  l->dev_name);
		if (ev.kind == RC_CM_GONE && conn) {
			if (!conn->p->dead)
				snprintf(conn->p->why, sizeof(conn->p->why), "%s", ev.why);
			conn->p->dead = true;
		}
	}
	return 0;
}

/* One completion of conn's QP. */
static void on_wc(struct kv_receiver *r, struct rconn *conn, const struct ibv_wc *wc)
{
	struct rpeer *p = conn->p;
	struct kv_msg m;
	struct rc_err e;

	if (wc->status != IBV_WC_SUCCESS) {
		rc_wc_error(conn->c, wc, &e);
		snprintf(p->why, sizeof(p->why), "%.200s", e.msg);
		p->dead = true;
	} else if (conn->qp == 0) {
		int k = kv_chan_wc(&conn->ch, wc, &m, r->pages_tmp, &e);

		if (k == 1)
			on_msg(r, p, &m);
		if (k < 0) {
			snprintf(p->why, sizeof(p->why), "%.200s", e.msg);
			p->dead = true;
		}
	} else if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
		   rc_post_recv(conn->c, NULL, 0, 0, 0, NULL) == 0) {
		kvr_on_imm(r, p, conn->qp, be32toh(wc->imm_data));
	} else {
		snprintf(p->why, sizeof(p->why), "unexpected completion on a data QP");
		p->dead = true;
	}
}

/* A completion of a rail's shared CQ (rc_shared_drain, 1024 a pass) to its
 * connection, found by QP number; one of a connection closed already, or of
 * a dead peer's, is dropped (a dead peer's CQ is read no more). */
static void shared_wc(void *arg, struct rc_conn *c, const struct ibv_wc *wc)
{
	struct rconn *conn = c ? c->user : NULL;

	if (conn && !conn->p->dead)
		on_wc(arg, conn, wc);
}

static void handle_cqs(struct kv_receiver *r)
{
	struct ibv_wc wc[32];

	for (int i = 0; i < r->nrails; i++)
		rc_shared_drain(r->rails[i].sh, 1024, shared_wc, r);
	for (int i = 0; i < r->nconns; i++) {
		struct rconn *conn = r->conns[i];
		struct rpeer *p = conn->p;
		int n;

		while (!conn->c->shared && !p->dead && (n = rc_cq_take(conn->c, wc, 32)) != 0) {
			for (int j = 0; n > 0 && j < n && !p->dead; j++)
				on_wc(r, conn, &wc[j]);
			if (n < 0) {
				snprintf(p->why, sizeof(p->why), "cannot poll the completion queue");
				p->dead = true;
			}
		}
		/* A refused peer goes once its ERROR is out. */
		if (p->refused && conn->qp == 0 && kv_chan_idle(&conn->ch))
			p->dead = true;
	}
}

static bool established(const struct rpeer *p)
{
	for (uint32_t k = 0; k <= p->nqps; k++)
		if (p->q[k] && !p->q[k]->c->established && !p->q[k]->c->disconnected)
			return false;
	return true;
}

/* Destroy the QPs of dead sources; only then may their pages be reused. */
static void reap(struct kv_receiver *r)
{
	for (int i = 0; i < PEERS; i++) {
		struct rpeer *p = &r->peers[i];
		struct kv_event ev = { .kind = p->hello ? KV_EV_PEER_DOWN : KV_EV_PEER_REFUSED,
				       .rank = p->rank,
				       .peer = p->peer,
				       .reason = p->why };
		char why[KV_REASON_MAX];

		if (!p->used || !p->dead)
			continue;
		/* The CM disconnects only what it reported established: a peer
		 * dropped right after it connected (its HELLO came in before the
		 * ESTABLISHED event) would not hear of it. Wait for that, bounded. */
		if (!p->close_by)
			p->close_by = rc_now() + 1.0;
		if (!established(p) && rc_now() < p->close_by)
			continue;
		for (uint32_t k = 0; k <= p->nqps; k++) {
			struct rconn *conn = p->q[k];

			if (!conn)
				continue;
			for (int j = 0; j < r->nconns; j++)
				if (r->conns[j] == conn)
					r->conns[j] = r->conns[--r->nconns];
			rc_conn_close(conn->c);
			r->rails[conn->rail].cq_used -= conn->cqe;
			kv_chan_fini(&conn->ch);
			free(conn);
		}
		if (r->by_rank[p->rank] == p)
			r->by_rank[p->rank] = NULL;
		kvr_emit(r, &ev);
		snprintf(why, sizeof(why), "source rank %u (%.64s) is gone: %.150s", p->rank,
			 p->peer, p->why);
		/* One that never passed HELLO held no rank: the requests are not its. */
		for (int k = 0; p->hello && k < KV_MAX_SLOTS; k++) {
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

	for (int i = 0; i < PEERS; i++) {
		struct rpeer *p = &r->peers[i];
		double last;

		if (!p->used || p->dead)
			continue;
		last = p->q[0] && p->q[0]->ch.last_rx > p->last_rx ? p->q[0]->ch.last_rx
								   : p->last_rx;
		if (p->refused && now > p->close_by) {
			p->dead = true; /* its ERROR did not go out in time: close anyway */
		} else if (p->refused) {
			continue;
		} else if (!p->hello && now - p->t_conn > quiet) {
			/* From the connection, not from its last message: nothing but a
			 * valid HELLO lets a peer stay. */
			snprintf(p->why, sizeof(p->why), "no HELLO within %d ms",
				 r->o->c.timeout_ms);
			p->dead = true;
		} else if (p->hello && now - last > dead) {
			snprintf(p->why, sizeof(p->why), "no heartbeat for %d ms",
				 r->o->c.hb_timeout_ms);
			p->dead = true;
		}
	}
	kvr_heartbeats(r);
	for (int k = 0; k < KV_MAX_SLOTS; k++) {
		struct rreq *q = &r->reqs[k];

		if (!q->used || now - q->last <= quiet)
			continue;
		if (!q->cancelling) {
			snprintf(why, sizeof(why),
				 "request %u: nothing from its sources for %d ms "
				 "(%u of %u layers landed)",
				 q->id, r->o->c.timeout_ms, q->layers_landed, r->g->layers);
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
	for (int i = 0; i < PEERS; i++)
		if (r->peers[i].used && !r->peers[i].dead)
			return true;
	return false;
}

/* Setup, step 1: the options against the geometry. */
static int check_opts(struct kv_receiver *r, struct rc_err *err)
{
	const struct kv_recv_opts *o = r->o;
	int rc;

	if ((rc = kv_geom_check(r->g, err)))
		return rc;
	if (o->c.token && !rc_token_valid(o->c.token))
		return rc_err_set(err, EINVAL,
				  "a token is 1 to %d printable characters without spaces",
				  RC_TOKEN_MAX);
	if (o->c.token)
		memcpy(r->token, o->c.token, strlen(o->c.token));
	if (o->c.rank >= r->g->dst_tp)
		return rc_err_param(err, "rank", EINVAL,
				    "rank %u: the decode side has ranks 0 to %u", o->c.rank,
				    r->g->dst_tp - 1);
	if (o->mem.kind != RC_MEM_HOST && o->mem.kind != RC_MEM_HUGEPAGE &&
	    o->mem.kind != RC_MEM_CUDA)
		return rc_err_set(err, EINVAL, "the pool is host, hugepage or GPU memory");
	if (o->mem.kind == RC_MEM_CUDA && o->verify)
		return rc_err_param(err, "verify", ENOTSUP,
				    "verify reads the pool with the CPU: not with GPU memory");
	if (o->nrails > RC_RAILS_MAX)
		return rc_err_set(err, EINVAL, "at most %d rails", RC_RAILS_MAX);
	if (o->pool_pages < 1)
		return rc_err_set(err, EINVAL, "the pool needs at least one page");
	if (o->land_pages > o->pool_pages)
		return rc_err_param(err, "land_pages", EINVAL,
				    "land_pages %u: at most the pool's %u pages (a landing run "
				    "is as long as its request's pages)",
				    o->land_pages, o->pool_pages);
	return 0;
}

/* Setup, step 2: the routes that feed this rank, and the bytes of the pool
 * (*len) and of the pool with its landing area (*total, 0 without one). */
static int size_pool(struct kv_receiver *r, uint64_t *len, uint64_t *total, struct rc_err *err)
{
	const struct kv_recv_opts *o = r->o;
	struct kv_route routes[KV_MAX_ROUTES];
	int n = kv_routes(r->g, routes, KV_MAX_ROUTES);
	bool land = false;

	r->contrib = kv_route_sources(routes, n, o->c.rank);
	for (int i = 0; i < n; i++) {
		if (routes[i].dst != o->c.rank)
			continue;
		r->from[routes[i].src] = routes[i];
		/* A landing area where some source may land (unpacking needs the CPU). */
		land |= kv_land_applies(r->g, &routes[i]) && o->mem.kind != RC_MEM_CUDA;
	}
	r->page_bytes = kv_page_bytes(r->g, true);
	/* layers * halves fits 32 bits; times pages and page bytes may wrap. */
	if (__builtin_mul_overflow((uint64_t)r->g->layers * kv_halves(r->g),
				   (uint64_t)o->pool_pages, len) ||
	    __builtin_mul_overflow(*len, r->page_bytes, len) || *len > SIZE_MAX)
		return rc_err_set(err, EOVERFLOW,
				  "a pool of %u pages of %llu bytes for %u layers is more memory than "
				  "the address space holds",
				  o->pool_pages, (unsigned long long)r->page_bytes, r->g->layers);
	/* The landing area: --land-pages units (the pool's pages by default) of
	 * what the routes that may land fill of a page, per layer half. */
	r->land_unit = land ? kv_land_unit(r->g, o->c.rank) : 0;
	r->land_units = o->land_pages ? o->land_pages : o->pool_pages;
	if (land && (__builtin_mul_overflow((uint64_t)r->g->layers * kv_halves(r->g) * r->land_units,
					    r->land_unit, total) ||
		     __builtin_add_overflow(*len, *total, total) || *total > SIZE_MAX))
		return rc_err_set(err, EOVERFLOW,
				  "a pool of %llu bytes and its landing area: more "
				  "memory than the address space holds",
				  (unsigned long long)*len);
	r->land_off = land ? *len : 0;
	return 0;
}

/* Setup, step 3: the free list of pages, shuffled with --scatter, and the
 * lists beside it. */
static int free_list(struct kv_receiver *r, struct rc_err *err)
{
	const struct kv_recv_opts *o = r->o;
	uint64_t x = o->scatter_seed ? o->scatter_seed : 1;

	r->freel = malloc(o->pool_pages * sizeof(uint32_t));
	r->dirtyl = malloc(o->pool_pages * sizeof(uint32_t));
	r->land_used = calloc(r->land_units, 1);
	if (!r->freel || !r->dirtyl || !r->land_used)
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
	return 0;
}

/*
 * One CQ and completion channel per rail for the source ranks' connections
 * on it, as large as the device allows (at most 65536 entries): each
 * connection takes room for its send and receive queues there; one that
 * finds none left, or a device without the room, gets a CQ of its own.
 */
static void shared_cq(struct kv_rrail *rl)
{
	struct ibv_device_attr da;
	int cqe;

	if (ibv_query_device(rl->l->verbs, &da))
		return;
	cqe = da.max_cqe < 65536 ? da.max_cqe : 65536;
	if (rc_shared_create(rl->l->pd, cqe, 0, &rl->sh, NULL))
		rl->sh = NULL;
}

/* Setup, step 4: rail i's listener, the pool registered on its PD (len:
 * the pool's bytes, for the message) and its CQ; its line of the summary. */
static int listen_rail(struct kv_receiver *r, int i, uint64_t len, struct rc_err *err)
{
	const struct kv_recv_opts *o = r->o;
	struct kv_rrail *rl = &r->rails[i];
	struct kv_rail_sum *s = &r->sum->rails[i];
	const char *addr = i ? o->rail_addr[i] : o->addr, *port = i ? o->rail_port[i] : o->port;
	int rc = rc_listen(addr, port, i ? o->rail_dev[i] : o->c.dev_name, &rl->l, err);

	if (rc)
		return r->nrails > 1 ? rc_err_wrap(err, -rc, "rail %d (%s)", i + 1, addr) : rc;
	if ((rc = rc_mem_register(&r->pool, rl->l->pd,
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &rl->mr, err)))
		return rc_err_wrap(err, -rc, "cannot register a pool of %llu bytes on %s",
				   (unsigned long long)len, rl->l->dev_name);
	shared_cq(rl);
	snprintf(s->dev, sizeof(s->dev), "%s", rl->l->dev_name);
	snprintf(s->addr, sizeof(s->addr), "%s", rl->l->addr);
	s->port = rl->l->port;
	return 0;
}

static int setup(struct kv_receiver *r, struct rc_err *err)
{
	const struct kv_recv_opts *o = r->o;
	uint64_t len, total = 0;
	struct rc_mem_spec spec;
	int rc;

	if ((rc = check_opts(r, err)) || (rc = size_pool(r, &len, &total, err)))
		return rc;
	/* The pool first: a size the machine cannot hold fails here, at once. */
	spec = o->mem;
	spec.len = (size_t)(total ? total : len);
	spec.path = NULL;
	if ((rc = rc_mem_alloc_spec(&r->pool, &spec, true, err)) || (rc = free_list(r, err)))
		return rc;
	r->nrails = o->nrails > 1 ? o->nrails : 1;
	r->sum->nrails = o->nrails > 1 ? (uint32_t)o->nrails : 0;
	for (int i = 0; i < r->nrails; i++)
		if ((rc = listen_rail(r, i, len, err)))
			return rc;
	return 0;
}

static void teardown(struct kv_receiver *r)
{
	for (int i = 0; i < PEERS; i++)
		r->peers[i].close_by = -1; /* now, established or not */
	for (int i = 0; i < PEERS; i++)
		if (r->peers[i].used && !r->peers[i].dead) {
			snprintf(r->peers[i].why, sizeof(r->peers[i].why), "decode rank stopped");
			r->peers[i].dead = true;
		}
	reap(r);
	for (int k = 0; k < KV_MAX_SLOTS; k++)
		if (r->reqs[k].used)
			kvr_req_release(r, &r->reqs[k]);
	for (int i = 0; i < RC_RAILS_MAX; i++) {
		struct kv_rrail *rl = &r->rails[i];

		rc_shared_destroy(rl->sh); /* after every connection on it */
		if (rl->mr)
			ibv_dereg_mr(rl->mr);
		rc_listener_close(rl->l);
	}
	rc_mem_free(&r->pool);
	free(r->freel);
	free(r->dirtyl);
	free(r->land_used);
}

/* The READY event: one per rail it listens on. */
static void announce(struct kv_receiver *r)
{
	for (int i = 0; i < r->nrails; i++) {
		const struct rc_listener *l = r->rails[i].l;
		struct kv_event ev = { .kind = KV_EV_READY,
				       .rank = r->o->c.rank,
				       .peer = l->addr,
				       .port = l->port,
				       .dev = l->dev_name,
				       .rail = i,
				       .nrails = r->nrails,
				       .mem = &r->pool,
				       .pool_bytes = r->land_off ? r->land_off : r->pool.len,
				       .land_bytes = r->land_off ? r->pool.len - r->land_off : 0 };

		kvr_emit(r, &ev);
	}
}

/* What the loop waits on: the stop fd, each rail's CM channel and shared
 * CQ, the CQs of connections that have their own. How long: 0 when a
 * shared CQ was left with completions by a bounded pass. */
static int poll_fds(struct kv_receiver *r, struct pollfd *pfd, int *wait)
{
	int n = 0;

	if (r->o->c.stop_fd >= 0)
		pfd[n++] = (struct pollfd){ .fd = r->o->c.stop_fd, .events = POLLIN };
	for (int i = 0; i < r->nrails; i++) {
		struct kv_rrail *rl = &r->rails[i];

		pfd[n++] = (struct pollfd){ .fd = rl->l->ech->fd, .events = POLLIN };
		if (rl->sh)
			pfd[n++] = (struct pollfd){ .fd = rl->sh->cch->fd, .events = POLLIN };
		if (rl->sh && !rl->sh->armed)
			*wait = 0;
	}
	for (int i = 0; i < r->nconns; i++)
		if (!r->conns[i]->c->shared &&
		    !r->conns[i]->p->dead) /* its CQ is not read any more */
			pfd[n++] =
				(struct pollfd){ .fd = r->conns[i]->c->cch->fd, .events = POLLIN };
	return n;
}

int kv_recv_run(const struct kv_recv_opts *o, struct kv_summary *sum, struct rc_err *err)
{
	struct kv_receiver *r = calloc(1, sizeof(*r));
	struct pollfd pfd[MAX_CONNS + 2 * RC_RAILS_MAX + 1];
	bool busy = false;
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
	if (!rc)
		announce(r);
	r->first = rc_now();
	while (!rc && (!o->c.requests || r->finished < o->c.requests || sources_connected(r))) {
		int n, wait = busy ? 0 : o->c.hb_ms < 100 ? o->c.hb_ms : 100;

		/* Finished: wait (bounded) for the sources to disconnect. */
		if (o->c.requests && r->finished >= o->c.requests && rc_now() > r->last_finish + 2)
			break;
		n = poll_fds(r, pfd, &wait);
		if (poll(pfd, (nfds_t)n, wait) < 0 && errno != EINTR) {
			rc = rc_err_set(err, errno, "poll failed: %s", strerror(errno));
			break;
		}
		if (o->c.stop_fd >= 0 && pfd[0].revents)
			break;
		for (int i = 0; !rc && i < r->nrails; i++)
			rc = handle_cm(r, i, err);
		if (rc)
			break;
		handle_cqs(r);
		timers(r);
		reap(r);
		busy = kvr_unpack_step(r);
		busy = kvr_verify_step(r) || busy;
	}
	teardown(r);
	free(r);
	return rc;
}
