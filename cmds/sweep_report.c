// SPDX-License-Identifier: MIT
/*
 * sweep's report: rank 0 judges the gathered matrix (rc_sweep_judge) and
 * prints the ranks, the fleet's figures and the matrices, then the verdict,
 * the named nodes, the outlier pairs (the worst first) and what to check
 * next, so that the verdict ends the text; -j puts the same in one
 * document with every matrix whole, every outlier with its reasons, and
 * the thresholds used.
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "sweep_judged.h"
#include "sweep_report.h"

static void rank_name(const struct judged *j, int i, char *buf, size_t cap)
{
	const struct rc_sweep_node *n = &j->res->nodes[i];

	snprintf(buf, cap, "rank %d (%.64s %s:%d%s%.40s)", i, n->host, n->dev, n->port,
		 n->hostname[0] ? " on " : "", n->hostname);
}

/* The slower port's link rate of a pair, 0 unknown. */
static double pair_rate(const struct judged *j, int a, int b)
{
	double x = j->rate[a], y = j->rate[b];

	return x > 0 && y > 0 ? (x < y ? x : y) : (x > 0 ? x : y);
}

static void put_node(struct out *o, const struct judged *j, int i)
{
	const struct rc_sweep_node *n = &j->res->nodes[i];

	out_obj_begin(o, NULL);
	out_i64(o, "rank", NULL, i);
	out_str(o, "host", NULL, n->host);
	out_str(o, "hostname", NULL, n->hostname);
	out_str(o, "device", NULL, n->dev);
	out_i64(o, "port", NULL, n->port);
	if (n->rate_gbit > 0)
		out_f64(o, "link_rate_gbit_per_s", NULL, n->rate_gbit);
	else
		out_null(o, "link_rate_gbit_per_s");
	out_obj_end(o);
}

/* One matrix of a field, null where there is none (the diagonal, a failure). */
static void put_matrix(struct out *o, const struct judged *j, const char *key, size_t off, bool frac)
{
	out_arr_begin(o, key);
	for (int a = 0; a < j->W; a++) {
		out_arr_begin(o, NULL);
		for (int b = 0; b < j->W; b++) {
			const struct rc_sweep_cell *c = cell(j, a, b);
			double x, rate = pair_rate(j, a, b);

			memcpy(&x, (const char *)c + off, sizeof(x));
			if (a == b || c->status || (frac && rate <= 0))
				out_null(o, NULL);
			else
				out_f64(o, NULL, NULL, frac ? x / rate : x);
		}
		out_arr_end(o);
	}
	out_arr_end(o);
}

static void put_counters(struct out *o, const struct judged *j)
{
	out_arr_begin(o, "counters");
	for (int a = 0; a < j->W; a++) {
		out_arr_begin(o, NULL);
		for (int b = 0; b < j->W; b++) {
			const struct rc_sweep_cell *c = cell(j, a, b);

			out_obj_begin(o, NULL);
			for (int k = 0; a != b && k < c->nctr && k < RC_SWEEP_CTR_MAX; k++)
				out_u64(o, c->ctr[k].name, NULL, c->ctr[k].delta);
			out_obj_end(o);
		}
		out_arr_end(o);
	}
	out_arr_end(o);
}

/* The text matrix of one field, row -> column. */
static void text_matrix(struct out *o, const struct judged *j, const char *title, size_t off)
{
	out_text(o, "# %s, row -> column:\n#     ", title);
	for (int b = 0; b < j->W; b++)
		out_text(o, " %8d", b);
	out_text(o, "\n");
	for (int a = 0; a < j->W; a++) {
		out_text(o, "# %3d ", a);
		for (int b = 0; b < j->W; b++) {
			const struct rc_sweep_cell *c = cell(j, a, b);
			double x;

			memcpy(&x, (const char *)c + off, sizeof(x));
			if (a == b)
				out_text(o, " %8s", "-");
			else if (c->status == RC_SWEEP_SKIPPED)
				out_text(o, " %8s", ".");
			else if (c->status)
				out_text(o, " %8s", "failed");
			else
				out_text(o, " %7.3g%s", x, j->v.why[a * j->W + b] ? "!" : " ");
		}
		out_text(o, "\n");
	}
}

