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
#include "sweep_report.h"

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

/* --metrics: rank 0's report, the verdict, the fleet, each direction's
 * bandwidth and median latency. */
static const struct metric_row sweep_metric_rows[] = {
	{ "ranks", "rdmactl_sweep_ranks", METRIC_GAUGE, "ranks in the group" },
	{ "rounds", "rdmactl_sweep_rounds", METRIC_GAUGE, "rounds of the schedule" },
	{ "seconds", "rdmactl_sweep_duration_seconds", METRIC_GAUGE, "the whole sweep" },
	{ "directions_measured", "rdmactl_sweep_directions_measured", METRIC_GAUGE,
	  "directions measured" },
	{ "outliers#", "rdmactl_sweep_outliers", METRIC_GAUGE, "directions judged outliers" },
	{ "bad_nodes#", "rdmactl_sweep_bad_nodes", METRIC_GAUGE,
	  "nodes most of whose pairs are outliers" },
	{ "healthy", "rdmactl_sweep_healthy", METRIC_GAUGE, "1 when no direction is an outlier" },
	{ "fleet.write_median_gbit_per_s", "rdmactl_sweep_write_median_bytes_per_second",
	  METRIC_GAUGE, "the fleet's median RDMA WRITE bandwidth", 1e9 / 8 },
	{ "matrices.write_gbit_per_s[][]", "rdmactl_sweep_write_bytes_per_second", METRIC_GAUGE,
	  "RDMA WRITE bandwidth of each direction measured (FROM->TO)", 1e9 / 8,
	  "direction={#0}->{#1}" },
	{ "matrices.write_lat_p50_us[][]", "rdmactl_sweep_write_latency_p50_seconds", METRIC_GAUGE,
	  "median 8-byte RDMA WRITE latency of each direction measured (FROM->TO)", 1e-6,
	  "direction={#0}->{#1}" },
};
const struct metric_table sweep_metric_table = METRIC_TABLE(sweep_metric_rows);
