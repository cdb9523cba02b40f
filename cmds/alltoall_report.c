// SPDX-License-Identifier: MIT
/* rdmactl alltoall's figures: the text and JSON report in nccl-tests'
 * conventions, the rails', --metrics and the --svg heatmap. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alltoall.h"
#include "cmds.h"
#include "svg.h"

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

/* The token buffers' memory, and for GPU memory the registration path that
 * ran (register's keys and words) and whether blocks inside a node went
 * through the host. */
static void put_mem(struct out *o, const struct a2a_cli *a, const struct rc_a2a_result *r)
{
	bool gpu = a->run.mem.kind == RC_MEM_CUDA;
	bool staged = gpu && a->run.algo == RC_A2A_HIER;

	out_mem(o, "# token buffers: ", a->run.mem.kind, a->run.mem.gpu, r->reg, r->reg_notes);
	out_bool(o, "node_staged", NULL, staged);
	if (staged)
		out_text(o, "; inside a node, blocks are staged through host shared memory (receive "
			    "buffers there, copied out of the GPU by the CPU)");
	out_text(o, "\n");
}

/* Several rails: each one's figures (group_rail_begin) and QPs. */
static void report_rails(struct out *o, const struct a2a_cli *a, struct rc_group *const *g, int nr)
{
	out_arr_begin(o, "rails");
	for (int i = 0; i < nr; i++) {
		group_rail_begin(o, g, a->rail, nr, i);
		out_i64(o, "qps", ", %lld QPs", a->rail_qps[i]);
		group_rail_end(o, g, a->rail, nr, i);
	}
	out_arr_end(o);
}

void a2a_report(struct ctx *ctx, const struct a2a_cli *a, const struct rc_a2a_result *r,
		uint64_t wrong, struct rc_group *const *gs, int nr)
{
	struct rc_a2a_stats st;
	struct out *o = &ctx->out;
	int W = a->grp.who.world, n = a->run.iters;
	double *lat = r->lat_us, t = r->seconds / n, algbw, busbw;
	const struct rc_group *g = gs[0];
	const char *rdv_kind = rc_group_rdv_kind(g);
	char dev[RC_RAILS_MAX * 65];

	group_rail_devs(gs, nr, dev, sizeof(dev));

	rc_a2a_stats(a->counts, W, a->grp.who.rank, rc_a2a_token_bytes(a->run.hidden, a->run.dtype),
		     &st);
	qsort(lat, (size_t)n, sizeof(double), cmp_double);
	algbw = t > 0 ? st.size / t / 1e9 : 0;
	busbw = algbw * (W - 1) / W;
	const char *prov, *domain, *tp = rc_group_transport(g, &prov, &domain);

	out_text(o, "# alltoall: algo %s, %d ranks (%s), rendezvous %s, device %s%s%s%s\n",
		 rc_a2a_algo_name(a->run.algo), W, a->grp.who.source, rdv_kind, dev,
		 prov ? " over libfabric's " : "", prov ? prov : "", prov ? " provider" : "");
	out_str(o, "algo", NULL, rc_a2a_algo_name(a->run.algo));
	out_u64(o, "ranks", NULL, (uint64_t)W);
	out_u64(o, "rank", NULL, (uint64_t)a->grp.who.rank);
	out_str(o, "rank_source", NULL, a->grp.who.source);
	out_str(o, "rendezvous", NULL, rdv_kind);
	out_str(o, "device", NULL, dev);
	out_str(o, "transport", NULL, tp);
	out_str(o, "provider", NULL, prov ? prov : "verbs");
	out_str(o, "domain", NULL, domain ? domain : dev);
	out_text(o, "# %12s %10s %11s %11s %7s %10s %10s %12s %12s %9s\n", "size(B)", "time(us)",
		 "algbw(GB/s)", "busbw(GB/s)", "wrong", "p50(us)", "p99(us)", "peer_mean(B)",
		 "peer_max(B)", "imbalance");
	out_text(o, "  ");
	out_u64(o, "size_bytes", "%12llu ", (uint64_t)st.size);
	out_f64(o, "time_us", "%10.1f ", t * 1e6);
	out_f64(o, "algbw_gbyte_per_s", "%11.3f ", algbw);
	out_f64(o, "busbw_gbyte_per_s", "%11.3f ", busbw);
	out_u64(o, "wrong", "%7llu ", wrong);
	out_obj_begin(o, "lat_us");
	out_f64(o, "p50", "%10.1f ", lat[(n - 1) / 2]);
	out_f64(o, "p99", "%10.1f ", lat[(int)((n - 1) * 0.99 + 0.5)]);
	out_obj_end(o);
	out_obj_begin(o, "bytes_per_peer");
	out_u64(o, "mean", "%12llu ", st.peer_mean);
	out_u64(o, "max", "%12llu ", st.peer_max);
	out_obj_end(o);
	out_f64(o, "imbalance", "%9.2f\n", st.imbalance);
	out_u64(o, "iters", NULL, (uint64_t)n);
	out_f64(o, "seconds", NULL, r->seconds);
	out_i64(o, "rail_count", NULL, nr);
	out_u64(o, "checked_tokens", NULL, r->checked);
	out_bool(o, "checked", NULL, a->run.check);
	out_text(o, "# %llu tokens (%llu bytes) checked on this rank, %llu wrong on all ranks\n",
		 (unsigned long long)r->checked, (unsigned long long)r->checked_bytes,
		 (unsigned long long)wrong);
	put_mem(o, a, r);
	a2a_bg_report(o, a, r);
	if (nr > 1)
		report_rails(o, a, gs, nr);
	group_report(o, g);
}

