// SPDX-License-Identifier: MIT
/*
 * A rank of an rdmactl sweep that keeps to the protocol up to the gather
 * (it joins, agrees on the options of sweep.bats' SMALL, exchanges its
 * buffer and a port of its own, sits through every round's barriers without
 * measuring) and then sends rank 0 a row and a node record whose
 * strings fill their fields with no NUL, a terminal escape among them
 * (tests/rxe/sweep.bats).
 *
 *   sweep_hostile RANK WORLD PEERS [TOKEN]
 *
 * PEERS: the peers file of the sweep's "file:" rendezvous. With
 * SWEEP_HOSTILE_ONLY=row or node, only that one is hostile (the other
 * zeros). Exits 0 once both are sent, 1 on a failure (printed), 2 on usage.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include <rdmactl/group.h>
#include <rdmactl/sweep.h>
#include <rdmactl/group_core.h>
#include <rdmactl/sweep_core.h>

#define BUF_LEN (4u << 20) /* room for the honest rank's writes */

struct remote_buf { /* libcore/sweep/sweep.c's */
	uint64_t addr;
	uint32_t rkey;
	uint32_t pad;
};

/* What cmds/sweep.c compares at the start (rc_group_agree), as rank 0 of
 * sweep.bats is given them: SMALL=(--duration 0.3 --msg-size 16K --depth 4
 * --lat-iters 40), no --iters, --load, --incast or --pairs. */
static const struct rc_group_setting agree[] = {
	{ .name = "--msg-size", .text = "16384" }, { .name = "--duration", .text = "0.3" },
	{ .name = "--iters", .text = "0" },        { .name = "--lat-iters", .text = "40" },
	{ .name = "--depth", .text = "4" },        { .name = "--load", .text = "none" },
	{ .name = "--incast", .text = "-1" },      { .name = "--pairs", .text = "" },
};

static int plan(void *arg, const struct rc_endpoint *all, int world, uint8_t *need,
		struct rc_err *err)
{
	(void)arg, (void)all, (void)err;
	for (int i = 0; i < world; i++)
		for (int j = 0; j < world; j++)
			need[(size_t)i * (size_t)world + (size_t)j] = i != j;
	return 0;
}

/* A field of cap bytes full: text, an escape, and no NUL. */
static void fill(char *f, size_t cap)
{
	static const char esc[] = "\033[2J\033]0;owned\007";

	memset(f, 'A', cap);
	memcpy(f, esc, sizeof(esc) - 1 < cap ? sizeof(esc) - 1 : cap);
}

static int sit_through(struct rc_group *g, int me, int world, struct rc_err *e)
{
	for (int r = 0; r < rc_sweep_rounds(world); r++)
		for (int ph = 0; ph < 2; ph++)
			if (rc_group_barrier(g, e) || rc_group_barrier(g, e))
				return -1;
	(void)me;
	return rc_group_barrier(g, e);
}

int main(int argc, char **argv)
{
	const char *only = getenv("SWEEP_HOSTILE_ONLY");
	char rdv[4200];
	struct rc_group_join j = { .timeout_ms = 20000, .partial = true, .plan = plan };
	struct rc_group_join_out how;
	struct rc_group *g = NULL;
	struct remote_buf mine, *theirs = NULL;
	struct rc_sweep_cell *row = NULL;
	uint64_t verdict[RC_GROUP_MAX];
	struct rc_sweep_node node = { .port = 1 };
	struct ibv_mr *mr = NULL;
	void *buf = NULL;
	struct rc_err e = { 0 };
	int rc = 1;

	if (argc < 4 || argc > 5)
		goto usage;
	j.rank = atoi(argv[1]);
	j.world = atoi(argv[2]);
	if (j.rank < 1 || j.world < 2 || j.rank >= j.world || j.world > RC_GROUP_MAX)
		goto usage;
	snprintf(rdv, sizeof(rdv), "file:%s", argv[3]);
	j.rendezvous = rdv;
	j.token = argc == 5 ? argv[4] : NULL;
	theirs = calloc((size_t)j.world, sizeof(*theirs));
	row = calloc((size_t)j.world, sizeof(*row));
	buf = calloc(1, BUF_LEN);
	if (!theirs || !row || !buf || rc_group_join(&j, &g, &how, &e)) {
		printf("join: %s\n", e.msg);
		goto out;
	}
	mr = ibv_reg_mr(rc_group_pd(g), buf, BUF_LEN,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr) {
		printf("cannot register the buffer\n");
		goto out;
	}
	mine = (struct remote_buf){ .addr = (uintptr_t)buf, .rkey = mr->rkey };
	/* a port key of its own (sweep.c's ports()): no pair of it takes turns */
	if (rc_group_agree(g, agree, (int)(sizeof(agree) / sizeof(agree[0])), &e) ||
	    rc_group_exchange(g, &mine, sizeof(mine), theirs, &e) ||
	    rc_group_allgather_u64(g, 0x5eed0000u + (uint64_t)j.rank, verdict, &e) ||
	    sit_through(g, j.rank, j.world, &e)) {
		printf("sweep: %s\n", e.msg);
		goto out;
	}
	for (int k = 0; k < j.world && (!only || !strcmp(only, "row")); k++) {
		row[k].status = -5;
		fill(row[k].why, sizeof(row[k].why));
	}
	if (!only || !strcmp(only, "node")) {
		fill(node.host, sizeof(node.host));
		fill(node.hostname, sizeof(node.hostname));
		fill(node.dev, sizeof(node.dev));
	}
	if (rc_group_gather_tree(g, row, (size_t)j.world * sizeof(*row), NULL, &e) ||
	    rc_group_gather_tree(g, &node, sizeof(node), NULL, &e)) {
		printf("gather: %s\n", e.msg);
		goto out;
	}
	printf("sent\n");
	/* rank 0's verdict, as every rank takes it (it never comes when rank 0
	 * refused what was sent) */
	if (rc_group_allgather_u64(g, 0, verdict, &e))
		printf("verdict: %s\n", e.msg);
	rc = 0;
out:
	if (mr)
		ibv_dereg_mr(mr);
	rc_group_close(g);
	free(buf);
	free(row);
	free(theirs);
	return rc;
usage:
	fprintf(stderr, "usage: sweep_hostile RANK WORLD PEERS [TOKEN]\n");
	return 2;
}
