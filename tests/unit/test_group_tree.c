// SPDX-License-Identifier: MIT
/* The tree the group's barrier and allgather run on (libcore/group/
 * group_tree.c, compiled in), for worlds up to 4096: it spans the graph,
 * uses only its edges, keeps to 8 children a rank where the graph allows,
 * and is as shallow as an 8-ary heap on a complete graph; an unreachable
 * rank is found. */
#include <stdlib.h>
#include <string.h>

#include <rdmactl/a2a.h>
#include <rdmactl/mcast.h>

#include "../../libcore/group/group_tree.c"

#include "check.h"

#define FAN 8

/* Whether parent[] is a tree of need rooted at root; its children's most. */
static bool valid(const uint8_t *need, int W, int root, const int *parent, int *widest)
{
	int *kids = calloc((size_t)W, sizeof(int));
	bool ok = kids && parent[root] == -1;

	for (int v = 0; ok && v < W; v++) {
		int hops = 0;

		if (v == root)
			continue;
		if (parent[v] < 0 || parent[v] >= W || !need[(size_t)v * W + parent[v]])
			ok = false;
		else
			kids[parent[v]]++;
		/* it leads to the root, with no cycle */
		for (int x = v; ok && x != root; x = parent[x])
			if (++hops > W)
				ok = false;
	}
	*widest = 0;
	for (int u = 0; ok && u < W; u++)
		if (kids[u] > *widest)
			*widest = kids[u];
	free(kids);
	return ok;
}

static void complete(int W, int want_depth)
{
	uint8_t *need = malloc((size_t)W * W);
	int *parent = malloc((size_t)W * sizeof(int)), widest;

	rc_a2a_need(RC_A2A_FLAT, W, 0, need);
	CHECK_EQ_U64(group_tree(need, W, 0, FAN, parent), want_depth);
	CHECK(valid(need, W, 0, parent, &widest));
	CHECK(widest <= FAN);
	free(need);
	free(parent);
}

static void hierarchical(int W, int rpn)
{
	uint8_t *need = malloc((size_t)W * W);
	int *parent = malloc((size_t)W * sizeof(int)), *again = malloc((size_t)W * sizeof(int));
	int widest, d;

	rc_a2a_need(RC_A2A_HIER, W, rpn, need);
	d = group_tree(need, W, 0, FAN, parent);
	/* nodes of 8 and rails: a few levels at most, wherever it runs */
	CHECK(d >= 2 && d <= 6);
	CHECK(valid(need, W, 0, parent, &widest));
	CHECK(widest <= FAN);
	/* the same tree on every rank */
	CHECK_EQ_U64(group_tree(need, W, 0, FAN, again), d);
	CHECK(!memcmp(parent, again, (size_t)W * sizeof(int)));
	free(need);
	free(parent);
	free(again);
}

static void multicast(int W)
{
	struct rc_mcast_shape s = { .algo = RC_MCAST_TREE, .world = W, .root = 0, .fanout = 2 };
	uint8_t *need = malloc((size_t)W * W);
	int *parent = malloc((size_t)W * sizeof(int)), widest, d;

	rc_mcast_need(&s, need);
	d = group_tree(need, W, 0, FAN, parent);
	/* the relay tree plus the root's star: never deeper than the relay tree */
	CHECK(d >= 1 && d <= rc_mcast_depth(&s));
	CHECK(valid(need, W, 0, parent, &widest));
	CHECK(widest <= FAN);
	free(need);
	free(parent);
}

static void sparse(void)
{
	enum { R = 64 };
	static uint8_t need[R * R];
	int parent[R], widest;

	/* a ring: a path each way, depth W / 2 */
	rc_a2a_need(RC_A2A_RING, R, 0, need);
	CHECK_EQ_U64(group_tree(need, R, 0, FAN, parent), R / 2);
	CHECK(valid(need, R, 0, parent, &widest));
	CHECK(widest <= 2);
	/* a star: only the root reaches the others, so it takes them all */
	memset(need, 0, sizeof(need));
	for (int v = 1; v < R; v++)
		need[v] = need[v * R] = 1;
	CHECK_EQ_U64(group_tree(need, R, 0, FAN, parent), 1);
	CHECK(valid(need, R, 0, parent, &widest));
	CHECK_EQ_U64(widest, R - 1);
	/* a rank nobody connects to: found, and named by its parent -2 */
	need[5] = need[5 * R] = 0;
	CHECK(group_tree(need, R, 0, FAN, parent) == -1);
	CHECK(parent[5] == -2 && parent[4] == 0);
	/* a world of one: the root alone */
	CHECK_EQ_U64(group_tree(need, 1, 0, FAN, parent), 0);
	CHECK(parent[0] == -1);
}

int main(void)
{
	complete(9, 1);
	complete(10, 2);
	complete(73, 2);
	complete(585, 3);
	complete(4096, 4);
	hierarchical(64, 8);
	hierarchical(4096, 8);
	multicast(256);
	multicast(4096);
	sparse();
	CHECK_DONE();
}