/* The dispatch bytes from each rank to each (the skew at a glance): hot
 * blocks red, the rank's block to itself included. */
int a2a_draw(const struct a2a_cli *a)
{
	int W = a->grp.who.world, rc = -ENOMEM;
	size_t tb = rc_a2a_token_bytes(a->run.hidden, a->run.dtype), N = (size_t)W;
	double *val = calloc(N * N, sizeof(double));
	char **labels = calloc(N, sizeof(char *)), title[160];
	struct rc_a2a_stats st;
	double mean = 0;

	if (!val || !labels)
		goto out;
	for (int i = 0; i < W; i++) {
		if (!(labels[i] = malloc(24)))
			goto out;
		snprintf(labels[i], 24, "rank %d", i);
	}
	for (size_t k = 0; k < N * N; k++)
		val[k] = (double)a->counts[k] * (double)tb / 1e6;
	rc_a2a_stats(a->counts, W, 0, tb, &st);
	for (size_t k = 0; k < N * N; k++)
		mean += val[k] / (double)(N * N);
	snprintf(title, sizeof(title), "rdmactl alltoall: dispatch MB per peer (%s, imbalance %.2f)",
		 rc_a2a_algo_name(a->run.algo), st.imbalance);
	struct svg_heatmap h = { .n = W,
				 .title = title,
				 .unit = "MB (10^6 bytes)",
				 .row_axis = "from (rank)",
				 .col_axis = "to (rank)",
				 .labels = (const char *const *)labels,
				 .value = val,
				 /* a hot block red: twice the mean block or more */
				 .ref = mean,
				 .bad_ratio = 0.5,
				 .ref_what = "the mean block" };

	rc = svg_heatmap_write(a->svg, &h);
out:
	for (int i = 0; labels && i < W; i++)
		free(labels[i]);
	free(labels);
	free(val);
	return rc;
}

/* --metrics: this rank's figures of its report, and the wrong tokens of all
 * ranks. */
#define ITER_ROW(key, scale, labels, suffix) \
	{ \
		key, "rdmactl_alltoall_iteration_seconds", METRIC_SUMMARY, \
			"one iteration, dispatch and combine", scale, labels, suffix \
	}
/* --background: a phase's latency idle and loaded, and their ratio */
#define BG_ROW(ph, state, q, qv) \
	{ \
		"background." ph "." state "." q "_us", "rdmactl_alltoall_phase_seconds", \
			METRIC_GAUGE, "--background: one phase of an iteration, idle or loaded", \
			1e-6, "phase=" ph ",state=" state ",quantile=" qv \
	}
#define LEAK_ROW(ph, q, qv) \
	{ \
		"background." ph ".leakage_" q, "rdmactl_alltoall_leakage_ratio", METRIC_GAUGE, \
			"--background: isolation leakage, the phase's loaded over idle latency", \
			0, "phase=" ph ",quantile=" qv \
	}
