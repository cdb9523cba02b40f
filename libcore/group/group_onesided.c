// SPDX-License-Identifier: MIT
/*
 * One-sided traffic between the ranks of a group: RDMA WRITEs (with
 * immediate data, in pieces no larger than the port's largest message) and
 * READs, the immediate-data counters and the waits on them, and the flush
 * of every write posted.
 */
#include <errno.h>
#include <stdlib.h>

#include <rdmactl/ops.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/pipe_core.h>
#include <rdmactl/tp_core.h>
#include <rdmactl/group_core.h>

#include "group_int.h"
#include "rdv_int.h"

struct write_pieces {
	struct rc_group *g;
	int j;
	uint8_t *laddr;
	uint32_t lkey;
	uint64_t raddr;
	uint64_t rkey;
	int channel;
	uint32_t seq;
	double deadline;
	struct rc_err *err;
};

/* Peer j's queue in the engine: every work request signalled (a write is
 * counted done by its last piece's completion), the window the send queue
 * less two for control messages, which share it (gpeer_sq_used). */
static struct rc_pipe *peer_pipe(struct rc_group *g, struct gpeer *p)
{
	void *ep = g->fab ? group_fab_ep(g, (int)(p - g->peers)) : p->c;

	if (p->pipe.ep != ep) {
		struct rc_pipe_opts o = { .depth = g->o.sq_depth - 2, .signal_every = 1, .batch = 1 };

		rc_pipe_init(&p->pipe, g->fab ? &rc_ofi_transport : &rc_verbs_transport, ep, &o);
	}
	return &p->pipe;
}

static int sq_room(struct write_pieces *w)
{
	struct rc_group *g = w->g;
	struct gpeer *p = &g->peers[w->j];
	int rc;

	while (gpeer_sq_used(p) >= g->o.sq_depth - 2) {
		rc = group_wait_slice(g, w->deadline, w->err);
		if (rc == -ETIMEDOUT)
			return rc_err_set(w->err, ETIMEDOUT,
					  "writes to %s did not complete within %d ms",
					  gpeer_name(p), g->o.timeout_ms);
		if (rc)
			return rc;
	}
	return 0;
}

static int write_piece(void *arg, uint64_t off, uint32_t len, bool last)
{
	struct write_pieces *w = arg;
	struct rc_group *g = w->g;
	struct gpeer *p = &g->peers[w->j];
	bool imm = last && w->channel >= 0;
	struct rc_pipe *q = peer_pipe(g, p);
	struct rc_wr wr = { .op = imm ? RC_OP_WRITE_IMM : RC_OP_WRITE,
			    .laddr = w->laddr ? (uintptr_t)(w->laddr + off) : 0,
			    .len = len,
			    .lkey = w->lkey,
			    .raddr = w->raddr + off,
			    .rkey = w->rkey,
			    /* over libfabric, the writer's rank: an RDM endpoint does not tell it */
			    .imm = (uint32_t)w->channel << 24 |
				   (g->fab ? (uint32_t)g->o.rank : w->seq & 0xffffff),
			    .user = rc_pipe_seq(q) | (last ? 0 : PIECE_NOT_LAST) };
	int rc;

	if ((rc = sq_room(w)))
		return rc;
	return rc_pipe_add(q, &wr, true, w->err); /* a batch of one: posted now */
}

int rc_group_write_imm(struct rc_group *g, int j, void *laddr, uint64_t len, uint32_t lkey,
		       uint64_t raddr, uint64_t rkey, int channel, uint32_t seq, struct rc_err *err)
{
	struct gpeer *p = &g->peers[j];
	struct write_pieces w = { .g = g,
				  .j = j,
				  .laddr = laddr,
				  .lkey = lkey,
				  .raddr = raddr,
				  .rkey = rkey,
				  .channel = channel,
				  .seq = seq,
				  .deadline = rc_now() + g->o.timeout_ms / 1000.0,
				  .err = err };

	if (!gpeer_linked(p) || channel < -1 || channel >= IMM_CHANNELS)
		return rc_err_set(err, EINVAL, "no connection to rank %d", j);
	if (p->dead && g->o.keep_going)
		return group_peer_gone(g, j, "writing to it", err);
	if (!p->max_msg)
		p->max_msg = g->fab ? group_fab_max_msg(g) : rc_conn_max_msg(p->c);
	/* a block larger than the port's largest message goes in pieces;
	 * only the last carries the immediate data, and RC lands them in order */
	return rc_split_len(len, p->max_msg, write_piece, &w);
}

