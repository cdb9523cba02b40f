// SPDX-License-Identifier: MIT
/*
 * kvxfer send: one prefill (source) rank. It connects a control QP and
 * --qps data QPs to each decode rank it feeds, shows them its geometry
 * (HELLO; a decode rank answers with its pool, or refuses), then runs
 * requests: --inflight at once, their layers "computed" one after the
 * other and posted as each becomes ready (kv_send_req.c). Heartbeats go
 * both ways; a decode rank that falls silent, disconnects or fails a write
 * fails every request in flight, and no new one starts.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kv_send.h"
#include <rdmactl/parse_core.h>
#include <rdmactl/mem_core.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/kv_core.h>

static int connect_dst(struct kv_sender *s, struct sdst *d, struct rc_err *err)
{
	const struct kv_send_opts *o = s->o;
	struct kv_hello_pd pd = { .rank = o->c.rank, .nqps = o->nqps, .session = s->session };
	unsigned char pdb[KV_PD_LEN];
	struct rc_conn_opts co = { .sq_depth = KV_CHAN_SENDS + 2,
				   .rq_depth = KV_CHAN_RECVS,
				   .timeout_ms = o->c.timeout_ms,
				   .private_data = pdb,
				   .private_len = KV_PD_LEN,
				   .bind_addr = o->bind_addr,
				   .dev_name = o->c.dev_name };
	struct rc_err e;
	int rc;

	memcpy(pd.secret, s->secret, sizeof(pd.secret));
	kv_pd_prove(&pd, o->c.token);
	kv_pd_encode(&pd, pdb, sizeof(pdb));
	if ((rc = rc_connect(d->t->host, d->t->port, &co, &d->ctrl, &e)))
		return rc_err_set(err, -rc, "decode rank at %s: %.400s", d->name, e.msg);
	return kv_chan_init(&d->ch, d->ctrl, err);
}

/*
 * One CQ and completion channel for the data QPs of every decode rank (room
 * for each one's send queue and its one receive), made with the first
 * decode rank's, on its device (a source rank sends from one). Without
 * the room, or when it cannot be made, each data QP keeps its own.
 */
static void shared_cq(struct kv_sender *s, struct sdst *d)
{
	struct ibv_device_attr da;
	long cqe = (long)s->nd * s->o->nqps * (SQ_DEPTH + 5);

	if (s->sh || ibv_query_device(d->ctrl->verbs, &da) || cqe > da.max_cqe)
		return;
	if (rc_shared_create(d->ctrl->pd, (int)cqe, 0, &s->sh, NULL))
		s->sh = NULL;
}

/* The data QPs: the decode rank takes them only after WELCOME. */
static int connect_data(struct kv_sender *s, struct sdst *d, struct rc_err *err)
{
	const struct kv_send_opts *o = s->o;
	struct kv_hello_pd pd = { .rank = o->c.rank, .nqps = o->nqps, .session = s->session };
	unsigned char pdb[KV_PD_LEN];
	struct rc_conn_opts co = { .timeout_ms = o->c.timeout_ms,
				   .private_data = pdb,
				   .private_len = KV_PD_LEN,
				   .bind_addr = o->bind_addr,
				   .dev_name = o->c.dev_name };
	struct rc_err e;
	int rc;

	co.sq_depth = SQ_DEPTH + 4;
	co.rq_depth = 1;
	co.send_sge = (int)s->gather;
	co.pd = d->ctrl->pd;
	shared_cq(s, d);
	co.shared = s->sh;
	for (uint32_t k = 0; k < o->nqps; k++) {
		pd.qp = k + 1;
		memcpy(pd.secret, s->secret, sizeof(pd.secret));
		kv_pd_prove(&pd, o->c.token);
		kv_pd_encode(&pd, pdb, sizeof(pdb));
		if ((rc = rc_connect(d->t->host, d->t->port, &co, &d->qp[k].c, &e)))
			return rc_err_set(err, -rc, "decode rank at %s, data QP %u: %.400s",
					  d->name, k + 1, e.msg);
		d->qp[k].c->user = &d->qp[k];
		d->qp[k].d = d;
		d->qp[k].k = k;
		d->qp[k].sq = (struct rc_sq){ .depth = SQ_DEPTH, .signal_every = SIGNAL_EVERY };
		if ((uint32_t)d->qp[k].c->send_sge < s->gather)
			s->gather = (uint32_t)d->qp[k].c->send_sge;
	}
	return 0;
}

