// SPDX-License-Identifier: MIT
/* Sizing a job before it runs (--plan): the connection plans of every
 * alltoall and multicast algorithm at 4096 ranks (symmetric, exactly the
 * peers each algorithm names), what rc_group_plan_rank says a rank holds
 * and sets up, the barrier tree's depth, and the buffers rc_a2a_reg_bytes
 * and rc_mcast_ring_bytes say the runs register, against sums written out
 * here the slow way. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/a2a.h>
#include <rdmactl/group.h>
#include <rdmactl/mcast.h>
#include <rdmactl/mcast_core.h>

#include "../../libcore/group/group_int.h"
#include "check.h"

#define W_MAX 4096
#define SLOT 1024 /* a control message's slot */

static uint8_t need[(size_t)W_MAX * W_MAX];

/* Symmetric, no rank connected to itself, and every connection made by
 * exactly one side: the lower rank connects, the higher accepts. */
static void symmetric(int W)
{
	uint64_t bad = 0, connects = 0, accepts = 0, qps = 0;

	for (int a = 0; a < W; a++) {
		struct rc_group_plan p;

		bad += need[(size_t)a * W + a] != 0;
		for (int b = a + 1; b < W; b++)
			bad += need[(size_t)a * W + b] != need[(size_t)b * W + a];
		rc_group_plan_rank(need, W, a, 0, &p);
		connects += (uint64_t)p.connects;
		accepts += (uint64_t)p.accepts;
		qps += (uint64_t)p.qps;
	}
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(connects, accepts);
	CHECK_EQ_U64(qps, 2 * connects);
}

/* Rank r's peers are exactly those peer(r, j) says. */
static void exactly(int W, bool (*peer)(int W, int r, int j, const void *arg), const void *arg)
{
	uint64_t bad = 0;

	for (int r = 0; r < W; r++)
		for (int j = 0; j < W; j++)
			bad += (r != j && peer(W, r, j, arg)) != (need[(size_t)r * W + j] != 0);
	CHECK_EQ_U64(bad, 0);
}

static bool ring_peer(int W, int r, int j, const void *arg)
{
	(void)arg;
	return j == (r + 1) % W || r == (j + 1) % W;
}

static bool hier_peer(int W, int r, int j, const void *arg)
{
	int L = *(const int *)arg;

	(void)W;
	return r / L == j / L || r % L == j % L;
}

static bool mcast_peer(int W, int r, int j, const void *arg)
{
	const struct rc_mcast_shape *s = arg;

	(void)W;
	return r == s->root || j == s->root || rc_mcast_parent(s, r) == j ||
	       rc_mcast_parent(s, j) == r;
}

/* CQs for a rank's connections: one shared while the device's largest CQ
 * holds their queues, a few when it does not, one each beyond GROUP_CQ_MAX. */
static void cq_counts(void)
{
	/* shared receive queues: the depth each, two receives a connection */
	CHECK_EQ_U64(group_srq_depth(10, 32), 52);
	CHECK_EQ_U64(group_shared_recvs(10, 1, 32), 52);
	CHECK_EQ_U64(group_shared_recvs(10, 3, 32), 3 * 32 + 20); /* 4, 3 and 3 connections */
	CHECK_EQ_U64(group_ring_len(10, 3, 32), (3 * 32 + 20 + 10) * SLOT);
	CHECK_EQ_U64(group_ring_len(10, 0, 32), 10 * 33 * SLOT); /* a ring each */
	/* a CQ holds its connections' sends, two receives each, and the depth */
	CHECK_EQ_U64(group_shared_cqs(4, 128, 32, 330), 2);
	CHECK_EQ_U64(group_shared_cqs(4, 128, 32, 32 + 4 * 130), 1);
	CHECK_EQ_U64(group_shared_cqs(4, 128, 32, 32 + 4 * 130 - 1), 2);
	CHECK_EQ_U64(group_cqs(0, 160, 32767), 0);
	CHECK_EQ_U64(group_cqs(3, 160, 32767), 1);
	CHECK_EQ_U64(group_cqs(204, 160, 32767), 1);   /* 204 * 160 = 32640 */
	CHECK_EQ_U64(group_cqs(205, 160, 32767), 2);   /* one more does not fit */
	CHECK_EQ_U64(group_cqs(1023, 160, 32767), 6);  /* rxe, EP1024 flat: 6, not 1023 */
	CHECK_EQ_U64(group_cqs(3264, 160, 32767), 16); /* the most that share */
	CHECK_EQ_U64(group_cqs(3265, 160, 32767), 3265);
	CHECK_EQ_U64(group_cqs(4095, 160, GROUP_PLAN_MAX_CQE), 1);
	CHECK_EQ_U64(group_cqs(5, 200, 100), 5); /* not even one connection fits */
	CHECK_EQ_U64(group_cqs(3, 4, 2), 3);
}

/* A peer's box: messages kept in order while it grows, past its wrap, and a
 * peer GROUP_BOX_MAX messages ahead refused as out of step. */
