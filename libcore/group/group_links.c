// SPDX-License-Identifier: MIT
/*
 * A partial group (rc_group_opts.partial): the pairs that could not connect,
 * each with its class of reason, and the agreement on them. Only the two
 * ranks of a failed pair know of it, yet the barrier's tree must be the same
 * on every rank: so the ranks tell each other the failed pairs they know of
 * over the connections that work, a few rounds, until neighbours hold the
 * same set (over a connected graph, then every rank does); the pairs leave
 * the plan and the tree is built again without them.
 */
#define _GNU_SOURCE /* strcasestr */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "group_int.h"
#include "rdv_int.h"
#include <rdmactl/group_core.h>

#define AGREE_ROUNDS 3 /* two to spread the failed pairs of a mesh, one to check */
#define CUT_MAX ((RC_GROUP_MSG_MAX - sizeof(uint32_t)) / (2 * sizeof(uint16_t)))

/* The failed pairs a rank knows of, as they travel. */
struct cut_msg {
	uint32_t n;
	uint16_t pair[CUT_MAX][2];
};
_Static_assert(sizeof(struct cut_msg) <= RC_GROUP_MSG_MAX, "failed pairs fit a control message");

const char *rc_link_name(enum rc_link k)
{
	switch (k) {
	case RC_LINK_UP:
		return "up";
	case RC_LINK_ROUTE:
		return "route";
	case RC_LINK_GID:
		return "gid";
	case RC_LINK_TIMEOUT:
		return "timeout";
	case RC_LINK_REFUSED:
		return "refused";
	default:
		return "other";
	}
}

static bool has(const char *msg, const char *word)
{
	return msg && strcasestr(msg, word);
}

enum rc_link rc_link_classify(int code, const char *msg)
{
	if (code == ECONNREFUSED || code == EKEYREJECTED || has(msg, "rejected") ||
	    has(msg, "refused"))
		return RC_LINK_REFUSED;
	if (code == ENODEV || code == EADDRNOTAVAIL || has(msg, "GID") ||
	    has(msg, strerror(ENODEV)) || has(msg, strerror(EADDRNOTAVAIL)))
		return RC_LINK_GID;
	/* the CM gave up on an unanswered request (UNREACHABLE, -ETIMEDOUT) */
	if (has(msg, "status -110)"))
		return RC_LINK_TIMEOUT;
	/* resolving the address or the route: no answer there is no route */
	if (code == EHOSTUNREACH || code == ENETUNREACH || code == EINVAL || has(msg, "route") ||
	    has(msg, "resolv") || has(msg, "unreachable") || has(msg, "through device"))
		return RC_LINK_ROUTE;
	if (code == ETIMEDOUT || has(msg, "no answer") || has(msg, "never"))
		return RC_LINK_TIMEOUT;
	return RC_LINK_OTHER;
}

enum rc_link rc_group_link(const struct rc_group *g, int peer, const char **why)
{
	const struct gpeer *p;

	if (why)
		*why = "";
	if (peer < 0 || peer >= g->o.world || !g->peers[peer].link)
		return RC_LINK_UP;
	p = &g->peers[peer];
	if (why)
		*why = p->why;
	return (enum rc_link)p->link;
}

static int pack(const uint8_t *cut, int W, struct cut_msg *m)
{
	memset(m, 0, sizeof(*m));
	for (int a = 0; a < W; a++)
		for (int b = a + 1; b < W; b++) {
			if (!cut[(size_t)a * (size_t)W + (size_t)b])
				continue;
			if (m->n >= CUT_MAX)
				return -E2BIG;
			m->pair[m->n][0] = (uint16_t)a;
			m->pair[m->n][1] = (uint16_t)b;
			m->n++;
		}
	return 0;
}

