// SPDX-License-Identifier: MIT
/*
 * sweep's judged matrix in the forms beside the report: the heatmap of
 * the bandwidths (--svg) and Prometheus' metrics (--metrics).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "svg.h"
#include "sweep_judged.h"

int sweep_heatmap(const struct judged *j, const char *path)
{
	int W = j->W, rc = -ENOMEM;
	double *val = calloc((size_t)W * (size_t)W, sizeof(double));
	bool *mark = calloc((size_t)W * (size_t)W, sizeof(bool));
	char **labels = calloc((size_t)W, sizeof(char *)),
	     **tips = calloc((size_t)W * W, sizeof(char *));

	if (!val || !mark || !labels || !tips)
		goto out;
	for (int a = 0; a < W; a++) {
		const struct rc_sweep_node *n = &j->res->nodes[a];

		if (!(labels[a] = malloc(160)))
			goto out;
		snprintf(labels[a], 160, "%d: %.40s %.24s:%d", a, n->host, n->dev, n->port);
		for (int b = 0; b < W; b++) {
			const struct rc_sweep_cell *c = cell(j, a, b);
			char words[128];

			val[a * W + b] = a == b || c->status ? NAN : rc_sweep_flow_gbit(c);
			mark[a * W + b] = j->v.why[a * W + b] != 0;
			if (!(tips[a * W + b] = malloc(256)))
				goto out;
			why_words(j->v.why[a * W + b], words, sizeof(words));
			if (a == b)
				snprintf(tips[a * W + b], 256, "rank %d", a);
			else if (c->status == RC_SWEEP_SKIPPED)
				snprintf(tips[a * W + b], 256, "%d -> %d: not asked for", a, b);
			else if (c->status)
				snprintf(tips[a * W + b], 256, "%d -> %d failed: %s", a, b, c->why);
			else
				snprintf(tips[a * W + b], 256,
					 "%d -> %d: %.3f Gb/s while flowing (%.3f on average), "
					 "WRITE %.1f us, READ %.1f us%s%s",
					 a, b, rc_sweep_flow_gbit(c), c->bw_gbit, c->wlat_p50_us,
					 c->rlat_p50_us, words[0] ? "; outlier: " : "", words);
		}
	}
	/* green at the fleet's median, red where a direction is judged slow */
	double med = j->v.bw_median, floor_ratio = j->v.bw_floor / med;
	struct svg_heatmap h = { .n = W,
				 .title = "rdmactl sweep: RDMA WRITE bandwidth while flowing",
				 .unit = "Gb/s",
				 .row_axis = "from (rank)",
				 .col_axis = "to (rank)",
				 .labels = (const char *const *)labels,
				 .value = val,
				 .mark = mark,
				 .tip = (const char *const *)tips,
				 .high_good = true,
				 .ref = med > 0 ? med : 0,
				 .bad_ratio = floor_ratio > 0 && floor_ratio < 1 ? floor_ratio : 0.5,
				 .ref_what = "the fleet's median" };

	rc = svg_heatmap_write(path, &h);
out:
	for (int k = 0; labels && k < W; k++)
		free(labels[k]);
	for (int k = 0; tips && k < W * W; k++)
		free(tips[k]);
	free(labels);
	free(tips);
	free(val);
	free(mark);
	return rc;
}

/* --metrics on rank 0: the verdict, the fleet, each direction's bandwidth
 * and median latencies. */
static double cell_bw_bytes(const struct rc_sweep_cell *c)
{
	return c->bw_gbit * 1e9 / 8;
}
static double cell_wlat_s(const struct rc_sweep_cell *c)
{
	return c->wlat_p50_us / 1e6;
}

/* One gauge family with a sample for each direction measured (FROM->TO). */
static void direction_family(struct metrics *m, const struct judged *j, const char *name,
			     const char *help, double (*value)(const struct rc_sweep_cell *))
{
	char dir[32];

	metrics_family(m, name, METRIC_GAUGE, help);
	for (int a = 0; a < j->W; a++)
		for (int b = 0; b < j->W; b++) {
			const struct rc_sweep_cell *c = cell(j, a, b);

			if (a == b || c->status)
				continue;
			snprintf(dir, sizeof(dir), "%d->%d", a, b);
			metrics_sample(m, "", "direction", dir, value(c));
		}
}

void sweep_metrics(struct metrics *m, const struct judged *j)
{
	metrics_gauge(m, "rdmactl_sweep_ranks", "ranks in the group", j->W);
	metrics_gauge(m, "rdmactl_sweep_rounds", "rounds of the schedule", j->res->rounds);
	metrics_gauge(m, "rdmactl_sweep_duration_seconds", "the whole sweep", j->res->seconds);
	metrics_gauge(m, "rdmactl_sweep_directions_measured", "directions measured", j->v.measured);
	metrics_gauge(m, "rdmactl_sweep_outliers", "directions judged outliers", j->v.outliers);
	metrics_gauge(m, "rdmactl_sweep_bad_nodes", "nodes most of whose pairs are outliers",
		      j->v.bad_nodes);
	metrics_gauge(m, "rdmactl_sweep_healthy", "1 when no direction is an outlier", j->v.healthy);
	if (j->v.measured)
		metrics_gauge(m, "rdmactl_sweep_write_median_bytes_per_second",
			      "the fleet's median RDMA WRITE bandwidth", j->v.bw_median * 1e9 / 8);
	direction_family(m, j, "rdmactl_sweep_write_bytes_per_second",
			 "RDMA WRITE bandwidth of each direction measured (FROM->TO)",
			 cell_bw_bytes);
	direction_family(m, j, "rdmactl_sweep_write_latency_p50_seconds",
			 "median 8-byte RDMA WRITE latency of each direction measured (FROM->TO)",
			 cell_wlat_s);
}
