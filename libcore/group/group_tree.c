// SPDX-License-Identifier: MIT
/*
 * The tree the barrier and the allgather run on: a spanning tree of the
 * connection graph, so they use only the connections the algorithm made and
 * take as many rounds as the tree is deep, not one message from every rank
 * into one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "group_int.h"

struct tree {
	const uint8_t *need;
	int W;
	int *parent, *kids, *depth, *q;
	int qt, reached, deepest;
};

static void adopt(struct tree *t, int u, int v)
{
	t->parent[v] = u;
	t->depth[v] = t->depth[u] + 1;
	t->kids[u]++;
	t->q[t->qt++] = v;
	t->reached++;
	if (t->depth[v] > t->deepest)
		t->deepest = t->depth[v];
}

/* The reached neighbour an unreached rank v joins: the shallowest, then the
 * one with the fewest children, then the lowest rank; -1 when none. */
static int best_parent(const struct tree *t, int v)
{
	int best = -1;

	for (int u = 0; u < t->W; u++) {
		if (u == v || t->parent[u] == -2 || !t->need[(size_t)v * (size_t)t->W + (size_t)u])
			continue;
		if (best < 0 || t->depth[u] < t->depth[best] ||
		    (t->depth[u] == t->depth[best] && t->kids[u] < t->kids[best]))
			best = u;
	}
	return best;
}

int group_tree(const uint8_t *need, int W, int root, int fanout, int *parent)
{
	struct tree t = { .need = need, .W = W, .parent = parent };
	int qh = 0, rc;

	t.kids = calloc((size_t)W, sizeof(int));
	t.depth = calloc((size_t)W, sizeof(int));
	t.q = calloc((size_t)W, sizeof(int));
	if (!t.kids || !t.depth || !t.q) {
		rc = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < W; i++)
		parent[i] = -2;
	parent[root] = -1;
	t.q[t.qt++] = root;
	t.reached = 1;
	for (;;) {
		int added = 0;

		/* breadth first, at most fanout children each */
		while (qh < t.qt) {
			int u = t.q[qh++];

			for (int v = 0; v < W && t.kids[u] < fanout; v++)
				if (v != u && parent[v] == -2 &&
				    need[(size_t)u * (size_t)W + (size_t)v])
					adopt(&t, u, v);
		}
		if (t.reached == W)
			break;
		/* ranks only full ranks reach: beyond the fan-out, then on */
		for (int v = 0; v < W; v++) {
			int u = parent[v] == -2 ? best_parent(&t, v) : -1;

			if (u >= 0) {
				adopt(&t, u, v);
				added++;
			}
		}
		if (!added)
			break;
	}
	rc = t.reached == W ? t.deepest : -1;
out:
	free(t.kids);
	free(t.depth);
	free(t.q);
	return rc;
}

int group_take_plan(struct rc_group *g, const uint8_t *need, struct rc_err *err)
{
	int W = g->o.world;

	for (int i = 0; i < W; i++)
		for (int j = 0; j < W; j++)
			if (need[i * W + j] != need[j * W + i])
				return rc_err_set(err, EINVAL,
						  "the connection plan is not symmetric");
	memcpy(g->need, need, (size_t)W * (size_t)W);
	g->depth = group_tree(g->need, W, 0, GROUP_TREE_FANOUT, g->parent);
	if (g->depth == -ENOMEM)
		return rc_err_set(err, ENOMEM, "out of memory");
	return 0;
}