/* HELLO, and wait for WELCOME (or ERROR), bounded. */
static int handshake(struct kv_sender *s, struct sdst *d, struct rc_err *err)
{
	struct kv_msg m = { .type = KV_MSG_HELLO };
	double deadline = rc_now() + s->o->c.timeout_ms / 1000.0;
	struct ibv_wc wc[4];
	int rc;

	m.u.hello.rank = s->o->c.rank;
	m.u.hello.nqps = s->o->nqps;
	m.u.hello.session = s->session;
	m.u.hello.g = *s->g;
	m.u.hello.land = s->o->land;
	/* The token was proven in the connect request: it does not travel. */
	if ((rc = kv_chan_send(&d->ch, &m, err)))
		return rc;
	while (!d->welcomed) {
		int left = (int)((deadline - rc_now()) * 1000), n;

		if (left <= 0)
			return rc_err_set(err, ETIMEDOUT,
					  "decode rank at %s did not answer HELLO within %d ms",
					  d->name, s->o->c.timeout_ms);
		n = rc_poll(d->ctrl, wc, 4, left, err);
		if (n == -ETIMEDOUT)
			continue;
		if (n < 0)
			return n;
		for (int i = 0; i < n; i++) {
			rc = kv_chan_wc(&d->ch, &wc[i], &m, s->pages_tmp, err);
			if (rc < 0)
				return rc;
			/* A heartbeat follows WELCOME by hb_ms: a slow poll reaps both. */
			if (rc == 0 || (m.type == KV_MSG_HB && d->welcomed))
				continue;
			/* The decode rank's heartbeats start with WELCOME: one may come in
			 * the same batch, right behind it. */
			if (m.type == KV_MSG_HB && d->welcomed)
				continue;
			if (m.type == KV_MSG_ERROR)
				return rc_err_set(err, m.u.cancel.code ? m.u.cancel.code : EINVAL,
						  "decode rank at %s refused this source rank: %s",
						  d->name, m.u.cancel.text);
			if (m.type != KV_MSG_WELCOME)
				return rc_err_set(err, EPROTO,
						  "decode rank at %s answered HELLO with %s",
						  d->name, kv_msg_name(m.type));
			d->rank = m.u.welcome.rank;
			d->pool_pages = m.u.welcome.pool_pages;
			d->rkey = m.u.welcome.rkey;
			d->base = m.u.welcome.base;
			d->page_bytes = m.u.welcome.page_bytes;
			d->land_base = m.u.welcome.land;
			d->land_units = m.u.welcome.land_units;
			d->welcomed = true;
		}
	}
	if (d->rank >= s->g->dst_tp || d->page_bytes != kv_page_bytes(s->g, true))
		return rc_err_set(err, EPROTO, "decode rank at %s says rank %u, pages of %llu bytes",
				  d->name, d->rank, (unsigned long long)d->page_bytes);
	return 0;
}

/* Setup, step 1: the options against the geometry, and the pages of a
 * request on either side. */
