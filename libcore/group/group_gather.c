// SPDX-License-Identifier: MIT
/*
 * A gather up the group's tree (group_tree): each rank receives the blocks
 * of its children's subtrees, adds its own and sends them all to its
 * parent, in pieces of one control message; rank 0, the root, ends with
 * every rank's block. Unlike rc_group_gather it needs no connection
 * between rank 0 and every other rank, only the tree, so it works in a
 * partial group whose failed pairs include some of rank 0. And the way
 * back: rank 0's buffer down the same tree to every rank (rc_group_bcast_tree).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "group_int.h"
#include <rdmactl/group_core.h>

/* Whether rank j lies in the subtree of rank u. */
static bool below(const struct rc_group *g, int j, int u)
{
	for (int hops = 0; j >= 0 && hops <= g->o.world; hops++, j = g->parent[j])
		if (j == u)
			return true;
	return false;
}

/* The blocks of u's subtree, in rank order, between stage (a block a rank,
 * by rank) and the stream that travels (to_stream: stage to stream). */
static size_t subtree_copy(const struct rc_group *g, int u, char *stage, char *stream, size_t len,
			   bool to_stream)
{
	size_t n = 0;

	for (int j = 0; j < g->o.world; j++) {
		if (!below(g, j, u))
			continue;
		if (to_stream)
			memcpy(stream + n * len, stage + (size_t)j * len, len);
		else
			memcpy(stage + (size_t)j * len, stream + n * len, len);
		n++;
	}
	return n * len;
}

static size_t subtree_len(const struct rc_group *g, int u, size_t len)
{
	size_t n = 0;

	for (int j = 0; j < g->o.world; j++)
		n += below(g, j, u);
	return n * len;
}

/* The stream of n bytes from (take) or to peer j, piece by piece. */
static int stream_move(struct rc_group *g, int j, char *stream, size_t n, bool take,
		       double deadline, struct rc_err *err)
{
	for (size_t off = 0; off < n; off += RC_GROUP_MSG_MAX) {
		size_t piece = n - off < RC_GROUP_MSG_MAX ? n - off : RC_GROUP_MSG_MAX;
		int rc = take ? group_take_msg(g, j, stream + off, piece, deadline, err)
			      : group_send_msg(g, j, stream + off, piece, deadline, err);

		if (rc)
			return rc;
	}
	return 0;
}

int rc_group_gather_tree(struct rc_group *g, const void *mine, size_t len, void *theirs,
			 struct rc_err *err)
{
	int W = g->o.world, me = g->o.rank, up = g->parent[me], rc;
	char *stage = me == 0 ? theirs : calloc((size_t)W, len ? len : 1);
	char *stream = malloc((size_t)W * (len ? len : 1));
	double deadline;

	if (!stage || !stream) {
		rc = rc_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	if (g->depth < 0) {
		rc = rc_err_set(err, EPROTO, "the connection plan leaves ranks unreachable");
		goto out;
	}
	if ((rc = group_msg_round(g, len < RC_GROUP_MSG_MAX ? len : RC_GROUP_MSG_MAX, &deadline,
				  err)))
		goto out;
	memcpy(stage + (size_t)me * len, mine, len);
	for (int k = 0; k < W && !rc; k++) {
		if (k == me || g->parent[k] != me)
			continue;
		rc = stream_move(g, k, stream, subtree_len(g, k, len), true, deadline, err);
		if (!rc)
			subtree_copy(g, k, stage, stream, len, false);
	}
	if (!rc && up >= 0) {
		size_t n = subtree_copy(g, me, stage, stream, len, true);

		rc = stream_move(g, up, stream, n, false, deadline, err);
		/* landed before we go on: the parent may leave right after */
		if (!rc)
			rc = group_sends_acked(g, deadline, false, err);
	}
out:
	if (stage != theirs)
		free(stage);
	free(stream);
	return rc;
}

/* Rank 0's len bytes down the tree, in pieces of one control message: each
 * piece taken from the parent goes on to the children before the next is
 * awaited, so a long buffer flows through a deep tree as through a pipe,
 * and no rank holds more than the buffer it was given. */
size_t group_pieces(size_t len)
{
	return (len + RC_GROUP_MSG_MAX - 1) / RC_GROUP_MSG_MAX;
}

size_t group_piece_len(size_t len, size_t c)
{
	size_t left = len - c * RC_GROUP_MSG_MAX;

	return left < RC_GROUP_MSG_MAX ? left : RC_GROUP_MSG_MAX;
}

int rc_group_bcast_tree(struct rc_group *g, void *buf, size_t len, struct rc_err *err)
{
	int W = g->o.world, me = g->o.rank, up = g->parent[me], nk = 0, rc;
	int *kids = malloc((size_t)W * sizeof(int));
	double deadline;

	if (!kids)
		return rc_err_set(err, ENOMEM, "out of memory");
	if (g->depth < 0) {
		rc = rc_err_set(err, EPROTO, "the connection plan leaves ranks unreachable");
		goto out;
	}
	if ((rc = group_msg_round(g, len ? group_piece_len(len, 0) : 0, &deadline, err)))
		goto out;
	for (int k = 0; k < W; k++)
		if (k != me && g->parent[k] == me)
			kids[nk++] = k;
	for (size_t c = 0; !rc && c < group_pieces(len); c++) {
		char *piece = (char *)buf + c * RC_GROUP_MSG_MAX;
		size_t plen = group_piece_len(len, c);

		if (up >= 0)
			rc = group_take_msg(g, up, piece, plen, deadline, err);
		for (int k = 0; !rc && k < nk; k++)
			rc = group_send_msg(g, kids[k], piece, plen, deadline, err);
	}
	/* landed before we go on: a child may leave right after */
	if (!rc)
		rc = group_sends_acked(g, deadline, false, err);
out:
	free(kids);
	return rc;
}
