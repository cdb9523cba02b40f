// SPDX-License-Identifier: MIT
/* The SVG writer (svg.h): plain text out, no library. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "svg.h"

#define CELL 44
#define LABEL_W 190
#define TOP 70

void svg_escaped(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			/* control characters are not allowed in XML 1.0 */
			fputc((unsigned char)*s < 0x20 ? ' ' : *s, f);
		}
	}
}

void svg_begin(FILE *f, int width, int height, const char *title)
{
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n<title>",
		width, height, width, height);
	svg_escaped(f, title);
	fputs("</title>\n", f);
	svg_rect(f, 0, 0, width, height, "#ffffff", "none", 0, NULL);
}

void svg_rect(FILE *f, double x, double y, double w, double h, const char *fill, const char *stroke,
	      double stroke_width, const char *title)
{
	fprintf(f,
		"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" stroke=\"%s\" "
		"stroke-width=\"%.1f\"",
		x, y, w, h, fill, stroke, stroke_width);
	if (!title) {
		fputs("/>\n", f);
		return;
	}
	fputs("><title>", f);
	svg_escaped(f, title);
	fputs("</title></rect>\n", f);
}

void svg_text(FILE *f, double x, double y, const char *anchor, int size, const char *fill,
	      const char *text)
{
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\" fill=\"%s\">",
		x, y, anchor, size, fill);
	svg_escaped(f, text);
	fputs("</text>\n", f);
}

void svg_end(FILE *f)
{
	fputs("</svg>\n", f);
}

/* t in [0, 1], 0 worst: red, yellow, green. */
static void colour(double t, char *out, size_t cap)
{
	int r, g;

	t = t < 0 ? 0 : t > 1 ? 1 : t;
	r = t < 0.5 ? 215 : (int)(215 - (t - 0.5) * 2 * 189);
	g = t < 0.5 ? (int)(48 + t * 2 * 141) : (int)(189 - (t - 0.5) * 2 * 37);
	snprintf(out, cap, "#%02x%02x%02x", r, g, t < 0.5 ? 39 : (int)(39 + (t - 0.5) * 2 * 57));
}

static void bounds(const struct svg_heatmap *h, double *lo, double *hi)
{
	*lo = INFINITY;
	*hi = -INFINITY;
	for (int k = 0; k < h->n * h->n; k++)
		if (!isnan(h->value[k])) {
			*lo = h->value[k] < *lo ? h->value[k] : *lo;
			*hi = h->value[k] > *hi ? h->value[k] : *hi;
		}
}

/* Where value v stands from 0 (the worst) to 1 (the best): its ratio to
 * the reference, or its place between the least and the most. */
static double standing(const struct svg_heatmap *h, double v, double lo, double hi)
{
	double r, t;

	if (h->ref > 0) {
		r = h->high_good ? v / h->ref : v > 0 ? h->ref / v : 1;
		return h->bad_ratio < 1 ? (r - h->bad_ratio) / (1 - h->bad_ratio) : r >= 1;
	}
	t = hi > lo ? (v - lo) / (hi - lo) : 1;
	return h->high_good ? t : 1 - t;
}

static void cells(FILE *f, const struct svg_heatmap *h, double lo, double hi)
{
	char fill[16], num[32];

	for (int i = 0; i < h->n; i++)
		for (int j = 0; j < h->n; j++) {
			int k = i * h->n + j;
			double v = h->value[k], x = LABEL_W + j * CELL, y = TOP + i * CELL;
			bool mark = h->mark && h->mark[k];

			if (isnan(v)) {
				svg_rect(f, x, y, CELL, CELL, "#d0d0d0", "#ffffff", 1,
					 h->tip ? h->tip[k] : NULL);
				continue;
			}
			colour(standing(h, v, lo, hi), fill, sizeof(fill));
			svg_rect(f, x, y, CELL, CELL, fill, mark ? "#000000" : "#ffffff",
				 mark ? 4 : 1, h->tip ? h->tip[k] : NULL);
			snprintf(num, sizeof(num),
				 v >= 100  ? "%.0f"
				 : v >= 10 ? "%.1f"
					   : "%.2f",
				 v);
			svg_text(f, x + CELL / 2.0, y + CELL / 2.0 + 4, "middle", 11, "#000000",
				 num);
			if (mark)
				svg_text(f, x + CELL - 7, y + 13, "middle", 12, "#000000", "\u2716");
		}
}

/* The line under the cells that says what the colours mean. */
static void legend(FILE *f, const struct svg_heatmap *h, double lo, double hi)
{
	char line[240];

	if (h->ref > 0)
		snprintf(line, sizeof(line),
			 "colour: the ratio to %s (%.3g %s): green at 1x%s, red at %.2gx%s",
			 h->ref_what ? h->ref_what : "the reference", h->ref, h->unit,
			 h->high_good ? " or more" : " or less",
			 h->high_good ? h->bad_ratio : 1 / h->bad_ratio,
			 h->high_good ? " or less" : " or more");
	else if (hi >= lo)
		snprintf(line, sizeof(line), "scale: %.3g (red) to %.3g (green) %s",
			 h->high_good ? lo : hi, h->high_good ? hi : lo, h->unit);
	else
		return;
	svg_text(f, 10, TOP + h->n * CELL + 30, "start", 11, "#333333", line);
}

