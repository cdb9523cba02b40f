// SPDX-License-Identifier: MIT
/*
 * The libfabric transport: the seam of pipe_core.h over an RDM endpoint
 * (struct rc_ofi), so that the engine's window, signalling and completion
 * accounting (rc_pipe, rc_stream_run) run over libfabric as they run over
 * verbs. An endpoint is one peer of an open rc_ofi; memory keys are the
 * provider's (lkey: the registration's number on the endpoint, which names
 * its descriptor where FI_MR_LOCAL asks for one).
 *
 * Two differences from an RC queue pair are taken care of here, not above:
 * libfabric completes every operation (no unsignalled ones without
 * FI_SELECTIVE_COMPLETION), and an RDM endpoint may complete them out of
 * order. Each work request holds a slot of a ring, in post order; a
 * completion marks its slot, and the engine is told of the longest run of
 * marked slots from the oldest, as an RC send queue would tell it (a
 * completion covers everything posted before it).
 *
 * Connection setup is not here: over libfabric a peer is an address-vector
 * entry, reached and proven by the region client's handshake (fab_cli.c).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdmactl/tp_core.h>

#define SPIN_MS 2.0 /* a wait polls this long, then yields the CPU between polls */

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int rc_ofi_tp_init(struct rc_ofi_tp *t, struct rc_ofi *o, uint64_t peer, const char *name,
		   int depth, int timeout_ms, struct rc_err *err)
{
	size_t words = (size_t)(depth > 0 ? depth : 1) * 3 * sizeof(uint64_t);

	memset(t, 0, sizeof(*t));
	t->o = o;
	t->peer = peer;
	t->depth = depth > 0 ? depth : 1;
	t->timeout_ms = timeout_ms > 0 ? timeout_ms : o->timeout_ms;
	snprintf(t->name, sizeof(t->name), "%s", name ? name : "the peer");
	t->ring = calloc((size_t)t->depth, sizeof(*t->ring));
	t->words = aligned_alloc(64, (words + 63) & ~(size_t)63);
	if (!t->ring || !t->words) {
		rc_ofi_tp_fini(t);
		return rc_err_set(err, ENOMEM, "out of memory for %d operations in flight",
				  t->depth);
	}
	memset(t->words, 0, words);
	if (rc_ofi_reg(o, t->words, words, RC_OFI_LOCAL, &t->words_mr, err)) {
		free(t->words);
		t->words = NULL;
		rc_ofi_tp_fini(t);
		return -err->code;
	}
	return 0;
}

void rc_ofi_tp_fini(struct rc_ofi_tp *t)
{
	if (t->words)
		rc_ofi_dereg(&t->words_mr);
	free(t->words);
	free(t->ring);
	t->words = NULL;
	t->ring = NULL;
}

uint32_t rc_ofi_tp_key(struct rc_ofi_tp *t, const struct rc_ofi_mr *mr)
{
	for (uint32_t i = 0; i < RC_OFI_TP_MRS; i++)
		if (t->mrs[i] == mr || !t->mrs[i]) {
			t->mrs[i] = mr;
			return i + 1;
		}
	return 0;
}

static const struct rc_ofi_mr *mr_of(const struct rc_ofi_tp *t, uint32_t lkey)
{
	return lkey >= 1 && lkey <= RC_OFI_TP_MRS ? t->mrs[lkey - 1] : NULL;
}

/* Registrations made through the seam (access: RC_OFI_* bits): the
 * endpoint names them by lkey. */
struct tp_mr {
	struct rc_ofi_mr m;
	struct rc_ofi_tp *t;
	uint32_t lkey;
};

static int o_mem_reg(void *ep, void *addr, size_t len, int access, void **mr, uint64_t *lkey,
		     uint64_t *rkey, struct rc_err *err)
{
	struct rc_ofi_tp *t = ep;
	struct tp_mr *m = calloc(1, sizeof(*m));
	int rc;

	if (!m)
		return rc_err_set(err, ENOMEM, "out of memory");
	if ((rc = rc_ofi_reg(t->o, addr, len, access, &m->m, err))) {
		free(m);
		return rc;
	}
	if (!(m->lkey = rc_ofi_tp_key(t, &m->m))) {
		rc_ofi_dereg(&m->m);
		free(m);
		return rc_err_set(err, ENOSPC, "%d registrations on one endpoint at most",
				  RC_OFI_TP_MRS);
	}
	m->t = t;
	*mr = m;
	*lkey = m->lkey;
	*rkey = m->m.key;
	return 0;
}

