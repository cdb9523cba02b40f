// SPDX-License-Identifier: MIT
/*
 * The relay tree of a multicast: every algorithm is a k-ary tree laid over
 * the ranks from the root on; flat is k = world - 1 (one level), a chain is
 * k = 1, a tree takes the fanout.
 */
#include <string.h>

#include <rdmactl/mcast.h>
#include <rdmactl/mcast_core.h>

const char *rc_mcast_algo_name(enum rc_mcast_algo a)
{
	switch (a) {
	case RC_MCAST_FLAT:
		return "flat";
	case RC_MCAST_CHAIN:
		return "chain";
	case RC_MCAST_TREE:
		return "tree";
	}
	return "?";
}

static int arity(const struct rc_mcast_shape *s)
{
	switch (s->algo) {
	case RC_MCAST_FLAT:
		return s->world > 1 ? s->world - 1 : 1;
	case RC_MCAST_CHAIN:
		return 1;
	case RC_MCAST_TREE:
		break;
	}
	return s->fanout > 0 ? s->fanout : 2;
}

static int pos_of(const struct rc_mcast_shape *s, int rank)
{
	return ((rank - s->root) % s->world + s->world) % s->world;
}

static int rank_at(const struct rc_mcast_shape *s, int pos)
{
	return (pos + s->root) % s->world;
}

int rc_mcast_parent(const struct rc_mcast_shape *s, int rank)
{
	int p = pos_of(s, rank);

	return p == 0 ? -1 : rank_at(s, (p - 1) / arity(s));
}

int rc_mcast_children(const struct rc_mcast_shape *s, int rank, int *kids)
{
	int k = arity(s), p = pos_of(s, rank), n = 0;

	for (long c = (long)k * p + 1; c <= (long)k * p + k && c < s->world; c++)
		kids[n++] = rank_at(s, (int)c);
	return n;
}

int rc_mcast_depth(const struct rc_mcast_shape *s)
{
	int d = 0;

	for (int r = 0; r < s->world; r++) {
		int h = 0;

		for (int x = r; rc_mcast_parent(s, x) >= 0; x = rc_mcast_parent(s, x))
			h++;
		if (h > d)
			d = h;
	}
	return d;
}

int rc_mcast_width(const struct rc_mcast_shape *s)
{
	/* a k-ary heap from the root: the root has the most children */
	int k = arity(s);

	return s->world - 1 < k ? s->world - 1 : k;
}

void rc_mcast_need(const struct rc_mcast_shape *s, uint8_t *need)
{
	int W = s->world;

	memset(need, 0, (size_t)W * (size_t)W);
	for (int r = 0; r < W; r++) {
		int p = rc_mcast_parent(s, r);

		if (p >= 0)
			need[r * W + p] = need[p * W + r] = 1;
		if (r != s->root)
			need[r * W + s->root] = need[s->root * W + r] = 1;
	}
}

uint64_t rc_mcast_ring_bytes(int ring, uint32_t chunk)
{
	return (uint64_t)(ring > 0 ? ring : 0) * chunk;
}

int rc_mcast_recv_depth(int ring)
{
	/* a write with immediate data takes a receive: a ring's worth, a credit
	 * and a stop in flight never wait for one */
	return ring + 8;
}

uint32_t rc_mcast_auto_chunk(const struct rc_mcast_shape *s, uint64_t size)
{
	int depth = rc_mcast_depth(s);
	uint64_t want = size / (16 + 8 * (uint64_t)(depth > 1 ? depth - 1 : 0));
	uint32_t c = RC_MCAST_CHUNK_MIN;

	while (c < RC_MCAST_CHUNK_MAX && (uint64_t)c * 2 <= want)
		c *= 2;
	return c;
}
