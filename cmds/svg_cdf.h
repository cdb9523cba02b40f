/* SPDX-License-Identifier: MIT */
/*
 * Latency CDFs in an SVG (svg_cdf.c): each distribution (struct
 * rc_sweep_cdf: every sample, or a bounded set of its quantiles) drawn as
 * the step curve of its empirical CDF, the latency on a log scale across,
 * the cumulative fraction up on a scale of nines (0, 50 %, 90 %, 99 %,
 * 99.9 %, ...), so that the tail gets as much room as the body; the
 * maximum sits on the top line.
 */
#ifndef RDMACTL_SVG_CDF_H
#define RDMACTL_SVG_CDF_H

#include <stdio.h>

#include <rdmactl/sweep.h>

struct svg_cdf_plot {
	double x, y, w, h; /* the plot's box */
	double lo, hi;     /* the latency axis, us: powers of ten */
	double nines;      /* the top line (the maximum): this many nines */
};

/* Fit the axes to the n distributions of c (NULL ones and empty ones
 * skipped): lo and hi the powers of ten around their samples, the top
 * half a decade past the most samples' last resolved fraction. */
void svg_cdf_fit(struct svg_cdf_plot *p, const struct rc_sweep_cdf *const *c, int n);
/* Where a latency and a cumulative fraction (0 to 1) land. */
double svg_cdf_px(const struct svg_cdf_plot *p, double us);
double svg_cdf_py(const struct svg_cdf_plot *p, double frac);
/* The grid, its labels and what the axes are ("8-byte WRITE, us"). */
void svg_cdf_axes(FILE *f, const struct svg_cdf_plot *p, const char *what);
/* One distribution as a polyline: from (its least sample, 0) up to each
 * point's fraction (rank + 1) / n and across to the next point's value;
 * dash: "" or a stroke-dasharray ("4 3"); tip: its tooltip. */
void svg_cdf_line(FILE *f, const struct svg_cdf_plot *p, const struct rc_sweep_cdf *c,
		  const char *colour, const char *dash, const char *tip);
/* A legend's entry at x, y: a stroke as svg_cdf_line draws it, then label. */
void svg_cdf_key(FILE *f, double x, double y, const char *colour, const char *dash,
		 const char *label);

#endif
