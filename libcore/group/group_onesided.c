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
#include <rdmactl/group_core.h>

#include "group_int.h"
#include "rdv_int.h"

struct write_pieces {
	struct rc_group *g;
	int j;
	uint8_t *laddr;
	uint32_t lkey;
	uint64_t raddr;
	uint32_t rkey;
	int channel;
	uint32_t seq;
	double deadline;
	struct rc_err *err;
};

static int sq_room(struct write_pieces *w)
{
	struct rc_group *g = w->g;
	struct gpeer *p = &g->peers[w->j];
	int rc;

	while (p->sends_out >= g->o.sq_depth - 2) {
		rc = group_wait_slice(g, w->deadline, w->err);
		if (rc == -ETIMEDOUT)
			return rc_err_set(w->err, ETIMEDOUT,
					  "writes to %s did not complete within %d ms", p->c->peer,
					  g->o.timeout_ms);
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
	int rc;

	if ((rc = sq_room(w)))
		return rc;
	rc = rc_post_rdma(p->c, imm ? RC_OP_WRITE_IMM : RC_OP_WRITE,
			  w->laddr ? w->laddr + off : NULL, len, w->lkey, w->raddr + off, w->rkey,
			  (uint32_t)w->channel << 24 | (w->seq & 0xffffff),
			  (uint64_t)w->j | (last ? 0 : PIECE_NOT_LAST), true, w->err);
	if (!rc)
		p->sends_out++;
	return rc;
}

int rc_group_write_imm(struct rc_group *g, int j, void *laddr, uint64_t len, uint32_t lkey,
		       uint64_t raddr, uint32_t rkey, int channel, uint32_t seq, struct rc_err *err)
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

	if (!p->c || channel < -1 || channel >= IMM_CHANNELS)
		return rc_err_set(err, EINVAL, "no connection to rank %d", j);
	if (p->dead && g->o.keep_going)
		return group_peer_gone(g, j, "writing to it", err);
	if (!p->max_msg)
		p->max_msg = rc_conn_max_msg(p->c);
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
	int rc;

	if (j < 0 || j >= g->o.world || !g->peers[j].c)
		return rc_err_set(err, EINVAL, "no connection to rank %d", j);
	p = &g->peers[j];
	if (p->dead && g->o.keep_going)
		return group_peer_gone(g, j, "reading from it", err);
	if ((rc = sq_room(&w)))
		return rc;
	rc = rc_post_rdma(p->c, RC_OP_READ, laddr, len, lkey, raddr, rkey, 0, (uint64_t)j, true,
			  err);
	if (!rc)
		p->sends_out++;
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

		while (p->sends_out > 0) {
			int rc = group_wait_slice(g, deadline, err);

			if (rc == -ETIMEDOUT)
				return rc_err_set(err, ETIMEDOUT,
						  "writes to %s did not complete within %d ms",
						  p->c->peer, g->o.timeout_ms);
			if (rc)
				return rc;
		}
	}
	return 0;
}