int svg_heatmap_write(const char *path, const struct svg_heatmap *h)
{
	/* at least room for the title and the legend */
	int w = LABEL_W + h->n * CELL + 20 > 560 ? LABEL_W + h->n * CELL + 20 : 560;
	int ht = TOP + h->n * CELL + 60;
	double lo, hi;
	char line[160];
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	bounds(h, &lo, &hi);
	svg_begin(f, w, ht, h->title);
	svg_text(f, 10, 24, "start", 16, "#000000", h->title);
	snprintf(line, sizeof(line), "rows: %s, columns: %s; %s%s", h->row_axis, h->col_axis,
		 h->unit, h->mark ? "; framed and crossed: outliers" : "");
	svg_text(f, 10, 44, "start", 11, "#333333", line);
	for (int i = 0; i < h->n; i++) {
		svg_text(f, LABEL_W - 6, TOP + i * CELL + CELL / 2.0 + 4, "end", 11, "#000000",
			 h->labels[i]);
		snprintf(line, sizeof(line), "%d", i);
		svg_text(f, LABEL_W + i * CELL + CELL / 2.0, TOP - 6, "middle", 11, "#000000", line);
	}
	cells(f, h, lo, hi);
	legend(f, h, lo, hi);
	svg_end(f);
	if (fclose(f))
		return -errno;
	return 0;
}

void svg_bytes(char *buf, size_t cap, uint64_t bytes)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = 0;

	while (u < 4 && v >= 1024) {
		v /= 1024;
		u++;
	}
	snprintf(buf, cap, v == floor(v) ? "%.0f %s" : v < 10 ? "%.2g %s" : "%.0f %s", v, units[u]);
}

double svg_tick_step(double hi, double *last)
{
	static const double mult[] = { 1, 2, 2.5, 5, 10 };
	double raw = (hi > 0 ? hi : 1) / 5, p = pow(10, floor(log10(raw))), step = 10 * p;

	for (int i = 0; i < 5; i++)
		if (mult[i] * p >= raw) {
			step = mult[i] * p;
			break;
		}
	*last = ceil((hi > 0 ? hi : 1) / step - 1e-9) * step;
	return step;
}

void svg_tick_label(char *buf, size_t cap, double v, double step, double last)
{
	bool s = last >= 1000; /* seconds from a second on */
	double u = s ? 1000 : 1;
	char num[32], *p;
	int d = 0;

	/* as many decimals as the step needs (0.25 two, 0.5 one, 50 none),
	 * less the zeros that end them: 0, 0.25, 0.5, 0.75, 1 */
	while (d < 6 && fabs(step / u * pow(10, d) - round(step / u * pow(10, d))) > 1e-6)
		d++;
	snprintf(num, sizeof(num), "%.*f", d, v / u);
	if (strchr(num, '.')) {
		for (p = num + strlen(num) - 1; *p == '0'; p--)
			*p = '\0';
		if (*p == '.')
			*p = '\0';
	}
	snprintf(buf, cap, "%s %s", num, s ? "s" : "ms");
}

#define ROW 24
#define PLOT_W 600

static double timeline_end(const struct svg_timeline *t)
{
	double hi = 0;

	for (int i = 0; i < t->n; i++)
		if (!isnan(t->end[i]) && t->end[i] > hi)
			hi = t->end[i];
	return hi > 0 ? hi : 1;
}

int svg_timeline_write(const char *path, const struct svg_timeline *t)
{
	int w = LABEL_W + PLOT_W + 40, ht = TOP + t->n * ROW + 50;
	double last, step = svg_tick_step(timeline_end(t), &last), scale = PLOT_W / last;
	char line[160];
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	svg_begin(f, w, ht, t->title);
	svg_text(f, 10, 24, "start", 16, "#000000", t->title);
	snprintf(line, sizeof(line), "one row a receiver: from its first chunk to its last%s",
		 t->marks ? "; ticks: blocks usable" : "");
	svg_text(f, 10, 44, "start", 11, "#333333", line);
	for (int k = 0; k * step <= last + step / 2; k++) {
		double x = LABEL_W + k * step * scale;

		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#cccccc\"/>\n",
			x, TOP - 4, x, TOP + t->n * ROW);
		svg_tick_label(line, sizeof(line), k * step, step, last);
		svg_text(f, x, TOP + t->n * ROW + 16, "middle", 10, "#333333", line);
	}
	for (int i = 0; i < t->n; i++) {
		double y = TOP + i * ROW;

		svg_text(f, LABEL_W - 6, y + ROW / 2.0 + 4, "end", 11, "#000000", t->labels[i]);
		if (isnan(t->start[i]) || isnan(t->end[i])) {
			svg_text(f, LABEL_W + 4, y + ROW / 2.0 + 4, "start", 11, "#d73027",
				 "no report");
			continue;
		}
		snprintf(line, sizeof(line), "%s: %.3f to %.3f ms", t->labels[i], t->start[i],
			 t->end[i]);
		svg_rect(f, LABEL_W + t->start[i] * scale, y + 4,
			 (t->end[i] - t->start[i]) * scale > 1 ? (t->end[i] - t->start[i]) * scale
							       : 1,
			 ROW - 8, t->bad && t->bad[i] ? "#d73027" : "#4575b4", "none", 0, line);
		for (int k = 0; t->marks && t->nmarks && k < t->nmarks[i]; k++)
			fprintf(f,
				"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000000\"/>\n",
				LABEL_W + t->marks[i][k] * scale, y + 2,
				LABEL_W + t->marks[i][k] * scale, y + ROW - 2);
	}
	svg_end(f);
	if (fclose(f))
		return -errno;
	return 0;
}