static int check_opts(struct kv_sender *s, struct rc_err *err)
{
	const struct kv_send_opts *o = s->o;
	int rc;

	if ((rc = kv_geom_check(s->g, err)))
		return rc;
	if (o->mem.kind != RC_MEM_HOST && o->mem.kind != RC_MEM_HUGEPAGE &&
	    o->mem.kind != RC_MEM_CUDA)
		return rc_err_set(err, EINVAL,
				  "the source pages are host, hugepage or GPU memory, not %s",
				  rc_mem_kind_name(o->mem.kind));
	if (o->c.rank >= s->g->src_tp)
		return rc_err_set(err, EINVAL, "--rank %u: the prefill side has ranks 0 to %u",
				  o->c.rank, s->g->src_tp - 1);
	if (o->ntargets < 1 || o->ntargets > KV_MAX_PEERS || o->nqps < 1 || o->nqps > KV_MAX_QPS ||
	    o->inflight < 1 || o->inflight > KV_MAX_SLOTS || o->tokens < 1)
		return rc_err_set(err, EINVAL, "invalid transfer parameters");
	s->src_pages = kv_pages_for(s->g, false, o->tokens);
	s->dst_pages = kv_pages_for(s->g, true, o->tokens);
	if (s->dst_pages > KV_MAX_REQ_PAGES)
		return rc_err_set(err, EINVAL,
				  "a request of %u tokens takes %u destination pages; at most %d",
				  o->tokens, s->dst_pages, KV_MAX_REQ_PAGES);
	s->src_page_bytes = kv_page_bytes(s->g, false);
	s->gather = kv_gather_cap(o->max_sge);
	s->copy_ok = s->gather < 2;
	return 0;
}

/* Setup, step 2: the source pool (a slot per request in flight, then the
 * staging ring), the requests and the decode ranks. */
static int alloc_pool(struct kv_sender *s, struct rc_err *err)
{
	const struct kv_send_opts *o = s->o;
	struct rc_mem_spec spec;
	uint64_t pool, stage;
	int rc;

	if ((rc = kvs_stage_size(s, err)))
		return rc;
	/* layers * halves * pages fits 64 bits (at most 2^34); the byte counts may not. */
	if (__builtin_mul_overflow((uint64_t)s->g->layers * kv_halves(s->g) * s->src_pages,
				   s->src_page_bytes, &s->slot_bytes) ||
	    __builtin_mul_overflow(s->slot_bytes, (uint64_t)o->inflight, &pool) ||
	    __builtin_mul_overflow(s->stage_slot_bytes, (uint64_t)o->inflight, &stage) ||
	    __builtin_add_overflow(pool, stage, &pool) || pool > SIZE_MAX - 4095)
		return rc_err_set(err, EOVERFLOW,
				  "%u requests of %u tokens in flight, %u layers of %llu-byte pages: "
				  "more source memory than the address space holds",
				  o->inflight, o->tokens, s->g->layers,
				  (unsigned long long)s->src_page_bytes);
	s->stage_base = s->slot_bytes * o->inflight;
	s->pool_len = ((size_t)pool + 4095) & ~(size_t)4095;
	spec = o->mem;
	spec.len = s->pool_len;
	spec.path = NULL;
	if ((rc = rc_mem_alloc_spec(&s->mem, &spec, true, err)))
		return rc;
	s->pool = s->mem.buf;
	/* GPU memory: the CPU fills and packs a host copy, copied over in parts. */
	if (s->mem.kind == RC_MEM_CUDA) {
		if (!(s->pool = rc_mem_host_copy(s->pool_len, "source pages", err)))
			return -err->code;
	}
	s->reqs = calloc(o->inflight, sizeof(*s->reqs));
	s->d = calloc((size_t)o->ntargets, sizeof(*s->d));
	if (!s->reqs || !s->d)
		return rc_err_set(err, ENOMEM, "out of memory");
	return 0;
}

/* Setup, step 3, for each decode rank: the control QP, the pool registered
 * on its PD, HELLO and WELCOME, then the data QPs. */
static int open_dst(struct kv_sender *s, struct sdst *d, const struct kv_send_target *t,
		    struct rc_err *err)
{
	struct rc_err e;
	int rc;