int rc_group_read(struct rc_group *g, int j, void *laddr, uint32_t len, uint32_t lkey,
		  uint64_t raddr, uint32_t rkey, struct rc_err *err)
{
	struct write_pieces w = { .g = g,
				  .j = j,
				  .deadline = rc_now() + g->o.timeout_ms / 1000.0,
				  .err = err };
	struct gpeer *p;
	struct rc_pipe *q;
	int rc;

	if (j < 0 || j >= g->o.world || !gpeer_linked(&g->peers[j]))
		return rc_err_set(err, EINVAL, "no connection to rank %d", j);
	p = &g->peers[j];
	if (p->dead && g->o.keep_going)
		return group_peer_gone(g, j, "reading from it", err);
	if ((rc = sq_room(&w)))
		return rc;
	q = peer_pipe(g, p);
	return rc_pipe_add(q,
			   &(struct rc_wr){ .op = RC_OP_READ,
					    .laddr = (uintptr_t)laddr,
					    .len = len,
					    .lkey = lkey,
					    .raddr = raddr,
					    .rkey = rkey,
					    .user = rc_pipe_seq(q) },
			   true, err);
}

/* Wait for the engine to count rank j's queue done up to `until` writes
 * outstanding at most; the deadline moves with every completion. */
static int burst_wait(struct rc_group *g, int j, uint64_t until, struct rc_err *err)
{
	struct gpeer *p = &g->peers[j];
	double deadline = rc_now() + g->o.timeout_ms / 1000.0;

	while (rc_pipe_outstanding(&p->pipe) > until) {
		uint64_t done = p->pipe.sq.done;
		int rc = group_wait_slice(g, deadline, err);

		if (rc == -ETIMEDOUT)
			return rc_err_set(err, ETIMEDOUT,
					  "writes to %s did not complete within %d ms",
					  gpeer_name(p), g->o.timeout_ms);
		if (rc)
			return rc;
		if (p->dead && g->o.keep_going)
			return group_peer_gone(g, j, "writing to it", err);
		if (p->pipe.sq.done != done)
			deadline = rc_now() + g->o.timeout_ms / 1000.0;
	}
	return 0;
}

/* The burst's writes, the engine's policy set for them (restored after). */
static int burst_run(struct rc_group *g, int j, const struct rc_group_burst *b, uint64_t *posted,
		     struct rc_err *err)
{
	struct rc_pipe *q = &g->peers[j].pipe;
	uint32_t max = g->peers[j].max_msg, at = 0; /* a write larger goes in pieces */
	uint64_t k = 0;
	int rc = 0;

	while (!rc && (at || (b->iters ? k < b->iters : rc_now() < b->until))) {
		uint32_t len = b->len - at < max ? b->len - at : max;
		struct rc_wr w = { .op = RC_OP_WRITE,
				   .laddr = (uintptr_t)b->laddr + at,
				   .len = len,
				   .lkey = b->lkey,
				   .raddr = b->raddr + at,
				   .rkey = b->rkey,
				   .user = rc_pipe_seq(q) | PIECE_NOT_LAST };

		if (!rc_pipe_room(q, 0) || gpeer_sq_used(&g->peers[j]) >= g->o.sq_depth - 2) {
			uint64_t out = rc_pipe_outstanding(q);

			/* none of ours out: control messages fill the queue */
			rc = out ? burst_wait(g, j, out - 1, err) : group_progress(g, 100, err);
			if (!rc && b->note) {
				uint64_t left = rc_pipe_outstanding(q);

				b->note(b->note_arg, left < k ? k - left : 0, rc_now());
			}
			continue;
		}
		at = at + len < b->len ? at + len : 0;
		rc = rc_pipe_add(q, &w, !at && b->iters && k + 1 == b->iters, err);
		k += !rc && !at;
	}
	/* A burst cut by time ends unsignalled: a signalled write of no bytes
	 * after it tells when the rest are done. */
	if (!rc && q->sq.signaled < q->sq.posted)
		rc = rc_pipe_add(q,
				 &(struct rc_wr){ .op = RC_OP_WRITE,
						  .raddr = b->raddr,
						  .rkey = b->rkey,
						  .user = rc_pipe_seq(q) | PIECE_NOT_LAST },
				 true, err);
	*posted = k;
	return rc ? rc : burst_wait(g, j, 0, err);
}

