// SPDX-License-Identifier: MIT
/*
 * kvxfer send: one prefill (source) rank. It connects a control QP and
 * --qps data QPs to each decode rank it feeds, shows them its geometry
 * (HELLO; a decode rank answers with its pool, or refuses: kv_send_peer.c),
 * then runs requests: --inflight at once, their layers "computed" one
 * after the other and posted as each becomes ready (kv_send_req.c). Heartbeats go
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
		return rc_err_param(err, "rank", EINVAL,
				    "rank %u: the prefill side has ranks 0 to %u", o->c.rank,
				    s->g->src_tp - 1);
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

static int setup(struct kv_sender *s, struct rc_err *err)
{
	const struct kv_send_opts *o = s->o;
	int rc;

	if ((rc = check_opts(s, err)) || (rc = alloc_pool(s, err)))
		return rc;
	/* Names this sender's QPs to a decode rank; its data QPs prove
	 * themselves under each exchange's secret (kv_send_peer.c). */
	if ((rc = rc_random_bytes(&s->session, sizeof(s->session))))
		return rc_err_set(err, -rc, "no random bytes for the session: %s", strerror(-rc));
	if ((rc = kvs_rail_binds(s, err)))
		return rc;
	for (int i = 0; i < o->ntargets; i++)
		if ((rc = kvs_open_dst(s, &s->d[i], &o->targets[i], err)))
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
	kvs_conn_events(d, d->ctrl);
	for (uint32_t k = 0; k < s->o->nqps; k++)
		kvs_conn_events(d, d->qp[k].c);
	if (d->dead) {
		drain_ctrl(s, d); /* what it said before it went still counts */
		return;
	}
	if (now - d->ch.last_rx > s->o->c.hb_timeout_ms / 1000.0) {
		snprintf(d->why, sizeof(d->why), "no heartbeat for %d ms", s->o->c.hb_timeout_ms);
		d->dead = true;
	}
}

/* Every shared CQ is empty and armed: the loop may sleep on them. */
static bool shared_armed(const struct kv_sender *s)
{
	for (int r = 0; r < RC_RAILS_MAX; r++)
		if (s->sh[r] && !s->sh[r]->armed)
			return false;
	return true;
}

static void add_fd(struct pollfd *pfd, int *n, int fd)
{
	pfd[(*n)++] = (struct pollfd){ .fd = fd, .events = POLLIN };
}

/* What the loop sleeps on, after pfd[0..n): the one shared CQ and CM
 * channel, and the channels of the connections that kept their own.
 * Returns the new count. */
static int wait_fds(struct kv_sender *s, struct pollfd *pfd, int n)
{
	for (int i = 0; i < s->nd; i++) {
		struct sdst *d = &s->d[i];

		if (d->closed)
			continue;
		if (d->ctrl->ech)
			add_fd(pfd, &n, d->ctrl->ech->fd);
		add_fd(pfd, &n, d->ctrl->cch->fd);
		for (uint32_t k = 0; k < s->o->nqps; k++) {
			if (d->qp[k].c->ech)
				add_fd(pfd, &n, d->qp[k].c->ech->fd);
			if (!d->qp[k].c->shared)
				add_fd(pfd, &n, d->qp[k].c->cch->fd);
		}
	}
	for (int r = 0; r < RC_RAILS_MAX; r++)
		if (s->sh[r])
			add_fd(pfd, &n, s->sh[r]->cch->fd);
	if (s->ech)
		add_fd(pfd, &n, s->ech->fd);
	return n;
}

static int run(struct kv_sender *s, struct rc_err *err)
{
	const struct kv_send_opts *o = s->o;
	struct pollfd *pfd =
		calloc((size_t)s->nd * (o->nqps + 1) * 2 + 2 + RC_RAILS_MAX, sizeof(*pfd));
	int rc = 0;

	if (!pfd)
		return rc_err_set(err, ENOMEM, "out of memory");
	s->first = rc_now();
	for (;;) {
		int n = 0, stop_at = -1, wait;
		bool busy;

		/* Drain and arm every CQ before sleeping on them. */
		for (int r = 0; r < RC_RAILS_MAX; r++)
			rc_shared_drain(s->sh[r], 1024, shared_wc, s);
		kvs_cm_events(s);
		for (int i = 0; i < s->nd; i++) {
			struct sdst *d = &s->d[i];

			if (d->closed)
				continue;
			dst_step(s, d, rc_now());
			if (!d->dead)
				continue;
			kvs_close_dst(d); /* no write of ours can land any more */
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
		n = wait_fds(s, pfd, n);
		wait = busy || !shared_armed(s) ? 0 : (int)(kvs_next_wake(s) * 1000) + 1;
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
	s->ech = rc_cm_channel(); /* NULL: each connection keeps its own */
	rc = setup(s, err);
	if (!rc) {
		struct kv_event ev = { .kind = KV_EV_READY, .rank = o->c.rank, .mem = &s->mem };

		kvs_emit(s, &ev);
		rc = run(s, err);
	}
	sum->nqps = o->nqps;
	sum->nrails = o->nrails > 1 ? (uint32_t)o->nrails : 0;
	for (int i = 0; i < s->nd; i++) {
		struct kv_rail_sum *rs = &sum->rails[s->d[i].rail];

		for (uint32_t k = 0; k < o->nqps; k++) {
			sum->qp_bytes[k] += s->d[i].qp[k].bytes;
			sum->qp_wrs[k] += s->d[i].qp[k].pipe.sq.posted;
			rs->bytes += sum->nrails ? s->d[i].qp[k].bytes : 0;
		}
		kvs_close_dst(&s->d[i]);
		free(s->d[i].segs);
		for (int k = 0; k < KV_MAX_QPS; k++)
			free(s->d[i].qp[k].q);
	}
	for (int r = 0; r < RC_RAILS_MAX; r++)
		rc_shared_destroy(s->sh[r]); /* after every data QP on it */
	if (s->ech)
		rdma_destroy_event_channel(s->ech); /* and every connection */
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