static void box_checks(void)
{
	struct gpeer p = { 0 };
	struct gmsg m = { 0 };
	struct rc_err e;
	uint32_t next = 0;

	for (uint32_t i = 0; i < 6; i++) {
		m.seq = i;
		CHECK(group_box_push(&p, 3, &m, &e) == 0);
	}
	CHECK(p.box_n == 6 && p.box_cap == 8);
	/* take 5, so that the ring wraps before it grows again */
	for (int i = 0; i < 5; i++) {
		CHECK_EQ_U64(p.box[p.box_head].seq, next++);
		p.box_head = (p.box_head + 1) % p.box_cap;
		p.box_n--;
	}
	for (uint32_t i = 6; i < 20; i++) {
		m.seq = i;
		CHECK(group_box_push(&p, 3, &m, &e) == 0);
	}
	CHECK(p.box_n == 15 && p.box_cap == 16);
	while (p.box_n) {
		CHECK_EQ_U64(p.box[p.box_head].seq, next++);
		p.box_head = (p.box_head + 1) % p.box_cap;
		p.box_n--;
	}
	CHECK_EQ_U64(next, 20);
	/* GROUP_BOX_MAX waiting is the most; one more is out of step */
	for (int i = 0; i < GROUP_BOX_MAX; i++)
		CHECK(group_box_push(&p, 3, &m, &e) == 0);
	CHECK(group_box_push(&p, 3, &m, &e) == -EPROTO);
	CHECK(strstr(e.msg, "rank 3 is out of step: 4096 of its control messages") != NULL);
	free(p.box);
}

static void a2a_plans(int W)
{
	int L = 8;
	struct rc_group_plan p;

	rc_a2a_need(RC_A2A_FLAT, W, 0, need);
	symmetric(W);
	/* flat: every other rank; rank 0 connects to them all, 16 at a time */
	rc_group_plan_rank(need, W, 0, 0, &p);
	CHECK_EQ_U64(p.qps, W - 1);
	CHECK_EQ_U64(p.cqs, 1); /* one CQ shared by every connection */
	CHECK_EQ_U64(p.connects, W - 1);
	CHECK_EQ_U64(p.accepts, 0);
	CHECK_EQ_U64(p.connects_at_once, 16);
	CHECK_EQ_U64(p.connect_rounds, (W - 1 + 15) / 16);
	/* one shared receive queue: the receive depth (32 by default) and two
	 * receives a peer; a send slot a peer (a receive ring each was 32 a
	 * peer: 131040 receives and 132 MiB at 4096) */
	CHECK_EQ_U64(p.recv_buffers, 32 + 2 * (W - 1));
	CHECK_EQ_U64(p.ring_bytes, (uint64_t)(32 + 3 * (W - 1)) * SLOT);
	rc_group_plan_rank(need, W, W - 1, 0, &p);
	CHECK(p.connects == 0 && p.accepts == W - 1 && p.connect_rounds == 0);
	CHECK_EQ_U64(rc_group_plan_depth(need, W), W == 4096 ? 4 : 2);

	rc_a2a_need(RC_A2A_RING, W, 0, need);
	symmetric(W);
	exactly(W, ring_peer, NULL);
	for (int r = 0; r < W; r += W / 8) {
		rc_group_plan_rank(need, W, r, 0, &p);
		CHECK_EQ_U64(p.qps, 2);
		CHECK_EQ_U64(p.ring_bytes, (32 + 2 * 3) * SLOT);
	}
	CHECK_EQ_U64(rc_group_plan_depth(need, W), W / 2);

	rc_a2a_need(RC_A2A_HIER, W, L, need);
	symmetric(W);
	exactly(W, hier_peer, &L);
	/* the node's other ranks, and one rail peer on every other node */
	rc_group_plan_rank(need, W, L + 3, 0, &p);
	CHECK_EQ_U64(p.qps, (L - 1) + (W / L - 1));
	CHECK(rc_group_plan_depth(need, W) >= 2 && rc_group_plan_depth(need, W) <= 6);
}

static void mcast_plans(int W)
{
	struct rc_mcast_shape shapes[] = {
		{ .algo = RC_MCAST_FLAT, .world = W, .root = 0 },
		{ .algo = RC_MCAST_CHAIN, .world = W, .root = 5 },
		{ .algo = RC_MCAST_TREE, .world = W, .root = 0, .fanout = 2 },
		{ .algo = RC_MCAST_TREE, .world = W, .root = W - 1, .fanout = 8 },
	};

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const struct rc_mcast_shape *s = &shapes[i];
		int kids[W_MAX], depth = rc_mcast_recv_depth(16);
		struct rc_group_plan p;

		rc_mcast_need(s, need);
		symmetric(W);
		exactly(W, mcast_peer, s);
		/* the root reaches every rank (the reports) */
		rc_group_plan_rank(need, W, s->root, depth, &p);
		CHECK_EQ_U64(p.qps, W - 1);
		CHECK_EQ_U64(p.recv_buffers, (uint64_t)24 + 2 * (W - 1));
		CHECK_EQ_U64(p.ring_bytes, (uint64_t)(24 + 3 * (W - 1)) * SLOT);
		/* a relay: its parent, its children, and the root when that is
		 * neither */
		for (int r = 0; r < W; r += 97) {
			int n = rc_mcast_children(s, r, kids), par = rc_mcast_parent(s, r);

			if (r == s->root)
				continue;
			rc_group_plan_rank(need, W, r, depth, &p);
			CHECK_EQ_U64(p.qps, 1 + n + (par != s->root));
		}
		CHECK(rc_group_plan_depth(need, W) >= 1);
	}
	CHECK_EQ_U64(rc_mcast_ring_bytes(16, 256 << 10), 4 << 20);
	CHECK_EQ_U64(rc_mcast_recv_depth(16), 24);
}

