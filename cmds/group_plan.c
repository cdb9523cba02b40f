// SPDX-License-Identifier: MIT
/*
 * --plan of the group commands (alltoall, multicast): what each rank of a
 * job will hold and how its group comes together, before anything runs.
 * Every figure comes from libcore's own sizing (rc_group_plan_rank,
 * rc_group_plan_depth, and the command's buffer sizes), never from a
 * formula of its own here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group_cmds.h"

enum { Q_QPS, Q_CQS, Q_RECVS, Q_RING, Q_BUF, Q_REG, Q_ROUNDS, NQ };

struct plan_row {
	const char *key;
	const char *label;
};

static const struct plan_row rows[NQ] = {
	[Q_QPS] = { "qps", "QPs" },
	[Q_CQS] = { "cqs", "CQs" },
	[Q_RECVS] = { "recv_buffers", "receive buffers" },
	[Q_RING] = { "ring_bytes", "message ring bytes" },
	[Q_BUF] = { "buffer_bytes", NULL }, /* the command's own buffers: in->buf_what */
	[Q_REG] = { "registered_bytes", "registered bytes" },
	[Q_ROUNDS] = { "connect_rounds", "connect rounds" },
};

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* min, median and max of n values, and the first index holding the max
 * (at_key: a rank or a node), as one row: text columns and a JSON object.
 * sorted is scratch room for n values. */
static void put_row(struct out *o, const char *key, const char *label, const uint64_t *v, int n,
		    const char *at_key, uint64_t *sorted)
{
	int at = 0;

	for (int i = 1; i < n; i++)
		if (v[i] > v[at])
			at = i;
	memcpy(sorted, v, (size_t)n * sizeof(*v));
	qsort(sorted, (size_t)n, sizeof(*v), cmp_u64);
	out_obj_begin(o, key);
	out_text(o, "  %-24s", label);
	out_u64(o, "min", " %14llu", sorted[0]);
	out_u64(o, "median", " %14llu", sorted[(n - 1) / 2]);
	out_u64(o, "max", " %14llu", sorted[n - 1]);
	out_u64(o, at_key, " %8llu\n", (uint64_t)at);
	out_obj_end(o);
}

static uint64_t figure(const struct rc_group_plan *p, uint64_t buf, int q)
{
	switch (q) {
	case Q_QPS:
		return (uint64_t)p->qps;
	case Q_CQS:
		return (uint64_t)p->cqs;
	case Q_RECVS:
		return (uint64_t)p->recv_buffers;
	case Q_RING:
		return p->ring_bytes;
	case Q_BUF:
		return buf;
	case Q_REG:
		return p->ring_bytes + buf;
	default:
		return (uint64_t)p->connect_rounds;
	}
}

static void put_rank(struct out *o, const struct group_plan_in *in, int r)
{
	struct rc_group_plan p;

	rc_group_plan_rank(in->need, in->world, r, in->recv_depth, &p);
	out_obj_begin(o, "rank");
	out_u64(o, "rank", "# rank %llu:", (uint64_t)r);
	out_u64(o, "qps", " %llu QPs", (uint64_t)p.qps);
	out_u64(o, "cqs", p.cqs == 1 ? ", %llu CQ" : ", %llu CQs", (uint64_t)p.cqs);
	out_u64(o, "recv_buffers", ", %llu receive buffers", (uint64_t)p.recv_buffers);
	out_u64(o, "ring_bytes", " (%llu bytes of message rings)", p.ring_bytes);
	out_u64(o, "buffer_bytes", ", %llu bytes of ", in->buf_bytes[r]);
	out_text(o, "%s", in->buf_what);
	out_u64(o, "registered_bytes", ", %llu bytes registered;", p.ring_bytes + in->buf_bytes[r]);
	out_u64(o, "connects", " connects to %llu", (uint64_t)p.connects);
	out_u64(o, "connect_rounds", " (rounds: %llu)", (uint64_t)p.connect_rounds);
	out_u64(o, "accepts", ", accepts %llu\n", (uint64_t)p.accepts);
	out_obj_end(o);
}