	d->t = t;
	snprintf(d->name, sizeof(d->name), strchr(d->t->host, ':') ? "[%s]:%s" : "%s:%s",
		 d->t->host, d->t->port);
	s->nd++;
	if ((rc = connect_dst(s, d, err)))
		return rc;
	/* Pinning a large pool takes a while: before HELLO, since the decode
	 * rank counts heartbeats from WELCOME on. */
	if ((rc = rc_mem_register(&s->mem, d->ctrl->pd, IBV_ACCESS_LOCAL_WRITE, &d->mr, &e))) {
		d->mr = NULL;
		return rc_err_set(err, -rc, "cannot register %zu bytes of source pages: %.400s",
				  s->pool_len, e.msg);
	}
	/* What the NIC reads: the pool itself, the GPU's, or its bounce buffer. */
	s->wire_delta = s->mem.mr_addr - (uint64_t)(uintptr_t)s->pool;
	if ((rc = handshake(s, d, err)) || (rc = connect_data(s, d, err)))
		return rc;
	d->last_hb = rc_now();
	return 0;
}

static int setup(struct kv_sender *s, struct rc_err *err)
{
	const struct kv_send_opts *o = s->o;
	int rc;

	if ((rc = check_opts(s, err)) || (rc = alloc_pool(s, err)))
		return rc;
	/* Unguessable: a data QP joins this sender by its secret alone. */
	if ((rc = rc_random_bytes(s->secret, sizeof(s->secret))) ||
	    (rc = rc_random_bytes(&s->session, sizeof(s->session))))
		return rc_err_set(err, -rc, "no random bytes for the session: %s", strerror(-rc));
	for (int i = 0; i < o->ntargets; i++)
		if ((rc = open_dst(s, &s->d[i], &o->targets[i], err)))
			return rc;
	/* Step 4: the routes, now that every decode rank said whether it lands. */
	if ((rc = kvs_map_routes(s, err)))
		return rc;
	s->sum->gather_sge = s->gather;
	for (int i = 0; i < s->nd; i++) {
		struct kv_event ev = { .kind = KV_EV_PEER_UP,
				       .rank = s->d[i].rank,
				       .peer = s->d[i].name,
				       .qps = o->nqps,
				       .dev = s->d[i].ctrl->dev_name };

		kvs_emit(s, &ev);
	}
	return 0;
}

static void close_dst(struct sdst *d)
{
	if (d->closed)
		return;
	d->closed = true;
	for (int k = 0; k < KV_MAX_QPS; k++) {
		if (d->qp[k].c)
			rc_conn_close(d->qp[k].c);
		d->qp[k].c = NULL;
		for (size_t j = 0; j < d->qp[k].qlen; j++)
			free(d->qp[k].q[d->qp[k].qhead + j].sg);
		d->qp[k].qlen = 0;
	}
	if (d->mr)
		ibv_dereg_mr(d->mr);
	d->mr = NULL;
	kv_chan_fini(&d->ch);
	if (d->ctrl)
		rc_conn_close(d->ctrl);
	d->ctrl = NULL;
}

static void conn_events(struct sdst *d, struct rc_conn *c)
{
	struct rdma_cm_event *ev;

	while (!d->dead && rdma_get_cm_event(c->ech, &ev) == 0) {
		enum rdma_cm_event_type t = ev->event;
		enum rc_cm_kind kind = rc_cm_kind_of(t);

		rdma_ack_cm_event(ev);
		if (kind == RC_CM_GONE || kind == RC_CM_DEVICE_GONE) {
			c->disconnected = true;
			snprintf(d->why, sizeof(d->why), "%s (%s)",
				 kind == RC_CM_DEVICE_GONE         ? "device removed"
				 : t == RDMA_CM_EVENT_DISCONNECTED ? "disconnected"
								   : "connection failed",
				 rdma_event_str(t));
			d->dead = true;
		}
	}
}

/* Messages on the control QP; after a death, the ones that came before it. */
static void drain_ctrl(struct kv_sender *s, struct sdst *d)
{
	struct ibv_wc wc[32];
	bool was = d->dead;
	struct kv_msg m;
	struct rc_err e;
	int n;

	while ((was || !d->dead) && (n = rc_cq_take(d->ctrl, wc, 32)) > 0) {
		for (int j = 0; j < n; j++) {
			int k = wc[j].status == IBV_WC_SUCCESS
					? kv_chan_wc(&d->ch, &wc[j], &m, s->pages_tmp, &e)
				: was ? 0
				      : rc_wc_error(d->ctrl, &wc[j], &e);

			if (k == 1 && (!was || m.type == KV_MSG_DONE || m.type == KV_MSG_CANCEL))
				kvs_on_msg(s, d, &m);
			if (k < 0 && !d->dead) {
				snprintf(d->why, sizeof(d->why), "%.200s", e.msg);
				d->dead = true;
			}
		}
	}
}