/* Ring staging of rank x, the slow way: in step s (1..W-2) it holds what
 * origin x - s still sends beyond it, in both phases and parities. */
static uint64_t ring_staging(const uint64_t *c, int W, int x)
{
	uint64_t n = 0;

	for (int ph = 0; ph < 2; ph++)
		for (int s = 1; s < W - 1; s++) {
			int o = ((x - s) % W + W) % W;

			for (int k = s + 1; k < W; k++) {
				int d = (o + k) % W;

				n += 2 * (ph == 0 ? c[(size_t)o * W + d] : c[(size_t)d * W + o]);
			}
		}
	return n;
}

static void a2a_buffers(void)
{
	enum { W = 6 };
	uint64_t c[W * W], bytes[W];
	struct rc_a2a_opts o = { .hidden = 256, .dtype = RC_A2A_BF16, .counts = c };
	size_t tb = rc_a2a_token_bytes(256, RC_A2A_BF16);
	struct rc_err e;

	for (int i = 0; i < W * W; i++)
		c[i] = (uint64_t)(i * 7 % 11) + (i % 5 == 0 ? 0 : 3);
	for (int algo = RC_A2A_FLAT; algo <= RC_A2A_HIER; algo++) {
		o.algo = (enum rc_a2a_algo)algo;
		o.ranks_per_node = 3;
		CHECK(rc_a2a_reg_bytes(&o, W, bytes, &e) == 0);
		for (int x = 0; x < W; x++) {
			uint64_t sent = 0, got = 0, stage = 0;
			size_t shm = 0;

			for (int j = 0; j < W; j++) {
				sent += c[x * W + j];
				got += c[j * W + x];
			}
			if (algo == RC_A2A_RING)
				stage = ring_staging(c, W, x);
			/* hierarchical: no staging (the rails write into the receive
			 * buffers), but the node's shared segment: its counters
			 * (4096 bytes) and every rank's receive buffers of both
			 * phases and parities */
			for (int d = (x / 3) * 3; algo == RC_A2A_HIER && d < (x / 3 + 1) * 3; d++)
				for (int j = 0; j < W; j++)
					shm += 2 * (c[j * W + d] + c[d * W + j]) * tb;
			CHECK_EQ_U64(bytes[x], 3 * (sent + got) * tb + stage * tb + 64 +
						       (shm ? 4096 + shm : 0));
		}
	}
	/* as the run refuses them */
	o.ranks_per_node = 4;
	CHECK(rc_a2a_reg_bytes(&o, W, bytes, &e) == -EINVAL);
	CHECK(strstr(e.msg, "6 ranks do not split into nodes of 4") != NULL);
	c[7] = 1ULL << 62;
	o.algo = RC_A2A_FLAT;
	CHECK(rc_a2a_reg_bytes(&o, W, bytes, &e) == -EINVAL);
}

/* The ring's staging at 4096 ranks, uniform routing: in W * W steps, not
 * W * W for each rank. */
static void a2a_wide(void)
{
	enum { W = 4096 };
	struct rc_a2a_route r = { .world = W, .tokens = 16, .experts = 8 * W, .topk = 2, .seed = 1 };
	uint64_t *c = malloc((size_t)W * W * sizeof(uint64_t)),
		 *bytes = malloc(W * sizeof(uint64_t));
	struct rc_a2a_opts o = { .algo = RC_A2A_RING, .hidden = 128, .counts = c };
	struct rc_err e;

	CHECK(c && bytes && rc_a2a_counts(&r, c, &e) == 0);
	CHECK(rc_a2a_reg_bytes(&o, W, bytes, &e) == 0);
	for (int x = 17; x < W; x += 1000) {
		uint64_t sent = 0, got = 0;

		for (int j = 0; j < W; j++) {
			sent += c[(size_t)x * W + j];
			got += c[(size_t)j * W + x];
		}
		CHECK_EQ_U64(bytes[x], (3 * (sent + got) + ring_staging(c, W, x)) * 256 + 64);
	}
	free(c);
	free(bytes);
}

int main(void)
{
	cq_counts();
	box_checks();
	a2a_plans(64);
	a2a_plans(4096);
	mcast_plans(64);
	mcast_plans(4096);
	a2a_buffers();
	a2a_wide();
	CHECK_DONE();
}