/* The busiest node's sums: what one host and its NICs carry. */
static int put_nodes(struct out *o, const struct group_plan_in *in, const uint64_t *per,
		     uint64_t *sorted)
{
	int L = in->ranks_per_node, N = in->world / L;
	uint64_t *qps = calloc((size_t)N, sizeof(uint64_t)),
		 *reg = calloc((size_t)N, sizeof(uint64_t));

	if (!qps || !reg) {
		free(qps);
		free(reg);
		return -ENOMEM;
	}
	for (int r = 0; r < in->world; r++) {
		qps[r / L] += per[Q_QPS * (size_t)in->world + (size_t)r];
		reg[r / L] += per[Q_REG * (size_t)in->world + (size_t)r];
	}
	out_obj_begin(o, "per_node");
	out_u64(o, "nodes", "# per node: %llu nodes", (uint64_t)N);
	out_u64(o, "ranks_per_node", " of %llu ranks\n", (uint64_t)L);
	put_row(o, "qps", "QPs", qps, N, "max_node", sorted);
	put_row(o, "registered_bytes", "registered bytes", reg, N, "max_node", sorted);
	out_obj_end(o);
	free(qps);
	free(reg);
	return 0;
}

int group_plan_print(struct ctx *ctx, const struct group_plan_in *in)
{
	struct out *o = &ctx->out;
	int W = in->world, depth, rounds = 0, at_once = 0, rc = 0;
	uint64_t *per = malloc((size_t)(NQ + 1) * (size_t)W * sizeof(uint64_t)), *sorted;
	uint64_t sum[NQ] = { 0 };

	if (!per)
		return fail(ctx, -ENOMEM, "out of memory");
	sorted = per + (size_t)NQ * (size_t)W;
	for (int r = 0; r < W; r++) {
		struct rc_group_plan p;

		rc_group_plan_rank(in->need, W, r, in->recv_depth, &p);
		for (int q = 0; q < NQ; q++) {
			per[(size_t)q * (size_t)W + (size_t)r] = figure(&p, in->buf_bytes[r], q);
			sum[q] += figure(&p, in->buf_bytes[r], q);
		}
		if (p.connect_rounds > rounds)
			rounds = p.connect_rounds;
		at_once = p.connects_at_once;
	}
	depth = rc_group_plan_depth(in->need, W);
	if (depth == -ENOMEM) {
		free(per);
		return fail(ctx, -ENOMEM, "out of memory");
	}
	if (in->rank >= 0)
		put_rank(o, in, in->rank);
	out_text(o, "# %-24s %14s %14s %14s %8s\n", "per rank", "min", "median", "max", "max at");
	out_obj_begin(o, "per_rank");
	for (int q = 0; q < NQ; q++) {
		char label[64];

		snprintf(label, sizeof(label), "%s bytes", in->buf_what);
		put_row(o, rows[q].key, rows[q].label ? rows[q].label : label,
			per + (size_t)q * (size_t)W, W, "max_rank", sorted);
	}
	out_obj_end(o);
	out_obj_begin(o, "job");
	out_u64(o, "qps", "# job: %llu QPs", sum[Q_QPS]);
	out_u64(o, "connections", " (%llu connections)", sum[Q_QPS] / 2);
	out_u64(o, "cqs", sum[Q_CQS] == 1 ? ", %llu CQ" : ", %llu CQs", sum[Q_CQS]);
	out_u64(o, "recv_buffers", ", %llu receive buffers", sum[Q_RECVS]);
	out_u64(o, "ring_bytes", ", %llu bytes of message rings", sum[Q_RING]);
	out_u64(o, "registered_bytes", ", %llu bytes registered\n", sum[Q_REG]);
	out_u64(o, "connects_at_once", "# set-up: %llu connects at a time", (uint64_t)at_once);
	out_u64(o, "connect_rounds", ", rounds of them on the busiest rank: %llu", (uint64_t)rounds);
	if (depth >= 0)
		out_u64(o, "tree_depth", "; barrier and allgather: a tree of depth %llu\n",
			(uint64_t)depth);
	else {
		out_null(o, "tree_depth");
		out_text(o, "; the plan leaves ranks unreachable: no barrier\n");
	}
	out_obj_end(o);
	if (in->ranks_per_node > 0 && put_nodes(o, in, per, sorted))
		rc = fail(ctx, -ENOMEM, "out of memory");
	free(per);
	return rc;
}
