// SPDX-License-Identifier: MIT
/*
 * The group's collectives on control messages: the exchange with every
 * connected peer, the allgather and the barrier on the group's tree, and
 * the gather to and the broadcast from a root.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ops.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/group_core.h>

#include "group_int.h"

int rc_group_exchange(struct rc_group *g, const void *mine, size_t len, void *theirs,
		      struct rc_err *err)
{
	double deadline;
	int rc;

	if ((rc = group_msg_round(g, len, &deadline, err)))
		return rc;
	for (int k = 0; k < g->nconns; k++)
		if ((rc = group_send_msg(g, g->conn_rank[k], mine, len, deadline, err)))
			return rc;
	for (int k = 0; k < g->nconns; k++) {
		int j = g->conn_rank[k];

		if ((rc = group_take_msg(g, j, (char *)theirs + (size_t)j * len, len, deadline, err)))
			return rc;
	}
	/* Our messages landed before we go on: a peer may leave right after
	 * this exchange, and a message still in its send queue would be lost. */
	return group_sends_acked(g, deadline, false, err);
}

/*
 * The allgather and the barrier run on the group's tree (group_tree): up,
 * each rank adds its children's values (each rank fills its own slot, so
 * the sum of a subtree is its values) and sends the sum to its parent; down,
 * the root's full vector goes back to every rank. As many rounds as the
 * tree is deep, each rank talking to its parent and children only; values
 * travel in chunks of one control message each.
 */
#define CHUNK_VALS (RC_GROUP_MSG_MAX / sizeof(uint64_t))

static size_t nchunks(size_t n)
{
	return n ? (n + CHUNK_VALS - 1) / CHUNK_VALS : 1;
}

static size_t chunk_len(size_t n, size_t c)
{
	size_t left = n - c * CHUNK_VALS;

	return (left < CHUNK_VALS ? left : CHUNK_VALS) * sizeof(uint64_t);
}

/* This rank's children in the tree, into kids (world of room). */
static int tree_kids(const struct rc_group *g, int *kids)
{
	int nk = 0;

	for (int j = 0; j < g->o.world; j++)
		if (g->parent[j] == g->o.rank)
			kids[nk++] = j;
	return nk;
}

static int send_vals(struct rc_group *g, int j, const uint64_t *vals, size_t n, double deadline,
		     struct rc_err *err)
{
	for (size_t c = 0; c < nchunks(n); c++) {
		int rc = group_send_msg(g, j, vals + c * CHUNK_VALS, chunk_len(n, c), deadline, err);

		if (rc)
			return rc;
	}
	return 0;
}

/* The chunks of every child, added into vals in whatever order they come:
 * waiting on one child while another's pile up would hold that one back. */
static int take_kids(struct rc_group *g, const int *kids, int nk, size_t *got, uint64_t *vals,
		     size_t n, double deadline, struct rc_err *err)
{
	uint64_t part[CHUNK_VALS];
	size_t want = nchunks(n);
	int left = nk;

	while (left > 0) {
		bool moved = false;
		int rc;

		for (int k = 0; k < nk; k++)
			while (got[k] < want) {
				size_t c = got[k], len = chunk_len(n, c);

				if ((rc = group_pop_msg(g, kids[k], part, len, err)) < 0)
					return rc;
				if (!rc)
					break;
				for (size_t i = 0; i < len / sizeof(uint64_t); i++)
					vals[c * CHUNK_VALS + i] += part[i];
				moved = true;
				left -= ++got[k] == want;
			}
		if (moved || !left)
			continue;
		rc = group_wait_slice(g, deadline, err);
		for (int k = 0; k < nk && rc == -ETIMEDOUT; k++)
			if (got[k] < want)
				return rc_err_set(err, ETIMEDOUT,
						  "no word from %s within %d ms (is it still running?)",
						  gpeer_name(&g->peers[kids[k]]), g->o.timeout_ms);
		if (rc)
			return rc;
		for (int k = 0; k < nk; k++) {
			struct gpeer *p = &g->peers[kids[k]];

			/* gone: what it sent before leaving may still sit in the queue */
			if (got[k] < want && !p->box_n && p->dead &&
			    (rc = group_progress(g, 0, err)))
				return rc;
			if (got[k] < want && !p->box_n && p->dead)
				return group_peer_gone(g, kids[k], "a message from it was awaited",
						       err);
		}
	}
	return 0;
}