static const struct metric_row a2a_metric_rows[] = {
	{ "ranks", "rdmactl_alltoall_ranks", METRIC_GAUGE, "ranks in the group" },
	{ "size_bytes", "rdmactl_alltoall_size_bytes", METRIC_GAUGE,
	  "mean bytes a rank sends per iteration (dispatch and combine)" },
	{ "iters", "rdmactl_alltoall_iterations_total", METRIC_COUNTER, "timed iterations" },
	{ "seconds", "rdmactl_alltoall_duration_seconds", METRIC_GAUGE,
	  "the timed iterations together" },
	{ "algbw_gbyte_per_s", "rdmactl_alltoall_algbw_bytes_per_second", METRIC_GAUGE,
	  "algorithm bandwidth (nccl-tests' algbw)", 1e9 },
	{ "busbw_gbyte_per_s", "rdmactl_alltoall_busbw_bytes_per_second", METRIC_GAUGE,
	  "bus bandwidth (nccl-tests' busbw: algbw * (ranks - 1) / ranks)", 1e9 },
	ITER_ROW("lat_us.p50", 1e-6, "quantile=0.5", NULL),
	ITER_ROW("lat_us.p99", 1e-6, "quantile=0.99", NULL),
	ITER_ROW("seconds", 0, NULL, "_sum"),
	ITER_ROW("iters", 0, NULL, "_count"),
	{ "imbalance", "rdmactl_alltoall_imbalance_ratio", METRIC_GAUGE,
	  "max over mean of the dispatch bytes a rank receives" },
	{ "checked_tokens", "rdmactl_alltoall_checked_tokens_total", METRIC_COUNTER,
	  "tokens checked on this rank" },
	{ "wrong", "rdmactl_alltoall_wrong_tokens_total", METRIC_COUNTER,
	  "tokens that arrived wrong, all ranks" },
	BG_ROW("dispatch", "idle", "p50", "0.5"),
	BG_ROW("dispatch", "loaded", "p50", "0.5"),
	BG_ROW("combine", "idle", "p50", "0.5"),
	BG_ROW("combine", "loaded", "p50", "0.5"),
	BG_ROW("dispatch", "idle", "p99", "0.99"),
	BG_ROW("dispatch", "loaded", "p99", "0.99"),
	BG_ROW("combine", "idle", "p99", "0.99"),
	BG_ROW("combine", "loaded", "p99", "0.99"),
	BG_ROW("dispatch", "idle", "p999", "0.999"),
	BG_ROW("dispatch", "loaded", "p999", "0.999"),
	BG_ROW("combine", "idle", "p999", "0.999"),
	BG_ROW("combine", "loaded", "p999", "0.999"),
	LEAK_ROW("dispatch", "p50", "0.5"),
	LEAK_ROW("dispatch", "p99", "0.99"),
	LEAK_ROW("dispatch", "p999", "0.999"),
	LEAK_ROW("combine", "p50", "0.5"),
	LEAK_ROW("combine", "p99", "0.99"),
	LEAK_ROW("combine", "p999", "0.999"),
	{ "background.bytes", "rdmactl_alltoall_background_bytes_total", METRIC_COUNTER,
	  "--background: bulk bytes this rank wrote while the loaded iterations ran" },
	{ "rail_count", "rdmactl_alltoall_rails", METRIC_GAUGE, "rails this rank stripes over" },
	{ "rails[].bytes", "rdmactl_alltoall_rail_bytes_total", METRIC_COUNTER,
	  "bytes of the rail's slice this rank sent to other ranks", 0,
	  "rail={rail},device={device}" },
	{ "rails[].seconds", "rdmactl_alltoall_rail_seconds", METRIC_GAUGE,
	  "the timed iterations of the rail's slice", 0, "rail={rail},device={device}" },
};
const struct metric_table a2a_metric_table = METRIC_TABLE(a2a_metric_rows);
#undef ITER_ROW
#undef BG_ROW
#undef LEAK_ROW

void a2a_merge_rails(struct a2a_cli *a, int n, struct rc_a2a_result *res, struct rc_group *const *g)
{
	int W = a->grp.who.world;
	size_t tb = rc_a2a_token_bytes(a->run.hidden, a->run.dtype);
	uint64_t *sc = malloc((size_t)W * (size_t)W * sizeof(uint64_t));

	for (int i = 0; i < n; i++) {
		struct rc_a2a_stats st = { 0 };
		struct rc_group_stats gs;

		if (sc) {
			rc_a2a_slice_counts(a->counts, W, i, n, sc);
			rc_a2a_stats(sc, W, a->grp.who.rank, tb, &st);
		}
		rc_group_stats(g[i], &gs);
		a->rail[i] = (struct group_rail_fig){ .bytes = (st.my_send + st.my_recv) *
							       (uint64_t)a->run.iters,
						      .seconds = res[i].seconds };
		a->rail_qps[i] = gs.qps;
		if (!i)
			continue;
		for (int k = 0; k < a->run.iters; k++)
			if (res[i].lat_us[k] > res[0].lat_us[k])
				res[0].lat_us[k] = res[i].lat_us[k];
		if (res[i].seconds > res[0].seconds)
			res[0].seconds = res[i].seconds;
		res[0].wrong += res[i].wrong;
		res[0].checked += res[i].checked;
		res[0].checked_bytes += res[i].checked_bytes;
	}
	free(sc);
}
