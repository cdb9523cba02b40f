// SPDX-License-Identifier: MIT
/*
 * Latency CDFs in an SVG: the empirical CDF of each distribution as a step
 * curve, on a log latency axis and a scale of nines (svg_cdf.h).
 */
#include <math.h>
#include <stdio.h>

#include "svg.h"
#include "svg_cdf.h"

void svg_cdf_fit(struct svg_cdf_plot *p, const struct rc_sweep_cdf *const *c, int n)
{
	double lo = INFINITY, hi = 0;
	int most = 0;

	for (int i = 0; i < n; i++) {
		if (!c[i] || c[i]->k < 1)
			continue;
		lo = c[i]->us[0] > 0 && c[i]->us[0] < lo ? c[i]->us[0] : lo;
		hi = c[i]->us[c[i]->k - 1] > hi ? c[i]->us[c[i]->k - 1] : hi;
		most = c[i]->n > most ? c[i]->n : most;
	}
	if (!(hi > 0) || isinf(lo))
		lo = 1, hi = 10;
	p->lo = pow(10, floor(log10(lo)));
	p->hi = pow(10, ceil(log10(hi)));
	if (!(p->hi > p->lo))
		p->hi = p->lo * 10;
	/* n samples resolve 1 - 1/n at most: log10(n) nines, the top past it */
	p->nines = most > 1 ? ceil(log10(most) + 0.5) : 2;
	p->nines = p->nines < 2 ? 2 : p->nines;
}

double svg_cdf_px(const struct svg_cdf_plot *p, double us)
{
	double v = us > p->lo ? (us < p->hi ? us : p->hi) : p->lo;

	return p->x + p->w * (log10(v) - log10(p->lo)) / (log10(p->hi) - log10(p->lo));
}

double svg_cdf_py(const struct svg_cdf_plot *p, double frac)
{
	double nines = frac >= 1 ? p->nines : frac > 0 ? -log10(1 - frac) : 0;

	return p->y + p->h - p->h * (nines < p->nines ? nines : p->nines) / p->nines;
}

static void grid_line(FILE *f, double x1, double y1, double x2, double y2)
{
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#cccccc\"/>\n",
		x1, y1, x2, y2);
}

void svg_cdf_axes(FILE *f, const struct svg_cdf_plot *p, const char *what)
{
	static const char *const pct[] = { "0", "90%", "99%", "99.9%", "99.99%", "99.999%" };
	char label[32];

	for (double d = p->lo; d <= p->hi * 1.0001; d *= 10) {
		double x = svg_cdf_px(p, d);

		grid_line(f, x, p->y, x, p->y + p->h);
		snprintf(label, sizeof(label), d < 1000 ? "%g us" : "%g ms",
			 d < 1000 ? d : d / 1000);
		svg_text(f, x, p->y + p->h + 16, "middle", 10, "#333333", label);
	}
	for (int k = 0; k < p->nines && k < 6; k++) {
		double y = svg_cdf_py(p, 1 - pow(10, -k));

		grid_line(f, p->x, y, p->x + p->w, y);
		svg_text(f, p->x - 6, y + 4, "end", 10, "#333333", pct[k]);
	}
	grid_line(f, p->x, svg_cdf_py(p, 0.5), p->x + p->w, svg_cdf_py(p, 0.5));
	svg_text(f, p->x - 6, svg_cdf_py(p, 0.5) + 4, "end", 10, "#333333", "50%");
	grid_line(f, p->x, p->y, p->x + p->w, p->y);
	svg_text(f, p->x - 6, p->y + 4, "end", 10, "#333333", "max");
	svg_text(f, p->x + p->w / 2, p->y + p->h + 34, "middle", 11, "#000000", what);
}

void svg_cdf_line(FILE *f, const struct svg_cdf_plot *p, const struct rc_sweep_cdf *c,
		  const char *colour, const char *dash, const char *tip)
{
	double below = 0;

	if (!c || c->k < 1)
		return;
	fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"", colour);
	if (dash && *dash)
		fprintf(f, " stroke-dasharray=\"%s\"", dash);
	fprintf(f, " points=\"");
	for (int i = 0; i < c->k; i++) {
		double x = svg_cdf_px(p, c->us[i]), at = (c->rank[i] + 1.0) / c->n;

		fprintf(f, "%.1f,%.1f %.1f,%.1f ", x, svg_cdf_py(p, below), x, svg_cdf_py(p, at));
		below = at;
	}
	fprintf(f, "\"><title>");
	svg_escaped(f, tip ? tip : "");
	fprintf(f, "</title></polyline>\n");
}

void svg_cdf_key(FILE *f, double x, double y, const char *colour, const char *dash,
		 const char *label)
{
	fprintf(f,
		"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
		"stroke-width=\"1.5\"",
		x, y - 4, x + 24, y - 4, colour);
	if (dash && *dash)
		fprintf(f, " stroke-dasharray=\"%s\"", dash);
	fprintf(f, "/>\n");
	svg_text(f, x + 30, y, "start", 11, "#000000", label);
}