static int o_mem_dereg(void *mr)
{
	struct tp_mr *m = mr;

	if (!m)
		return 0;
	m->t->mrs[m->lkey - 1] = NULL;
	rc_ofi_dereg(&m->m);
	free(m);
	return 0;
}

static int post_one(struct rc_ofi_tp *t, const struct rc_wr *w, struct rc_ofi_tp_slot *s,
		    uint64_t *words, struct rc_err *err)
{
	const struct rc_ofi_mr *lmr = mr_of(t, w->lkey);
	void *buf = (void *)(uintptr_t)w->laddr;
	uint64_t imm = w->imm;

	if (w->sg && w->nsg)
		return rc_err_set(err, EOPNOTSUPP,
				  "gather lists are not posted over libfabric ('%s')",
				  t->o->prov_name);
	switch (w->op) {
	case RC_OP_WRITE:
	case RC_OP_WRITE_IMM:
		return rc_ofi_write(t->o, t->peer, buf, w->len, lmr, w->raddr, w->rkey,
				    w->op == RC_OP_WRITE_IMM ? &imm : NULL, s, err);
	case RC_OP_READ:
		return rc_ofi_read(t->o, t->peer, buf, w->len, lmr, w->raddr, w->rkey, s, err);
	case RC_OP_FAA:
	case RC_OP_CAS:
		s->old = buf;
		return rc_ofi_atomic(t->o, t->peer, w->op == RC_OP_CAS ? w->swap : w->compare_add,
				     w->op == RC_OP_CAS ? &w->compare_add : NULL, words,
				     &t->words_mr, w->raddr, w->rkey, s, err);
	default:
		return rc_err_set(err, EOPNOTSUPP, "%s is not posted over libfabric",
				  rc_op_name(w->op));
	}
}

static int o_post(void *ep, const struct rc_wr *wr, int n, struct rc_err *err)
{
	struct rc_ofi_tp *t = ep;

	for (int i = 0; i < n; i++) {
		size_t at = (size_t)(t->posted % (uint64_t)t->depth);
		struct rc_ofi_tp_slot *s = &t->ring[at];
		int rc;

		if (s->busy)
			return rc_err_set(err, ENOSPC, "%d operations in flight to %s already",
					  t->depth, t->name);
		*s = (struct rc_ofi_tp_slot){ .user = wr[i].user, .op = wr[i].op, .busy = true };
		if ((rc = post_one(t, &wr[i], s, t->words + at * 3, err))) {
			s->busy = false;
			return rc; /* those before it are in flight (posted counts them) */
		}
		t->posted++;
	}
	return n;
}

/* The completed run from the oldest slot: one completion covering it, as
 * an RC send queue gives one (0: the oldest is still in flight). */
static int report(struct rc_ofi_tp *t, struct rc_cqe *cqe)
{
	struct rc_ofi_tp_slot *last = NULL;

	while (t->reported < t->posted) {
		size_t at = (size_t)(t->reported % (uint64_t)t->depth);
		struct rc_ofi_tp_slot *s = &t->ring[at];

		if (!s->done)
			break;
		if ((s->op == RC_OP_FAA || s->op == RC_OP_CAS) && s->old)
			memcpy(s->old, t->words + at * 3, sizeof(uint64_t));
		s->busy = s->done = false;
		last = s;
		t->reported++;
	}
	if (!last)
		return 0;
	*cqe = (struct rc_cqe){ .user = last->user, .op = last->op };
	return 1;
}

/* Which of eps[0..n) posted the work request whose slot is ctx (-1: none,
 * a completion of the control plane's). */