static void put_outlier(struct out *o, const struct judged *j, int a, int b)
{
	const struct rc_sweep_cell *c = cell(j, a, b), *back = cell(j, b, a);
	unsigned why = j->v.why[a * j->W + b];
	char na[400], nb[400], words[128];

	rank_name(j, a, na, sizeof(na));
	rank_name(j, b, nb, sizeof(nb));
	why_words(why, words, sizeof(words));
	out_obj_begin(o, NULL);
	out_i64(o, "from", NULL, a);
	out_i64(o, "to", NULL, b);
	out_text(o, "  %s -> %s: ", na, nb);
	out_arr_begin(o, "reasons");
	for (int k = 0; k < WHY_BITS; k++)
		if (why & (1u << k))
			out_str(o, NULL, NULL, rc_sweep_why_name(1u << k));
	out_arr_end(o);
	if (c->status) {
		out_str(o, "error", "failed: %s", c->why);
	} else {
		out_f64(o, "write_gbit_per_s", "%.3f Gb/s", c->bw_gbit);
		out_f64(o, "write_flow_gbit_per_s", ", %.3f while flowing", rc_sweep_flow_gbit(c));
		out_f64(o, "of_median", " (%.2f of the fleet's median",
			rc_sweep_flow_gbit(c) / j->v.bw_median);
		if (!back->status)
			out_f64(o, "reverse_gbit_per_s", ", %.3f the other way)", back->bw_gbit);
		else
			out_text(o, ")");
		out_f64(o, "write_lat_p50_us", ", latency WRITE %.1f", c->wlat_p50_us);
		out_f64(o, "read_lat_p50_us", " READ %.1f us", c->rlat_p50_us);
	}
	out_text(o, " [%s]", words);
	for (int k = 0; k < c->nctr && k < RC_SWEEP_CTR_MAX; k++)
		out_text(o, "%s%s +%llu", k ? ", " : "; counters moved: ", c->ctr[k].name,
			 (unsigned long long)c->ctr[k].delta);
	out_text(o, "\n");
	out_obj_end(o);
}

/* A rank of a failed pair, as the failures name it. */
static void put_pair_rank(struct out *o, const struct judged *j, int i)
{
	const struct rc_sweep_node *n = &j->res->nodes[i];

	out_obj_begin(o, NULL);
	out_i64(o, "rank", NULL, i);
	out_str(o, "host", NULL, n->host);
	out_str(o, "device", NULL, n->dev);
	out_obj_end(o);
}

/* The pairs that could not connect, each once, with the reason of the
 * rank that connected (the lower; the higher only waited for it). */
static void put_failed_pairs(struct out *o, const struct judged *j)
{
	char na[400], nb[400];

	out_arr_begin(o, "failed_pairs");
	for (int a = 0; a < j->W; a++)
		for (int b = a + 1; b < j->W; b++) {
			const struct rc_sweep_cell *c = cell(j, a, b), *back = cell(j, b, a);

			if (c->status != -ENOTCONN && back->status != -ENOTCONN)
				continue;
			if (c->status != -ENOTCONN || !c->link)
				c = back;
			rank_name(j, a, na, sizeof(na));
			rank_name(j, b, nb, sizeof(nb));
			out_obj_begin(o, NULL);
			out_text(o, "pair failed: %s - %s: ", na, nb);
			out_arr_begin(o, "ranks");
			put_pair_rank(o, j, a);
			put_pair_rank(o, j, b);
			out_arr_end(o);
			out_str(o, "reason", "%s: ", rc_link_name((enum rc_link)c->link));
			out_str(o, "error", "%s\n", c->why);
			out_obj_end(o);
		}
	out_arr_end(o);
}

static bool node_named(const struct judged *j, int a, int b)
{
	return j->v.node_bad[a] || j->v.node_bad[b];
}

/* What to look at, from the kinds of outliers found. */
static void advice(struct out *o, const struct judged *j)
{
	unsigned all = 0;

	for (int k = 0; k < j->W * j->W; k++)
		all |= j->v.why[k];
	out_arr_begin(o, "check_next");
	if (j->v.bad_nodes)
		out_str(o, NULL,
			"  - the named node: its NIC and cable (ethtool -S, rdma statistic, the port counters), its PCIe link (lspci -vv LnkSta), its NUMA placement (rdmactl probe-topology)\n",
			"node");
	if (all & (RC_SWEEP_SLOW | RC_SWEEP_BELOW_LINE))
		out_str(o, NULL,
			"  - a slow pair: the cables and switch ports between the two (their error counters), then rdmactl write --bench between them alone\n",
			"slow_pair");
	if (all & RC_SWEEP_ASYM)
		out_str(o, NULL,
			"  - an asymmetric pair: the sender of the slower direction (pause frames, transmit errors, its PCIe link)\n",
			"asymmetric");
	if (all & (RC_SWEEP_LAT | RC_SWEEP_LAT_MAX))
		out_str(o, NULL,
			"  - high latency: congestion or PFC pauses on the path, a longer route, interrupt moderation\n",
			"latency");
	if (all & RC_SWEEP_LEAK)
		out_str(o, NULL,
			"  - leakage: the blamed port's queue (its switch port's buffer and ECN marking, PFC, the congestion counters above), then rdmactl sweep --load same-pair between its pairs alone\n",
			"leakage");
	if (all & RC_SWEEP_FAILED)
		out_str(o, NULL,
			"  - a failed pair: the route and GID between them (rdmactl probe-topology on both hosts, ip route)\n",
			"failed");
	out_arr_end(o);
}