static int tree_round(struct rc_group *g, uint64_t *vals, size_t n, struct rc_err *err)
{
	int *kids = malloc((size_t)g->o.world * sizeof(int)), nk, up = g->parent[g->o.rank];
	size_t *got = calloc((size_t)g->o.world, sizeof(size_t));
	double deadline;
	int rc;

	if (!kids || !got) {
		rc = rc_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	if (g->depth < 0) {
		rc = rc_err_set(err, EPROTO, "the connection plan leaves ranks unreachable");
		goto out;
	}
	if ((rc = group_msg_round(g, chunk_len(n, 0), &deadline, err)))
		goto out;
	nk = tree_kids(g, kids);
	rc = take_kids(g, kids, nk, got, vals, n, deadline, err);
	if (!rc && up >= 0)
		rc = send_vals(g, up, vals, n, deadline, err);
	for (size_t c = 0; !rc && up >= 0 && c < nchunks(n); c++)
		rc = group_take_msg(g, up, vals + c * CHUNK_VALS, chunk_len(n, c), deadline, err);
	/* down: chunk by chunk to every child, so they move on together */
	for (size_t c = 0; !rc && c < nchunks(n); c++)
		for (int k = 0; !rc && k < nk; k++)
			rc = group_send_msg(g, kids[k], vals + c * CHUNK_VALS, chunk_len(n, c),
					    deadline, err);
	/* landed before we go on: a peer may leave right after */
	if (!rc)
		rc = group_sends_acked(g, deadline, false, err);
out:
	free(kids);
	free(got);
	return rc;
}

int group_tree_sum(struct rc_group *g, uint64_t *vals, size_t n, struct rc_err *err)
{
	return tree_round(g, vals, n, err);
}

int rc_group_allgather_u64(struct rc_group *g, uint64_t mine, uint64_t *all, struct rc_err *err)
{
	uint64_t *vals = calloc((size_t)g->o.world, sizeof(uint64_t));
	int rc;

	if (!vals)
		return rc_err_set(err, ENOMEM, "out of memory");
	vals[g->o.rank] = mine;
	rc = tree_round(g, vals, (size_t)g->o.world, err);
	if (!rc)
		memcpy(all, vals, (size_t)g->o.world * sizeof(*all));
	free(vals);
	return rc;
}

int rc_group_barrier(struct rc_group *g, struct rc_err *err)
{
	uint64_t token = 0;
	double t0 = rc_now();
	int rc = tree_round(g, &token, 1, err);

	if (!rc && g->barrier_s < 0)
		g->barrier_s = rc_now() - t0;
	return rc;
}

int rc_group_gather(struct rc_group *g, int root, const void *mine, size_t len, void *theirs,
		    bool *got, struct rc_err *err)
{
	double deadline;
	int rc;

	if ((rc = group_msg_round(g, len, &deadline, err)))
		return rc;
	if (g->o.rank != root) {
		struct gpeer *p = &g->peers[root];

		if (!p->c)
			return rc_err_set(err, EINVAL, "no connection to rank %d", root);
		if (p->dead)
			return group_peer_gone(g, root, "a report to it was due", err);
		if ((rc = group_send_msg(g, root, mine, len, deadline, err)))
			return rc;
		while (send_busy(g, p) && !p->dead) {
			rc = group_wait_slice(g, deadline, err);
			if (rc == -ETIMEDOUT)
				return rc_err_set(err, ETIMEDOUT,
						  "a message to %s was not acknowledged within %d ms",
						  gpeer_name(p), g->o.timeout_ms);
			if (rc)
				return rc;
		}
		return p->dead ? group_peer_gone(g, root, "a report to it was due", err) : 0;
	}
	memcpy((char *)theirs + (size_t)root * len, mine, len);
	for (int j = 0; j < g->o.world; j++)
		got[j] = j == root;
	for (int k = 0; k < g->nconns; k++) {
		int j = g->conn_rank[k];
		struct rc_err e;

		/* A late rank's report may sit in the queue still: each peer gets
		 * a short grace past the common deadline. */
		double until = deadline > rc_now() + 0.5 ? deadline : rc_now() + 0.5;

		rc = group_take_msg(g, j, (char *)theirs + (size_t)j * len, len, until, &e);
		if (rc == -ECONNABORTED)
			return rc_err_set(err, ECONNABORTED, "%s", e.msg);
		got[j] = rc == 0;
		if (rc)
			snprintf((char *)theirs + (size_t)j * len, len, "%s", e.msg);
	}
	return 0;
}

int rc_group_bcast(struct rc_group *g, int root, void *buf, size_t len, struct rc_err *err)
{
	double deadline;
	int rc;

	if ((rc = group_msg_round(g, len, &deadline, err)))
		return rc;
	if (g->o.rank != root) {
		if (!g->peers[root].c)
			return rc_err_set(err, EINVAL, "no connection to rank %d", root);
		return group_take_msg(g, root, buf, len, deadline, err);
	}
	for (int k = 0; k < g->nconns; k++) {
		int j = g->conn_rank[k];

		if (g->peers[j].dead && g->o.keep_going)
			continue;
		if ((rc = group_send_msg(g, j, buf, len, deadline, err)) &&
		    !(g->o.keep_going && g->peers[j].dead))
			return rc;
	}
	return group_sends_acked(g, deadline, g->o.keep_going, err);
}
