// SPDX-License-Identifier: MIT
/*
 * The group's message channel and the completion queues its connections
 * share, made once the plan says which peers this rank connects with
 * (rc_group_connect); and the name each connection goes by in errors
 * (group_name_peer).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <rdmactl/config_core.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/group_core.h>

#include "group_int.h"

/*
 * One CQ, one completion channel and one shared receive queue for every
 * connection of the group (rc_poll_any finds a completion's connection by
 * its QP number), or a few when the device's largest CQ cannot hold all
 * their send queues and receives (connection slot k on CQ k % nsh); more
 * than GROUP_CQ_MAX, and each connection keeps its own CQ and receive ring.
 * The configuration's test_max_cqe (RDMACTL_TEST_MAX_CQE), when smaller than the device's, stands in for it
 * (the tests' way to a few CQs).
 */
static void group_shared_cq(struct rc_group *g)
{
	long max_cqe, test;
	struct ibv_device_attr da;
	int n;

	if (!g->nslots || ibv_query_device(g->l->verbs, &da))
		return;
	max_cqe = da.max_cqe;
	if ((test = rc_config()->test_max_cqe) > 0 && test < max_cqe)
		max_cqe = test;
	n = group_shared_cqs(g->nslots, g->o.sq_depth, g->o.recv_depth, max_cqe);
	if (n > GROUP_CQ_MAX)
		return;
	for (int i = 0; i < n; i++) {
		/* slots i, i + n, ...: the CQ's share of the connections */
		int conns = (g->nslots - i + n - 1) / n;
		int srq = group_srq_depth(conns, g->o.recv_depth);

		if (rc_shared_create(g->l->pd, conns * g->o.sq_depth + srq, srq, &g->sh[i], NULL)) {
			while (i-- > 0)
				rc_shared_destroy(g->sh[i]);
			memset(g->sh, 0, sizeof(g->sh));
			return;
		}
	}
	g->nsh = n;
}

/* The message channel of the peers this rank connects with (need, set):
 * one connection each of the verbs message channel (verbs/msgch_core.h), in
 * one registered area, with one send slot each; on shared CQs, the receive
 * slots shared through their receive queues (group_srq_depth each), else
 * recv_depth receive slots each. A peer's messages not yet taken wait in
 * its box, which grows as it needs to, to GROUP_BOX_MAX. */
int group_rings(struct rc_group *g, struct rc_err *err)
{
	int W = g->o.world, me = g->o.rank;
	struct rc_msgch_opts o = { .sends = 1,
				   .slot = GMSG_SLOT,
				   .min_len = offsetof(struct gmsg, data),
				   .max_len = sizeof(struct gmsg) };
	int rc;

	if (g->ch.o.slot)
		return rc_err_set(err, EINVAL, "the group is connected already");
	for (int j = 0; j < W; j++)
		if (j != me && g->need[(size_t)me * (size_t)W + (size_t)j])
			g->peers[j].slot = g->nslots++;
	group_shared_cq(g);
	o.nconns = g->nslots;
	if (g->nsh)
		o.shared_recvs = group_shared_recvs(g->nslots, g->nsh, g->o.recv_depth);
	else
		o.recvs = g->o.recv_depth;
	if ((rc = rc_msgch_init(&g->ch, &o, err)) || (rc = rc_msgch_reg(&g->ch, g->l->pd, err)))
		return rc;
	return g->nsh ? rc_msgch_share(&g->ch, g->sh, g->nsh, err) : 0;
}

void group_peer_text(char *out, size_t len, int j, const struct rc_endpoint *ep)
{
	char host[64];

	snprintf(host, sizeof(host), "%.63s", ep ? ep->host : "?");
	snprintf(out, len, "rank %d (%s:%.7s)", j, host, ep ? ep->port : "?");
}

void group_name_peer(struct rc_group *g, int j, const struct rc_endpoint *ep)
{
	struct rc_conn *c = g->peers[j].c;

	/* Every completion error from ops.c names c->peer: make it the rank. */
	group_peer_text(c->peer, sizeof(c->peer), j, ep);
}