/* A ratio of the judgement, null when it is not judged. */
static void put_ratio(struct out *o, const char *key, double r)
{
	if (r < 0)
		out_null(o, key);
	else
		out_f64(o, key, NULL, r);
}

static void put_thresholds(struct out *o, const struct judged *j, const struct rc_sweep_limits *l)
{
	out_obj_begin(o, "thresholds");
	out_f64(o, "min_fraction", NULL, l->min_fraction);
	out_f64(o, "max_lat_us", NULL, l->max_lat_us);
	out_f64(o, "mad_k", NULL, l->mad_k);
	put_ratio(o, "slow_ratio", l->slow_ratio);
	out_f64(o, "lat_ratio", NULL, l->lat_ratio);
	put_ratio(o, "asym_ratio", l->asym_ratio);
	out_text(o, "# fleet: WRITE median %.3f Gb/s while flowing (MAD %.3f), ", j->v.bw_median,
		 j->v.bw_mad);
	if (j->v.measured && !j->v.bw_judged)
		out_text(o, "bandwidth not judged: no direction crosses a link (one port)");
	else if (isnan(j->v.bw_floor))
		out_text(o, "bandwidth not judged against it");
	else
		out_text(o, "slow below %.3f", j->v.bw_floor);
	out_text(o, "; latency median WRITE %.1f us, READ %.1f us, high above %.1f and %.1f us",
		 j->v.wlat_median, j->v.rlat_median, j->v.wlat_ceiling, j->v.rlat_ceiling);
	if (j->res->lat_retimed > 0)
		out_text(o,
			 " (%d direction%s above %.1fx the median timed again, the lower median kept)",
			 j->res->lat_retimed, j->res->lat_retimed == 1 ? "" : "s",
			 RC_SWEEP_RETIME_RATIO);
	if (j->v.measured) {
		if (isnan(j->v.bw_floor))
			out_null(o, "bw_floor_gbit_per_s");
		else
			out_f64(o, "bw_floor_gbit_per_s", NULL, j->v.bw_floor);
		out_f64(o, "write_lat_ceiling_us", NULL, j->v.wlat_ceiling);
		out_f64(o, "read_lat_ceiling_us", NULL, j->v.rlat_ceiling);
	}
	out_obj_end(o);
	if (l->min_fraction > 0)
		out_text(o, "; below %.2f of the link rate", l->min_fraction);
	if (l->max_lat_us > 0)
		out_text(o, "; latency above %.1f us", l->max_lat_us);
	out_text(o, "\n");
	out_obj_begin(o, "fleet");
	if (j->v.measured) {
		out_f64(o, "write_median_gbit_per_s", NULL, j->v.bw_median);
		out_f64(o, "write_mad_gbit_per_s", NULL, j->v.bw_mad);
		out_i64(o, "write_judged_directions", NULL, j->v.bw_judged);
		out_i64(o, "latency_retimed_directions", NULL, j->res->lat_retimed);
		out_f64(o, "write_lat_p50_median_us", NULL, j->v.wlat_median);
		out_f64(o, "read_lat_p50_median_us", NULL, j->v.rlat_median);
	}
	out_obj_end(o);
}

/* The worst first: failed directions, then by bandwidth against the
 * fleet's median, then by latency against its median. */
static double badness(const struct judged *j, int k)
{
	const struct rc_sweep_cell *c = &j->res->m[k];
	double bw = j->v.bw_median > 0 ? rc_sweep_flow_gbit(c) / j->v.bw_median : 1;
	double lat = j->v.wlat_median > 0 ? c->wlat_p50_us / j->v.wlat_median : 1;

	if (c->status)
		return -1e9;
	return bw < 1 ? bw - 1 : 0 - (lat > 1 ? lat - 1 : 0) / 1e3;
}

static int cmp_worst(const void *x, const void *y, void *arg)
{
	double a = badness(arg, *(const int *)x), b = badness(arg, *(const int *)y);

	return a < b ? -1 : a > b;
}

