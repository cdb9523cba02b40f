/* SPDX-License-Identifier: MIT */
/* sweep's report on rank 0: the judgement, the text and the JSON document,
 * the heatmap. */
#ifndef RDMACTL_SWEEP_REPORT_H
#define RDMACTL_SWEEP_REPORT_H

#include <stdbool.h>

#include <rdmactl/sweep.h>

#include "cmd.h"
#include "output.h"
#include "group_cmds.h"
#include "metrics.h"

struct sweep_report {
	const struct group_args *a_grp;
	const struct rc_sweep_opts *run;
	const struct rc_sweep_limits *lim;
	const struct rc_sweep_result *res;
	const struct rc_group *g;
	const char *svg; /* the heatmap's file, or NULL */
};

/* Judge and print; *healthy gets the verdict (1 healthy, 0 not). 0, or
 * -errno after a failure (out of memory, the SVG not written). */
int sweep_report(struct ctx *ctx, const struct sweep_report *r, uint8_t *healthy);
/* --metrics on rank 0: the rows of the report, the verdict, the fleet, each
 * direction's bandwidth and median latency (sweep_export.c). */
extern const struct metric_table sweep_metric_table;

/* Each rank's congestion counters over the loaded phases: those that
 * moved, those that stayed, those its NIC lacks (sweep_incast.c). */
void sweep_put_cong(struct out *o, const struct rc_sweep_node *nodes, int world);
/* One port's moves (rc_cong_moved's): the "moved", "still" and "absent"
 * keys of the object open, and their text to the line's end. */
void sweep_put_cong_one(struct out *o, const struct rc_cong *d);
/* Its kinds that moved, as an object at key and " NAME +N" in text; how
 * many. */
int sweep_put_cong_moved(struct out *o, const char *key, const struct rc_cong *d);
/* A latency tail as the report writes it: samples, p50, p99, p99.9, max
 * (sweep_incast.c; sweep_load.c's loaded figures too). */
void sweep_put_tail(struct out *o, const char *key, const struct rc_sweep_tail *t);
/* Loaded over idle, the isolation leakage of one percentile (0 when the
 * idle one is not above 0). */
static inline double sweep_leak_of(double idle, double loaded)
{
	return idle > 0 ? loaded / idle : 0;
}
/* key: the tails idle and loaded and their leakage at p50, p99 and p99.9
 * (sweep --load's directions, alltoall --background's phases). */
void sweep_put_leak(struct out *o, const char *key, const struct rc_sweep_tail *idle,
		    const struct rc_sweep_tail *loaded);

/* --incast RANK: run it over g, rank 0 prints the steps and the knee and
 * draws them into svg (or NULL) (sweep_incast.c). 0 or -errno, printed. */
int sweep_incast(struct ctx *ctx, struct rc_group *g, int me, const struct group_args *grp,
		 const struct rc_sweep_opts *run, int receiver, const char *svg);

#endif
