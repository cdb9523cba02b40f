/* SPDX-License-Identifier: MIT */
/* The judged sweep, shared by the report (sweep_report.c) and its other
 * forms (sweep_export.c). */
#ifndef RDMACTL_SWEEP_JUDGED_H
#define RDMACTL_SWEEP_JUDGED_H

#include <stdio.h>
#include <string.h>

#include <rdmactl/sweep.h>

#include "metrics.h"
#include "output.h"

#define WHY_BITS 7

struct judged {
	int W;
	const struct rc_sweep_result *res;
	struct rc_sweep_verdict v;
	double *rate;
	int *order; /* W * W: the outliers, the worst first */
};

static inline const struct rc_sweep_cell *cell(const struct judged *j, int a, int b)
{
	return &j->res->m[(size_t)a * (size_t)j->W + (size_t)b];
}

static inline void why_words(unsigned why, char *buf, size_t cap)
{
	buf[0] = 0;
	for (int b = 0; b < WHY_BITS; b++)
		if (why & (1u << b)) {
			strncat(buf, buf[0] ? ", " : "", cap - strlen(buf) - 1);
			strncat(buf, rc_sweep_why_name(1u << b), cap - strlen(buf) - 1);
		}
}

/* --svg: the bandwidth matrix as a heatmap, the outliers marked. 0 or
 * -errno (sweep_export.c). */
int sweep_heatmap(const struct judged *j, const char *path);

/* --load: the loaded latencies, the leakage, the blamed ports, the
 * congestion counters (sweep_load.c). */
void sweep_load_report(struct out *o, const struct judged *j, const struct rc_sweep_opts *run,
		       const struct rc_sweep_limits *lim);

/* --load --svg: each direction's WRITE and READ latency CDFs idle and
 * loaded (rc_sweep_result.cdf; -ENODATA without);
 * --incast --svg: goodput and Jain's index against N, the knee (-1: none)
 * marked, each step's slowest sender's latency CDF. 0 or -errno (sweep_load_svg.c). */
int sweep_load_svg(const struct judged *j, const char *mode, const char *path);
int sweep_incast_svg(const struct rc_incast_result *res, int knee, const char *path);

#endif
