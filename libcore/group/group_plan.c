// SPDX-License-Identifier: MIT
/*
 * What a group holds, as arithmetic: the message rings' size, the receive
 * depth, the completion queues and the rounds of connects. rc_group_connect
 * and rc_group_stats size the running group with these very functions, and
 * rc_group_plan_rank sizes one before it exists (--plan), so the two cannot
 * tell different stories.
 */
#include <errno.h>
#include <stdlib.h>

#include "group_int.h"
#include <rdmactl/group_core.h>

int group_recv_depth(int asked)
{
	return asked > 0 ? asked : GROUP_RECV_DEPTH;
}

int group_srq_depth(int conns, int recv_depth)
{
	return recv_depth + GROUP_SRQ_PER_CONN * conns;
}

/* Connection slots i, i + nsh, ...: shared CQ i's. */
static int conns_on(int nslots, int nsh, int i)
{
	return (nslots - i + nsh - 1) / nsh;
}

int group_shared_recvs(int nslots, int nsh, int recv_depth)
{
	int n = 0;

	for (int i = 0; i < nsh; i++)
		n += group_srq_depth(conns_on(nslots, nsh, i), recv_depth);
	return n;
}

size_t group_ring_len(int nslots, int nsh, int recv_depth)
{
	/* as group_rings lays them out in the message channel */
	struct rc_msgch_opts o = { .nconns = nslots,
				   .sends = 1,
				   .slot = GMSG_SLOT,
				   .shared_recvs = group_shared_recvs(nslots, nsh, recv_depth),
				   .recvs = nsh > 0 ? 0 : recv_depth };

	return rc_msgch_len(&o);
}

int group_shared_cqs(int nslots, int sq_depth, int recv_depth, long max_cqe)
{
	/* a CQ holds its connections' send queues and its receive queue */
	return group_cqs(nslots, (long)sq_depth + GROUP_SRQ_PER_CONN, max_cqe - recv_depth);
}

int group_cqs(int nconns, long per_conn, long max_cqe)
{
	long per_cq = per_conn > 0 ? max_cqe / per_conn : 0; /* connections a CQ holds */
	long n;

	if (nconns <= 0)
		return 0;
	if (per_cq < 1)
		return nconns;
	n = (nconns + per_cq - 1) / per_cq;
	return n <= GROUP_CQ_MAX ? (int)n : nconns;
}

int group_connect_rounds(int connects)
{
	return (connects + GROUP_CONNECT_AT_ONCE - 1) / GROUP_CONNECT_AT_ONCE;
}

void rc_group_plan_rank(const uint8_t *need, int world, int rank, int recv_depth,
			struct rc_group_plan *out)
{
	const uint8_t *row = need + (size_t)rank * (size_t)world;
	int depth = group_recv_depth(recv_depth), below = 0, above = 0, nsh;

	for (int j = 0; j < world; j++)
		if (j != rank && row[j])
			j < rank ? below++ : above++;
	nsh = group_shared_cqs(below + above, GROUP_SQ_DEPTH, depth, GROUP_PLAN_MAX_CQE);
	if (nsh > GROUP_CQ_MAX)
		nsh = 0; /* a CQ and a receive ring each */
	*out = (struct rc_group_plan){
		.qps = below + above,
		.cqs = nsh ? nsh : below + above,
		.recv_buffers = nsh ? group_shared_recvs(below + above, nsh, depth)
				    : (below + above) * depth,
		.ring_bytes = group_ring_len(below + above, nsh, depth),
		.connects = above,
		.accepts = below,
		.connects_at_once = GROUP_CONNECT_AT_ONCE,
		.connect_rounds = group_connect_rounds(above),
	};
}

int rc_group_plan_depth(const uint8_t *need, int world)
{
	int *parent = malloc((size_t)world * sizeof(int)), depth;

	if (!parent)
		return -ENOMEM;
	depth = group_tree(need, world, 0, GROUP_TREE_FANOUT, parent);
	free(parent);
	return depth;
}