/* One completion of a data QP of d's: a write done, or its death. */
static void data_wc(struct kv_sender *s, struct sdst *d, struct sqp *qp, const struct ibv_wc *wc)
{
	struct rc_err e;

	if (wc->status == IBV_WC_SUCCESS && wc->opcode == IBV_WC_RDMA_WRITE) {
		kvs_on_data_wc(s, d, qp, wc);
		return;
	}
	if (wc->status == IBV_WC_SUCCESS)
		snprintf(d->why, sizeof(d->why), "unexpected completion (opcode %d) on data QP %u",
			 (int)wc->opcode, qp->k + 1);
	else {
		rc_wc_error(qp->c, wc, &e);
		snprintf(d->why, sizeof(d->why), "%.200s", e.msg);
	}
	d->dead = true;
}

/* A completion of the shared CQ (rc_shared_drain, 1024 a pass) to its data
 * QP, found by QP number; one of a QP closed already, or of a dead decode
 * rank's, is dropped. */
static void shared_wc(void *arg, struct rc_conn *c, const struct ibv_wc *wc)
{
	struct sqp *qp = c ? c->user : NULL;

	if (qp && !qp->d->dead)
		data_wc(arg, qp->d, qp, wc);
}

static void dst_step(struct kv_sender *s, struct sdst *d, double now)
{
	struct ibv_wc wc[32];
	int n;

	/* Completions before CM events: a message that came in before a
	 * disconnect (the last DONE) still counts. */
	drain_ctrl(s, d);
	for (uint32_t k = 0; k < s->o->nqps; k++) {
		struct sqp *qp = &d->qp[k];

		while (!qp->c->shared && !d->dead && (n = rc_cq_take(qp->c, wc, 32)) != 0) {
			for (int j = 0; n > 0 && j < n && !d->dead; j++)
				data_wc(s, d, qp, &wc[j]);
			if (n < 0)
				d->dead = true;
		}
	}
	conn_events(d, d->ctrl);
	for (uint32_t k = 0; k < s->o->nqps; k++)
		conn_events(d, d->qp[k].c);
	if (d->dead) {
		drain_ctrl(s, d); /* what it said before it went still counts */
		return;
	}
	if (now - d->ch.last_rx > s->o->c.hb_timeout_ms / 1000.0) {
		snprintf(d->why, sizeof(d->why), "no heartbeat for %d ms", s->o->c.hb_timeout_ms);
		d->dead = true;
	}
}