static void put_verdict(struct out *o, const struct judged *j)
{
	int W = j->W;
	char name[400];
	int *order = j->order, n = 0;
	int asked = 0, unconnected = 0;

	for (int i = 0; i < W; i++)
		asked += j->v.node_pairs[i];
	asked /= 2;
	for (int a = 0; a < W; a++)
		for (int b = a + 1; b < W; b++)
			unconnected += cell(j, a, b)->status == -ENOTCONN ||
				       cell(j, b, a)->status == -ENOTCONN;

	out_bool(o, "healthy", NULL, j->v.healthy);
	out_i64(o, "directions_measured", NULL, j->v.measured);
	out_i64(o, "pairs", NULL, asked);
	if (j->v.healthy)
		out_text(o, "verdict: healthy: %d directions of %d pairs measured, no outlier\n",
			 j->v.measured, asked);
	else if (unconnected)
		out_text(o,
			 "verdict: NOT healthy: %d of %d pairs could not connect; %d outlier directions in %d pairs, %d node%s named\n",
			 unconnected, asked, j->v.outliers, j->v.bad_pairs, j->v.bad_nodes,
			 j->v.bad_nodes == 1 ? "" : "s");
	else
		out_text(o,
			 "verdict: NOT healthy: %d outlier directions in %d of %d pairs, %d node%s named\n",
			 j->v.outliers, j->v.bad_pairs, asked, j->v.bad_nodes,
			 j->v.bad_nodes == 1 ? "" : "s");
	out_arr_begin(o, "bad_nodes");
	for (int i = 0; i < W; i++) {
		if (!j->v.node_bad[i])
			continue;
		rank_name(j, i, name, sizeof(name));
		out_obj_begin(o, NULL);
		out_i64(o, "rank", NULL, i);
		out_text(o, "node: %s: ", name);
		out_i64(o, "outlier_pairs", "%lld", j->v.node_outliers[i]);
		out_i64(o, "pairs", " of its %lld pairs are outliers\n", j->v.node_pairs[i]);
		out_obj_end(o);
	}
	out_arr_end(o);
	put_failed_pairs(o, j);
	out_arr_begin(o, "outliers");
	for (int a = 0; a < W; a++)
		for (int b = 0; b < W; b++)
			if (a != b && j->v.why[a * W + b])
				order[n++] = a * W + b;
	qsort_r(order, (size_t)n, sizeof(int), cmp_worst, (void *)j);
	for (int pass = 0; pass < 2; pass++) {
		bool header = false;

		for (int k = 0; k < n; k++) {
			int a = order[k] / W, b = order[k] % W;

			if (node_named(j, a, b) != (pass == 1))
				continue;
			if (!header)
				out_text(o, pass ? "pairs of the named nodes, the worst first:\n"
						 : "pairs, the worst first:\n");
			header = true;
			put_outlier(o, j, a, b);
		}
	}
	out_arr_end(o);
	if (!j->v.healthy)
		out_text(o, "check next:\n");
	advice(o, j);
}

static void put_head(struct out *o, const struct sweep_report *r, const struct judged *j)
{
	const struct rc_sweep_opts *run = r->run;

	out_text(o, "# sweep: %d ranks (%s), rendezvous %s, ", j->W, r->a_grp->who.source,
		 rc_group_rdv_kind(r->g));
	out_u64(o, "ranks", NULL, (uint64_t)j->W);
	out_u64(o, "rounds", "%llu rounds, ", (uint64_t)j->res->rounds);
	out_str(o, "rank_source", NULL, r->a_grp->who.source);
	out_str(o, "rendezvous", NULL, rc_group_rdv_kind(r->g));
	out_u64(o, "msg_size_bytes", "WRITEs of %llu bytes", run->msg_size);
	if (run->duration_s > 0)
		out_f64(o, "duration_s", " for %g s", run->duration_s);
	else
		out_u64(o, "iters", " x %llu", run->iters);
	out_u64(o, "depth", " (%llu outstanding)", (uint64_t)run->depth);
	out_u64(o, "lat_iters", ", %llu 8-byte WRITEs and READs", (uint64_t)run->lat_iters);
	out_f64(o, "seconds", " per direction; %.1f s in all\n", j->res->seconds);
	out_arr_begin(o, "nodes");
	for (int i = 0; i < j->W; i++) {
		char name[400];

		rank_name(j, i, name, sizeof(name));
		if (j->rate[i] > 0)
			out_text(o, "#   %s, link %g Gb/s\n", name, j->rate[i]);
		else
			out_text(o, "#   %s, link rate unknown\n", name);
		put_node(o, j, i);
	}
	out_arr_end(o);
}

