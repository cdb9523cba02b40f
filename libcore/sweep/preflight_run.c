// SPDX-License-Identifier: MIT
/*
 * preflight over a group: every rank's record gathered to rank 0 up the
 * group's tree (bounded there before anything reads it), and the short
 * probe between neighbours, which is the sweep's own measurement asked for
 * the pairs of the ring only (rank i with i + 1); and rank 0's report sent
 * back down the tree to every rank (rc_pf_share), for -j on every rank.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/group_core.h>
#include <rdmactl/preflight.h>
#include <rdmactl/sweep_core.h>

int rc_pf_gather(struct rc_group *g, struct rc_pf_node *mine, struct rc_pf_node *all,
		 struct rc_err *err)
{
	const struct rc_endpoint *ep = rc_group_self(g);
	int W = rc_group_world(g), rc;

	mine->rank = rc_group_rank(g);
	snprintf(mine->host, sizeof(mine->host), "%s", ep->host);
	if (ep->hostname[0]) /* the peers file's name for the node, as sweep's */
		snprintf(mine->hostname, sizeof(mine->hostname), "%s", ep->hostname);
	if ((rc = rc_group_gather_tree(g, mine, sizeof(*mine), all, err)))
		return rc;
	if (mine->rank)
		return 0;
	for (int i = 0; i < W; i++) {
		rc_pf_node_bound(&all[i]);
		all[i].rank = i; /* where it landed, whatever it said */
	}
	return 0;
}

int rc_pf_gather_rails(struct rc_group *g, struct rc_pf_node *mine, int nmine,
		       struct rc_pf_node *all, int *n, struct rc_err *err)
{
	const struct rc_endpoint *ep = rc_group_self(g);
	int W = rc_group_world(g), me = rc_group_rank(g), rc;
	const int R = RC_PF_RAILS_MAX;

	*n = 0;
	for (int k = 0; k < R; k++) {
		if (k >= nmine)
			memset(&mine[k], 0, sizeof(mine[k]));
		mine[k].rank = me;
		snprintf(mine[k].host, sizeof(mine[k].host), "%s", ep->host);
		if (ep->hostname[0])
			snprintf(mine[k].hostname, sizeof(mine[k].hostname), "%s", ep->hostname);
	}
	mine[0].rails = nmine;
	if ((rc = rc_group_gather_tree(g, mine, sizeof(*mine) * (size_t)R, all, err)))
		return rc;
	if (me)
		return 0;
	for (int i = 0; i < W; i++) {
		struct rc_pf_node *rec = &all[(size_t)i * (size_t)R];
		int rails = rec[0].rails >= 1 && rec[0].rails <= R ? rec[0].rails : 1;

		/* compacted in place: row *n is never past record i * R */
		for (int k = 0; k < rails; k++) {
			struct rc_pf_node *x = &all[*n];

			if (x != &rec[k])
				*x = rec[k];
			rc_pf_node_bound(x);
			x->rank = i; /* where it landed, whatever it said */
			x->rail = k;
			x->rails = rails;
			if (k && (!x->loaded || !x->dev[0]))
				break; /* an empty rail: the rest are not read */
			++*n;
		}
	}
	return 0;
}

int rc_pf_probe(struct rc_group *g, const struct rc_pf_probe_opts *o, struct rc_sweep_result *res,
		struct rc_err *err)
{
	int W = rc_group_world(g), rc;
	uint8_t *want = calloc((size_t)W * (size_t)W, 1);
	struct rc_sweep_opts so = { .msg_size = o->msg_size ? o->msg_size : 65536,
				    .duration_s = o->duration_s > 0 ? o->duration_s : 0.25,
				    .depth = 16,
				    .lat_iters = o->lat_iters > 0 ? o->lat_iters : 50,
				    .sysfs = o->sysfs,
				    .progress = o->progress,
				    .progress_arg = o->progress_arg };

	if (!want)
		return rc_err_set(err, ENOMEM, "out of memory");
	for (int i = 0; i < W; i++) {
		int j = (i + 1) % W;

		if (i != j)
			want[(size_t)i * (size_t)W + (size_t)j] =
				want[(size_t)j * (size_t)W + (size_t)i] = 1;
	}
	so.want = want;
	rc = rc_sweep_run(g, &so, res, err);
	free(want);
	return rc;
}

void rc_pf_node_unknown(struct rc_pf_node *n)
{
	n->gid_index = n->netdev_mtu = n->roce_tos = n->rdma_ucm = -1;
	n->pkey = n->tclass = n->ecn_np = n->ecn_rp = -1;
	n->huge_total = n->huge_free = -1;
}

int rc_pf_share(struct rc_group *g, char **buf, size_t *len, size_t max, struct rc_err *err)
{
	bool root = rc_group_rank(g) == 0;
	uint64_t n = root ? *len : 0;
	char *copy = NULL;
	int rc;

	/* the length first: every rank then takes the same pieces, or none */
	if ((rc = rc_group_bcast_tree(g, &n, sizeof(n), err)))
		return rc;
	if (!n || n > max)
		return rc_err_set(err, EMSGSIZE,
				  "rank 0's report is %llu bytes, outside 1 to %zu: not shared",
				  (unsigned long long)n, max);
	if (!root && !(copy = malloc((size_t)n + 1)))
		return rc_err_set(err, ENOMEM, "out of memory");
	if ((rc = rc_group_bcast_tree(g, root ? *buf : copy, (size_t)n, err))) {
		free(copy);
		return rc;
	}
	if (!root) {
		copy[n] = '\0';
		*buf = copy;
		*len = (size_t)n;
	}
	return 0;
}
