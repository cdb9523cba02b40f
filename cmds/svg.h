/* SPDX-License-Identifier: MIT */
/*
 * A small SVG writer: a document, rectangles, text (escaped), and a heatmap
 * of an n x n matrix with labelled rows and columns and marked cells. The
 * pictures of sweep (bandwidth matrix), alltoall and multicast are drawn
 * with it; the file opens in a browser and renders with rsvg-convert.
 */
#ifndef RDMACTL_SVG_H
#define RDMACTL_SVG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* XML-escaped text (& < > " ') written to f. */
void svg_escaped(FILE *f, const char *s);
void svg_begin(FILE *f, int width, int height, const char *title);
/* fill and stroke: CSS colours ("#rrggbb", "none"); title: a tooltip or NULL. */
void svg_rect(FILE *f, double x, double y, double w, double h, const char *fill, const char *stroke,
	      double stroke_width, const char *title);
/* anchor: "start", "middle" or "end". */
void svg_text(FILE *f, double x, double y, const char *anchor, int size, const char *fill,
	      const char *text);
void svg_end(FILE *f);

/* A heatmap: value[i * n + j] for row i, column j (NAN: none, drawn grey),
 * coloured from red (the worst) through yellow to green (the best);
 * high_good says which end is best. With ref > 0 (what is expected, e.g.
 * the fleet's median) a cell's colour is its ratio to ref (ref over it where
 * low is good): green at 1 and better, red at bad_ratio and worse, so that
 * a fleet of equals is green however its values spread; ref 0: from the
 * least value (red) to the most. mark[i * n + j] draws a thick frame and a
 * cross; tip[i * n + j] (or NULL) a tooltip per cell. */
struct svg_heatmap {
	int n;
	const char *title;
	const char *unit;          /* "Gbit/s" */
	const char *row_axis;      /* "from" */
	const char *col_axis;      /* "to" */
	const char *const *labels; /* n of them */
	const double *value;
	const bool *mark;       /* or NULL */
	const char *const *tip; /* or NULL */
	bool high_good;
	double ref;           /* 0: the scale runs from the least to the most */
	double bad_ratio;     /* with ref: red at this ratio (0 to 1) and worse */
	const char *ref_what; /* with ref: what it is ("the fleet's median") */
};
/* Write the heatmap as a whole document to path; 0 or -errno. */
int svg_heatmap_write(const char *path, const struct svg_heatmap *h);

/* A timeline: one row a label, a bar from start[i] to end[i] in
 * milliseconds (NAN: none, "no report" written instead), bad[i] (or NULL)
 * draws it red; marks[i] (nmarks[i] of them, or NULL) small ticks on the
 * bar (a block usable). The axis has round ticks (1, 2, 2.5 or 5 times a
 * power of ten) labelled with their unit, "250 ms", or "1.5 s" from a
 * second on. */
struct svg_timeline {
	int n;
	const char *title;
	const char *const *labels;
	const double *start;
	const double *end;
	const bool *bad;
	const double *const *marks;
	const int *nmarks;
};
int svg_timeline_write(const char *path, const struct svg_timeline *t);

/* bytes as a reader says them: "24 MiB", "1.5 GiB", "100 B". */
void svg_bytes(char *buf, size_t cap, uint64_t bytes);
/* The axis of a timeline of hi milliseconds: the step of its ticks and the
 * last tick (hi or past it); tick v's label into buf ("250 ms", "1.5 s"). */
double svg_tick_step(double hi, double *last);
void svg_tick_label(char *buf, size_t cap, double v, double step, double last);

#endif