/* --load --svg FILE: the latency CDFs beside the heatmap, in FILE less its .svg
 * and "-load.svg". */
static int load_svg(struct ctx *ctx, const struct sweep_report *r, const struct judged *j)
{
	size_t n = strlen(r->svg);
	char *path = malloc(n + 16);
	int rc = 0, d;

	if (!path)
		return fail(ctx, -ENOMEM, "out of memory");
	snprintf(path, n + 16, "%.*s-load.svg",
		 (int)(n > 4 && !strcmp(r->svg + n - 4, ".svg") ? n - 4 : n), r->svg);
	if ((d = sweep_load_svg(j, rc_sweep_load_name(r->run->load), path)))
		rc = fail(ctx, d, "--svg %s: %s", path, strerror(-d));
	else
		out_str(&ctx->out, "load_svg", "# latency CDFs idle and under load: %s\n", path);
	free(path);
	return rc;
}

int sweep_report(struct ctx *ctx, const struct sweep_report *r, uint8_t *healthy)
{
	struct out *o = &ctx->out;
	int W = r->res->world, rc = 0;
	size_t N = (size_t)W;
	struct judged j = { .W = W, .res = r->res };

	j.v.why = calloc(N * N, sizeof(unsigned));
	j.v.node_bad = calloc(N, sizeof(bool));
	j.v.node_outliers = calloc(N, sizeof(int));
	j.v.node_pairs = calloc(N, sizeof(int));
	j.rate = calloc(N, sizeof(double));
	j.order = calloc(N * N, sizeof(int));
	j.v.blamed = calloc(N, sizeof(int));
	if (!j.v.why || !j.v.node_bad || !j.v.node_outliers || !j.v.node_pairs || !j.rate ||
	    !j.order || !j.v.blamed) {
		rc = fail(ctx, -ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < W; i++)
		j.rate[i] = r->res->nodes[i].rate_gbit;
	if ((rc = rc_sweep_judge(W, r->res->m, j.rate, r->lim, &j.v))) {
		rc = fail(ctx, rc, "the sweep could not be judged");
		goto out;
	}
	*healthy = j.v.healthy;
	put_head(o, r, &j);
	put_thresholds(o, &j, r->lim);
	out_obj_begin(o, "matrices");
	text_matrix(o, &j, "RDMA WRITE bandwidth (Gb/s)", offsetof(struct rc_sweep_cell, bw_gbit));
	text_matrix(o, &j, "RDMA WRITE bandwidth while flowing, as judged (Gb/s)",
		    offsetof(struct rc_sweep_cell, bw_flow_gbit));
	text_matrix(o, &j, "8-byte WRITE latency p50 (us)",
		    offsetof(struct rc_sweep_cell, wlat_p50_us));
	text_matrix(o, &j, "8-byte READ latency p50 (us)",
		    offsetof(struct rc_sweep_cell, rlat_p50_us));
	put_matrix(o, &j, "write_gbit_per_s", offsetof(struct rc_sweep_cell, bw_gbit), false);
	put_matrix(o, &j, "write_flow_gbit_per_s", offsetof(struct rc_sweep_cell, bw_flow_gbit),
		   false);
	put_matrix(o, &j, "fraction_of_line_rate", offsetof(struct rc_sweep_cell, bw_gbit), true);
	put_matrix(o, &j, "write_lat_p50_us", offsetof(struct rc_sweep_cell, wlat_p50_us), false);
	put_matrix(o, &j, "write_lat_p99_us", offsetof(struct rc_sweep_cell, wlat_p99_us), false);
	put_matrix(o, &j, "read_lat_p50_us", offsetof(struct rc_sweep_cell, rlat_p50_us), false);
	put_matrix(o, &j, "read_lat_p99_us", offsetof(struct rc_sweep_cell, rlat_p99_us), false);
	put_counters(o, &j);
	out_obj_end(o);
	if (r->run->load)
		sweep_load_report(o, &j, r->run, r->lim);
	put_verdict(o, &j);
	if (r->svg) {
		int d = sweep_heatmap(&j, r->svg);

		if (d)
			rc = fail(ctx, d, "--svg %s: %s", r->svg, strerror(-d));
		else
			out_str(o, "svg", "# heatmap: %s\n", r->svg);
		if (!d && r->run->load)
			rc = load_svg(ctx, r, &j);
	}
out:
	free(j.v.why);
	free(j.v.node_bad);
	free(j.v.node_outliers);
	free(j.v.node_pairs);
	free(j.rate);
	free(j.order);
	free(j.v.blamed);
	return rc;
}