int rc_group_write_burst(struct rc_group *g, int j, const struct rc_group_burst *b,
			 uint64_t *posted, struct rc_err *err)
{
	struct gpeer *p;
	struct rc_pipe *q;
	int depth, every, rc;

	*posted = 0;
	if (j < 0 || j >= g->o.world || !g->peers[j].c)
		return rc_err_set(err, EINVAL, "no connection to rank %d", j);
	p = &g->peers[j];
	if (p->dead && g->o.keep_going)
		return group_peer_gone(g, j, "writing to it", err);
	if (!p->max_msg)
		p->max_msg = g->fab ? group_fab_max_msg(g) : rc_conn_max_msg(p->c);
	if (b->depth < 1)
		return rc_err_set(err, EINVAL, "a burst %d deep to %s", b->depth, gpeer_name(p));
	/* The group's own writes are each signalled: the burst waits for them. */
	q = peer_pipe(g, p);
	if ((rc = burst_wait(g, j, 0, err)))
		return rc;
	depth = q->sq.depth;
	every = q->sq.signal_every;
	q->sq.depth = b->depth < depth ? b->depth : depth;
	q->sq.signal_every = b->signal_every < 1 ? 1 : b->signal_every;
	if (q->sq.signal_every > q->sq.depth)
		q->sq.signal_every = q->sq.depth;
	rc = burst_run(g, j, b, posted, err);
	q->sq.depth = depth;
	q->sq.signal_every = every;
	return rc;
}

uint64_t rc_group_imm_count(const struct rc_group *g, int peer, int channel)
{
	return g->peers[peer].imm[channel];
}

static int wait_imm(struct rc_group *g, const int *peers, int n, int channel,
		    const uint64_t *target, bool *have, double deadline, struct rc_err *err)
{
	for (;;) {
		bool all = true;
		char missing[256];
		int rc;

		for (int j = 0; j < g->o.world; j++)
			have[j] = true;
		for (int k = 0; k < n; k++) {
			int j = peers[k];

			if (g->peers[j].imm[channel] >= target[k])
				continue;
			have[j] = false;
			all = false;
		}
		if (all)
			return 0;
		rc = group_wait_slice(g, deadline, err);
		if (rc == -ETIMEDOUT) {
			ranks_missing(have, g->o.world, missing, sizeof(missing));
			return rc_err_set(err, ETIMEDOUT,
					  "no data from rank %s within %d ms (is it still running?)",
					  missing, g->o.timeout_ms);
		}
		if (rc)
			return rc;
		for (int k = 0; k < n; k++)
			if (!have[peers[k]] && g->peers[peers[k]].dead &&
			    (rc = group_progress(g, 0, err)))
				return rc;
		for (int k = 0; k < n; k++)
			if (!have[peers[k]] && g->peers[peers[k]].dead &&
			    g->peers[peers[k]].imm[channel] < target[k])
				return group_peer_gone(g, peers[k], "data from it was awaited", err);
	}
}

int rc_group_wait_imm(struct rc_group *g, const int *peers, int n, int channel,
		      const uint64_t *target, struct rc_err *err)
{
	double deadline = rc_now() + g->o.timeout_ms / 1000.0;
	bool *have = malloc((size_t)g->o.world * sizeof(bool));
	int rc = have ? wait_imm(g, peers, n, channel, target, have, deadline, err)
		      : rc_err_set(err, ENOMEM, "out of memory");

	free(have);
	return rc;
}

int rc_group_flush(struct rc_group *g, struct rc_err *err)
{
	double deadline = rc_now() + g->o.timeout_ms / 1000.0;

	for (int k = 0; k < g->nconns; k++) {
		struct gpeer *p = &g->peers[g->conn_rank[k]];

		while (gpeer_sq_used(p) > 0) {
			int rc = group_wait_slice(g, deadline, err);

			if (rc == -ETIMEDOUT)
				return rc_err_set(err, ETIMEDOUT,
						  "writes to %s did not complete within %d ms",
						  gpeer_name(p), g->o.timeout_ms);
			if (rc)
				return rc;
		}
	}
	return 0;
}