static int owner(void *const *eps, int n, const void *ctx)
{
	for (int i = 0; i < n; i++) {
		const struct rc_ofi_tp *t = eps[i];
		uintptr_t at = (uintptr_t)ctx, lo = (uintptr_t)t->ring;

		if (at >= lo && at < lo + (uintptr_t)t->depth * sizeof(*t->ring))
			return i;
	}
	return -1;
}

/* Read what the completion queues hold, marking slots: 0, or -errno for a
 * failed operation (*which its endpoint). */
static int take(void *const *eps, int n, int *which, struct rc_err *err)
{
	int rc = 0;

	for (int i = 0; i < n && !rc; i++) {
		struct rc_ofi_tp *t = eps[i];
		struct rc_ofi_wc wc[16];
		int got = rc_ofi_poll(t->o, wc, 16, 0, err);

		if (got < 0) {
			*which = i;
			return got;
		}
		/* every slot read is marked, a failed one too (it is over), and
		 * the first failure is what the engine is told */
		for (int k = 0; k < got; k++) {
			int j = owner(eps, n, wc[k].ctx);
			struct rc_ofi_tp_slot *s = wc[k].ctx;
			const struct rc_ofi_tp *u;

			if (j < 0) { /* not the engine's: the control plane's */
				if (t->other)
					t->other(t->other_arg, &wc[k]);
				continue;
			}
			u = eps[j];
			s->done = true;
			if (wc[k].err && !rc) {
				*which = j;
				rc = rc_err_set(err, wc[k].err == EACCES ? EACCES : EIO,
						"%s to %s failed (%s): %s", rc_op_name(s->op),
						u->name, u->o->prov_name,
						wc[k].why[0] ? wc[k].why : strerror(wc[k].err));
			}
		}
	}
	return rc;
}

static int o_poll(void *const *eps, int n, struct rc_cqe *cqe, int max, int timeout_ms, int *which,
		  struct rc_err *err)
{
	const struct rc_ofi_tp *t0 = eps[0];
	double start = now_ms();
	double end = start + (timeout_ms < 0 ? t0->timeout_ms : timeout_ms);
	int dummy, rc;

	if (!which)
		which = &dummy;
	if (n < 1 || max < 1)
		return 0;
	/* what is marked already is told first; the queues are read at least once */
	for (bool read = false;; read = true) {
		for (int i = 0; i < n; i++)
			if (report(eps[i], cqe)) {
				*which = i;
				return 1;
			}
		double now = now_ms();

		if (read && now >= end)
			return timeout_ms == 0 ? 0 : -ETIMEDOUT;
		if (now - start > SPIN_MS)
			sched_yield(); /* polling is what moves a manual-progress provider on */
		if ((rc = take(eps, n, which, err)))
			return rc;
	}
}

static const char *o_peer(const void *ep)
{
	return ((const struct rc_ofi_tp *)ep)->name;
}

static uint32_t o_max_msg(const void *ep)
{
	size_t m = ((const struct rc_ofi_tp *)ep)->o->max_msg;

	return m > UINT32_MAX ? UINT32_MAX : (uint32_t)m;
}

static int o_sq_depth(const void *ep)
{
	return ((const struct rc_ofi_tp *)ep)->depth;
}

const struct rc_transport rc_ofi_transport = {
	.name = "ofi",
	.mem_reg = o_mem_reg,
	.mem_dereg = o_mem_dereg,
	.post = o_post,
	.poll = o_poll,
	.peer = o_peer,
	.max_msg = o_max_msg,
	.sq_depth = o_sq_depth,
};

bool rc_ofi_tp_quiesce(struct rc_ofi_tp *t, int timeout_ms)
{
	double end = now_ms() + timeout_ms;
	void *ep = t;
	struct rc_cqe cqe;

	while (t->reported < t->posted && now_ms() < end) {
		struct rc_err e = { 0 };
		int which;

		if (o_poll(&ep, 1, &cqe, 1, 0, &which, &e) == 0) {
			struct timespec ts = { 0, 100000 };

			nanosleep(&ts, NULL);
		}
	}
	return t->reported == t->posted;
}