static int run(struct kv_sender *s, struct rc_err *err)
{
	const struct kv_send_opts *o = s->o;
	struct pollfd *pfd = calloc((size_t)s->nd * (o->nqps + 1) * 2 + 2, sizeof(*pfd));
	int rc = 0;

	if (!pfd)
		return rc_err_set(err, ENOMEM, "out of memory");
	s->first = rc_now();
	for (;;) {
		int n = 0, stop_at = -1, wait;
		bool busy;

		/* Drain and arm every CQ before sleeping on them. */
		rc_shared_drain(s->sh, 1024, shared_wc, s);
		for (int i = 0; i < s->nd; i++) {
			struct sdst *d = &s->d[i];

			if (d->closed)
				continue;
			dst_step(s, d, rc_now());
			if (!d->dead)
				continue;
			close_dst(d); /* no write of ours can land any more */
			struct kv_event ev = { .kind = KV_EV_PEER_DOWN,
					       .rank = d->rank,
					       .peer = d->name,
					       .reason = d->why };
			kvs_emit(s, &ev);
			kvs_dst_gone(s, d);
		}
		kvs_heartbeats(s);
		while (!s->stopping && !s->broken && s->active < o->inflight &&
		       s->next_id < o->c.requests)
			if ((rc = kvs_admit(s, err)))
				goto out;
		busy = kvs_fill_step(s);
		kvs_progress(s);
		for (int i = 0; i < s->nd; i++)
			kvs_post_queued(s, &s->d[i]);
		if (!s->active && (s->stopping || s->broken || s->next_id >= o->c.requests))
			break;
		if (o->c.stop_fd >= 0 && !s->stopping) {
			stop_at = n;
			pfd[n++] = (struct pollfd){ .fd = o->c.stop_fd, .events = POLLIN };
		}
		for (int i = 0; i < s->nd; i++) {
			struct sdst *d = &s->d[i];

			if (d->closed)
				continue;
			pfd[n++] = (struct pollfd){ .fd = d->ctrl->ech->fd, .events = POLLIN };
			pfd[n++] = (struct pollfd){ .fd = d->ctrl->cch->fd, .events = POLLIN };
			for (uint32_t k = 0; k < o->nqps; k++) {
				pfd[n++] = (struct pollfd){ .fd = d->qp[k].c->ech->fd,
							    .events = POLLIN };
				if (!d->qp[k].c->shared)
					pfd[n++] = (struct pollfd){ .fd = d->qp[k].c->cch->fd,
								    .events = POLLIN };
			}
		}
		if (s->sh)
			pfd[n++] = (struct pollfd){ .fd = s->sh->cch->fd, .events = POLLIN };
		wait = busy || (s->sh && !s->sh->armed) ? 0 : (int)(kvs_next_wake(s) * 1000) + 1;
		if (poll(pfd, (nfds_t)n, wait) < 0 && errno != EINTR) {
			rc = rc_err_set(err, errno, "poll failed: %s", strerror(errno));
			goto out;
		}
		if (stop_at >= 0 && pfd[stop_at].revents) {
			s->stopping = true;
			for (uint32_t i = 0; i < o->inflight; i++)
				if (s->reqs[i].used)
					kvs_cancel(s, &s->reqs[i], KV_EV_CANCELLED, 0,
						   "stopped by a signal");
		}
	}
out:
	free(pfd);
	return rc;
}

int kv_send_run(const struct kv_send_opts *o, struct kv_summary *sum, struct rc_err *err)
{
	struct kv_sender *s = calloc(1, sizeof(*s));
	struct rc_err own = { 0 };
	int rc;

	if (!err) /* setup returns a callee's code through it */
		err = &own;
	memset(sum, 0, sizeof(*sum));
	if (!s)
		return rc_err_set(err, ENOMEM, "out of memory");
	s->o = o;
	s->g = &o->c.g;
	s->sum = sum;
	s->mem.fd = -1;
	s->mem.dmabuf_fd = -1;
	rc = setup(s, err);
	if (!rc) {
		struct kv_event ev = { .kind = KV_EV_READY, .rank = o->c.rank, .mem = &s->mem };

		kvs_emit(s, &ev);
		rc = run(s, err);
	}
	sum->nqps = o->nqps;
	for (int i = 0; i < s->nd; i++) {
		for (uint32_t k = 0; k < o->nqps; k++) {
			sum->qp_bytes[k] += s->d[i].qp[k].bytes;
			sum->qp_wrs[k] += s->d[i].qp[k].sq.posted;
		}
		close_dst(&s->d[i]);
		free(s->d[i].segs);
		for (int k = 0; k < KV_MAX_QPS; k++)
			free(s->d[i].qp[k].q);
	}
	rc_shared_destroy(s->sh); /* after every data QP on it */
	for (uint32_t i = 0; s->reqs && i < o->inflight; i++) {
		for (int k = 0; k < s->nd; k++)
			free(s->reqs[i].pages[k]);
		free(s->reqs[i].ready);
		free(s->reqs[i].landed);
		free(s->reqs[i].pending);
	}
	free(s->reqs);
	free(s->d);
	if (s->mem.kind == RC_MEM_CUDA)
		rc_mem_host_copy_free(s->pool, s->pool_len);
	rc_mem_free(&s->mem);
	free(s);
	return rc;
}