/* The pairs of m that cut does not hold yet, added; -EPROTO for a bad one. */
static int merge(uint8_t *cut, int W, const struct cut_msg *m)
{
	int added = 0;

	if (m->n > CUT_MAX)
		return -EPROTO;
	for (uint32_t k = 0; k < m->n; k++) {
		size_t a = m->pair[k][0], b = m->pair[k][1];

		if (a >= (size_t)W || b >= (size_t)W || a == b)
			return -EPROTO;
		added += !cut[a * (size_t)W + b];
		cut[a * (size_t)W + b] = cut[b * (size_t)W + a] = 1;
	}
	return added;
}

/* Rounds of telling the neighbours; the last one checks that they agree. */
static int agree(struct rc_group *g, uint8_t *cut, struct cut_msg *theirs, struct rc_err *err)
{
	int W = g->o.world, rc;
	struct cut_msg mine;

	for (int round = 0; round < AGREE_ROUNDS; round++) {
		bool differ = false;

		if (pack(cut, W, &mine))
			return rc_err_set(
				err, E2BIG,
				"more than %zu pairs failed to connect: too many to go around",
				CUT_MAX);
		if ((rc = rc_group_exchange(g, &mine, sizeof(mine), theirs, err)))
			return rc;
		for (int k = 0; k < g->nconns; k++) {
			int j = g->conn_rank[k];

			if ((rc = merge(cut, W, &theirs[j])) < 0)
				return rc_err_set(err, EPROTO,
						  "rank %d sent a bad list of failed pairs", j);
			differ = differ || rc > 0 || theirs[j].n != mine.n;
		}
		if (differ && round == AGREE_ROUNDS - 1)
			return rc_err_set(err, EPROTO,
					  "the ranks did not agree on the pairs that failed to connect "
					  "within %d rounds",
					  AGREE_ROUNDS);
	}
	return 0;
}

/* The ranks the tree does not reach, and this rank's own reason for one
 * of them (or, when it is one, for a pair of its own). */
static int cut_off(struct rc_group *g, struct rc_err *err)
{
	int W = g->o.world, own = -1;
	bool *have = calloc((size_t)W, sizeof(bool));
	char missing[256];

	if (!have)
		return rc_err_set(err, ENOMEM, "out of memory");
	for (int j = 0; j < W; j++)
		have[j] = g->parent[j] != -2;
	for (int j = 0; j < W && own < 0; j++)
		if (g->peers[j].link && (!have[j] || !have[g->o.rank]))
			own = j;
	ranks_missing(have, W, missing, sizeof(missing));
	free(have);
	if (own >= 0)
		return rc_err_set(
			err, EHOSTUNREACH,
			"rank %s cannot be reached over the pairs that connected (%s: %.300s)",
			missing, rc_link_name((enum rc_link)g->peers[own].link), g->peers[own].why);
	return rc_err_set(err, EHOSTUNREACH,
			  "rank %s cannot be reached over the pairs that connected", missing);
}

int group_agree_links(struct rc_group *g, struct rc_err *err)
{
	int W = g->o.world, me = g->o.rank, rc;
	size_t N = (size_t)W;
	uint8_t *cut = calloc(N * N, 1);
	struct cut_msg *theirs = calloc(N, sizeof(*theirs));

	if (!cut || !theirs) {
		rc = rc_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	for (int j = 0; j < W; j++)
		if (j != me && g->peers[j].link)
			cut[(size_t)me * N + (size_t)j] = cut[(size_t)j * N + (size_t)me] = 1;
	/* a rank with a failed pair spent the whole connect timeout on it, the
	 * others maybe none: they wait for it that long more */
	g->o.timeout_ms *= 2;
	rc = agree(g, cut, theirs, err);
	g->o.timeout_ms /= 2;
	if (rc)
		goto out;
	for (size_t k = 0; k < N * N; k++)
		if (cut[k])
			g->need[k] = 0;
	g->depth = group_tree(g->need, W, 0, GROUP_TREE_FANOUT, g->parent);
	if (g->depth == -ENOMEM)
		rc = rc_err_set(err, ENOMEM, "out of memory");
	else if (g->depth < 0)
		rc = cut_off(g, err);
out:
	free(cut);
	free(theirs);
	return rc;
}
