// SPDX-License-Identifier: MIT
/*
 * The pictures of latency under load and of incast (--svg): each
 * direction's latency tail (p50, p99, p99.9, max on a log scale) idle and
 * loaded, a leaking direction in red; the incast's goodput against N as
 * bars, Jain's index as a line, the knee marked.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "svg.h"
#include "sweep_judged.h"
#include "sweep_report.h"

#define PW 560.0 /* the plot's width and height */
#define PH 300.0
#define PX 70.0 /* its left and top */
#define PY 60.0

static double log_y(double us, double lo, double hi)
{
	double v = us > lo ? us : lo;

	return PY + PH - PH * (log10(v) - log10(lo)) / (log10(hi) - log10(lo));
}

static void tail_line(FILE *f, const double *us, double lo, double hi, const char *colour,
		      const char *dash, const char *tip)
{
	fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"", colour,
		dash);
	for (int k = 0; k < 4; k++)
		fprintf(f, "%.1f,%.1f ", PX + PW * (k + 0.5) / 4, log_y(us[k], lo, hi));
	fprintf(f, "\"><title>");
	svg_escaped(f, tip);
	fprintf(f, "</title></polyline>\n");
}

static void tail_axes(FILE *f, double lo, double hi)
{
	static const char *const pct[] = { "p50", "p99", "p99.9", "max" };
	char label[32];

	for (double d = pow(10, floor(log10(lo))); d <= hi * 1.0001; d *= 10) {
		double y = log_y(d, lo, hi);

		if (d < lo)
			continue;
		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#cccccc\"/>\n",
			PX, y, PX + PW, y);
		snprintf(label, sizeof(label), "%g us", d);
		svg_text(f, PX - 6, y + 4, "end", 10, "#333333", label);
	}
	for (int k = 0; k < 4; k++)
		svg_text(f, PX + PW * (k + 0.5) / 4, PY + PH + 18, "middle", 11, "#000000", pct[k]);
}

int sweep_load_svg(const struct judged *j, const char *mode, const char *path)
{
	double lo = INFINITY, hi = 0;
	char tip[160], title[96];
	FILE *f;

	for (int k = 0; k < j->W * j->W; k++) {
		const struct rc_sweep_cell *c = &j->res->m[k];

		if (isnan(rc_sweep_leak(c, false)))
			continue;
		lo = c->wlat_p50_us < lo ? c->wlat_p50_us : lo;
		lo = c->wload.p50_us < lo ? c->wload.p50_us : lo;
		hi = c->wlat_max_us > hi ? c->wlat_max_us : hi;
		hi = c->wload.max_us > hi ? c->wload.max_us : hi;
	}
	if (!(hi > 0))
		lo = 1, hi = 10;
	lo = pow(10, floor(log10(lo > 0 ? lo : 1)));
	hi = pow(10, ceil(log10(hi)));
	if (!(f = fopen(path, "w")))
		return -errno;
	snprintf(title, sizeof(title), "rdmactl sweep --load %s: 8-byte WRITE latency tails", mode);
	svg_begin(f, (int)(PX + PW + 30), (int)(PY + PH + 60), title);
	svg_text(f, 10, 24, "start", 16, "#000000", title);
	svg_text(f, 10, 44, "start", 11, "#333333",
		 "one line a direction: grey dashed idle, blue loaded, red a leaking direction");
	tail_axes(f, lo, hi);
	for (int a = 0; a < j->W; a++)
		for (int b = 0; b < j->W; b++) {
			const struct rc_sweep_cell *c = cell(j, a, b);
			double idle[4] = { c->wlat_p50_us, c->wlat_p99_us, c->wlat_p999_us,
					   c->wlat_max_us },
			       load[4] = { c->wload.p50_us, c->wload.p99_us, c->wload.p999_us,
					   c->wload.max_us };
			bool leaks = j->v.why[a * j->W + b] & RC_SWEEP_LEAK;

			if (a == b || isnan(rc_sweep_leak(c, false)))
				continue;
			snprintf(tip, sizeof(tip), "%d -> %d idle: p50 %.1f p99 %.1f us", a, b,
				 idle[0], idle[1]);
			tail_line(f, idle, lo, hi, "#999999", " stroke-dasharray=\"4 3\"", tip);
			snprintf(tip, sizeof(tip),
				 "%d -> %d loaded: p50 %.1f p99 %.1f us (x%.2f)%s", a, b, load[0],
				 load[1], rc_sweep_leak(c, false), leaks ? ", leaks" : "");
			tail_line(f, load, lo, hi, leaks ? "#d73027" : "#4575b4", "", tip);
		}
	svg_end(f);
	return fclose(f) ? -errno : 0;
}

int sweep_incast_svg(const struct rc_incast_result *res, int knee, const char *path)
{
	double top = 0, bw = PW / (res->steps > 0 ? res->steps : 1);
	char text[96];
	FILE *f;

	for (int k = 0; k < res->steps; k++)
		top = res->step[k].goodput_gbit > top ? res->step[k].goodput_gbit : top;
	top = top > 0 ? top * 1.15 : 1;
	if (!(f = fopen(path, "w")))
		return -errno;
	svg_begin(f, (int)(PX + PW + 60), (int)(PY + PH + 60), "rdmactl sweep --incast");
	snprintf(text, sizeof(text), "rdmactl sweep --incast %d: goodput and fairness against N",
		 res->receiver);
	svg_text(f, 10, 24, "start", 16, "#000000", text);
	svg_text(f, 10, 44, "start", 11, "#333333",
		 "bars: the receiver's goodput (left axis); line: Jain's index (right, 0 to 1)");
	snprintf(text, sizeof(text), "%.3g Gb/s", top);
	svg_text(f, PX - 6, PY + 4, "end", 10, "#333333", text);
	svg_text(f, PX + PW + 6, PY + 4, "start", 10, "#333333", "1.0");
	svg_text(f, PX + PW + 6, PY + PH + 4, "start", 10, "#333333", "0");
	fprintf(f, "<polyline fill=\"none\" stroke=\"#000000\" stroke-width=\"2\" points=\"");
	for (int k = 0; k < res->steps; k++)
		fprintf(f, "%.1f,%.1f ", PX + bw * (k + 0.5),
			PY + PH - PH * (isnan(res->step[k].jain) ? 0 : res->step[k].jain));
	fprintf(f, "\"/>\n");
	for (int k = 0; k < res->steps; k++) {
		const struct rc_incast_step *st = &res->step[k];
		double h = PH * st->goodput_gbit / top;

		snprintf(text, sizeof(text), "N=%d: %.3f Gb/s, Jain %.3f, p99 %.0f us%s",
			 st->senders, st->goodput_gbit, st->jain, st->lat.p99_us,
			 k == knee ? " (the knee)" : "");
		svg_rect(f, PX + bw * k + bw * 0.15, PY + PH - h, bw * 0.7, h,
			 k == knee ? "#d73027" : "#4575b4", "none", 0, text);
		snprintf(text, sizeof(text), "N=%d%s", st->senders, k == knee ? " knee" : "");
		svg_text(f, PX + bw * (k + 0.5), PY + PH + 18, "middle", 11, "#000000", text);
	}
	svg_end(f);
	return fclose(f) ? -errno : 0;
}
