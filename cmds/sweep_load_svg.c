// SPDX-License-Identifier: MIT
/*
 * The pictures of latency under load and of incast (--svg): each
 * direction's 8-byte WRITE and READ latency CDFs idle and loaded (every
 * sample, or 128 quantiles with the tail resolved, as rank 0 gathered
 * them: rc_sweep_result.cdf), a leaking direction in red; the incast's
 * goodput against N as bars, Jain's index as a line, the knee marked, and
 * beside them each step's slowest sender's latency CDF.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "svg.h"
#include "svg_cdf.h"
#include "sweep_judged.h"
#include "sweep_report.h"

#define PW 440.0 /* a plot's width and height */
#define PH 300.0
#define PX 70.0 /* the first's left and top */
#define PY 80.0
#define GAP 120.0 /* between two plots */

static const char *const IDLE = "#999999", *const LOADED = "#4575b4", *const LEAK = "#d73027";

static const struct rc_sweep_cdf *cdf_of(const struct judged *j, int a, int b, int kind)
{
	return &j->res->cdf[((size_t)a * (size_t)j->W + (size_t)b) * RC_SWEEP_CDF_KINDS +
			    (size_t)kind];
}

static void tip_of(char *tip, size_t cap, int a, int b, const char *phase,
		   const struct rc_sweep_tail *t, double leak, bool leaks)
{
	int n = snprintf(tip, cap, "%d -> %d %s: p50 %.1f p99 %.1f p99.9 %.1f max %.1f us (%d)", a,
			 b, phase, t->p50_us, t->p99_us, t->p999_us, t->max_us, (int)t->n);

	if (!isnan(leak) && n > 0 && (size_t)n < cap)
		snprintf(tip + n, cap - (size_t)n, ", leakage x%.2f%s", leak,
			 leaks ? ", leaks" : "");
}

/* The directions' CDFs of one operation, idle and loaded, in plot p. */
static void op_plot(FILE *f, const struct judged *j, const struct svg_cdf_plot *p, bool read)
{
	char tip[200];

	svg_cdf_axes(f, p,
		     read ? "8-byte READ latency, post to completion"
			  : "8-byte WRITE latency, post to completion");
	for (int a = 0; a < j->W; a++)
		for (int b = 0; b < j->W; b++) {
			const struct rc_sweep_cell *c = cell(j, a, b);
			struct rc_sweep_tail idle = {
				read ? c->rlat_p50_us : c->wlat_p50_us,
				read ? c->rlat_p99_us : c->wlat_p99_us,
				read ? c->rlat_p999_us : c->wlat_p999_us,
				read ? c->rlat_max_us : c->wlat_max_us,
				cdf_of(j, a, b, read ? RC_SWEEP_CDF_READ : RC_SWEEP_CDF_WRITE)->n,
				0
			};
			bool leaks = j->v.why[a * j->W + b] & RC_SWEEP_LEAK;

			if (a == b || isnan(rc_sweep_leak(c, false)))
				continue;
			tip_of(tip, sizeof(tip), a, b, "idle", &idle, NAN, false);
			svg_cdf_line(f, p,
				     cdf_of(j, a, b, read ? RC_SWEEP_CDF_READ : RC_SWEEP_CDF_WRITE),
				     IDLE, "4 3", tip);
			tip_of(tip, sizeof(tip), a, b, "loaded", read ? &c->rload : &c->wload,
			       rc_sweep_leak(c, read), leaks);
			svg_cdf_line(f, p,
				     cdf_of(j, a, b,
					    read ? RC_SWEEP_CDF_READ_LOAD : RC_SWEEP_CDF_WRITE_LOAD),
				     leaks ? LEAK : LOADED, "", tip);
		}
}

int sweep_load_svg(const struct judged *j, const char *mode, const char *path)
{
	const struct rc_sweep_cdf **all;
	struct svg_cdf_plot w = { PX, PY, PW, PH, 0, 0, 0 }, r;
	size_t N = (size_t)j->W * (size_t)j->W * RC_SWEEP_CDF_KINDS;
	char title[96];
	FILE *f;

	if (!j->res->cdf)
		return -ENODATA;
	if (!(all = calloc(N, sizeof(*all))))
		return -ENOMEM;
	for (size_t k = 0; k < N; k++)
		all[k] = &j->res->cdf[k];
	svg_cdf_fit(&w, all, (int)N); /* one scale for both, idle and loaded */
	free(all);
	r = w;
	r.x = PX + PW + GAP;
	if (!(f = fopen(path, "w")))
		return -errno;
	snprintf(title, sizeof(title), "rdmactl sweep --load %s: latency CDFs, idle and loaded",
		 mode);
	svg_begin(f, (int)(r.x + PW + 30), (int)(PY + PH + 60), title);
	svg_text(f, 10, 24, "start", 16, "#000000", title);
	svg_text(f, 10, 42, "start", 11, "#333333",
		 "one step curve a direction and phase, every sample or 128 quantiles; up: "
		 "the fraction of samples at or below, on a scale of nines");
	svg_cdf_key(f, PX, 64, IDLE, "4 3", "idle");
	svg_cdf_key(f, PX + 110, 64, LOADED, "", "loaded");
	svg_cdf_key(f, PX + 220, 64, LEAK, "", "loaded, a leaking direction");
	op_plot(f, j, &w, false);
	op_plot(f, j, &r, true);
	svg_end(f);
	return fclose(f) ? -errno : 0;
}

/* The goodput as bars (left axis), Jain's index as a line (right axis). */
static void incast_bars(FILE *f, const struct rc_incast_result *res, int knee)
{
	double top = 0, bw = PW / (res->steps > 0 ? res->steps : 1);
	char text[96];

	for (int k = 0; k < res->steps; k++)
		top = res->step[k].goodput_gbit > top ? res->step[k].goodput_gbit : top;
	top = top > 0 ? top * 1.15 : 1;
	snprintf(text, sizeof(text), "%.3g Gb/s", top);
	svg_text(f, PX - 6, PY + 4, "end", 10, "#333333", text);
	svg_text(f, PX - 6, PY + PH + 4, "end", 10, "#333333", "0");
	svg_text(f, PX + PW + 6, PY + 4, "start", 10, "#333333", "Jain 1.0");
	svg_text(f, PX + PW + 6, PY + PH / 2 + 4, "start", 10, "#333333", "0.5");
	svg_text(f, PX + PW + 6, PY + PH + 4, "start", 10, "#333333", "0");
	for (int k = 0; k < res->steps; k++) {
		const struct rc_incast_step *st = &res->step[k];
		double h = PH * st->goodput_gbit / top;

		snprintf(text, sizeof(text), "N=%d: %.3f Gb/s, Jain %.3f, p99 %.0f us%s",
			 st->senders, st->goodput_gbit, st->jain, st->lat.p99_us,
			 k == knee ? " (the knee)" : "");
		svg_rect(f, PX + bw * k + bw * 0.15, PY + PH - h, bw * 0.7, h,
			 k == knee ? LEAK : LOADED, "none", 0, text);
		snprintf(text, sizeof(text), "N=%d%s", st->senders, k == knee ? " knee" : "");
		svg_text(f, PX + bw * (k + 0.5), PY + PH + 18, "middle", 11, "#000000", text);
	}
	fprintf(f, "<polyline fill=\"none\" stroke=\"#000000\" stroke-width=\"2\" points=\"");
	for (int k = 0; k < res->steps; k++)
		fprintf(f, "%.1f,%.1f ", PX + bw * (k + 0.5),
			PY + PH - PH * (isnan(res->step[k].jain) ? 0 : res->step[k].jain));
	fprintf(f, "\"><title>Jain's index over the senders' bytes</title></polyline>\n");
	svg_text(f, PX + PW / 2, PY + PH + 34, "middle", 11, "#000000",
		 "senders N: the receiver's goodput (bars), Jain's index (line)");
}

/* Each step's slowest sender's WRITE latency CDF, a colour a step. */
static void incast_cdfs(FILE *f, const struct rc_incast_result *res, int knee)
{
	static const char *const shade[] = { "#74add1", "#4575b4", "#313695", "#1a9850",
					     "#66bd63", "#fdae61", "#f46d43", "#a50026" };
	const struct rc_sweep_cdf *c[RC_INCAST_STEPS_MAX] = { NULL };
	struct svg_cdf_plot p = { PX + PW + GAP, PY, PW, PH, 0, 0, 0 };
	char text[160];

	for (int k = 0; k < res->steps; k++)
		if (res->step[k].who && res->step[k].slowest >= 0)
			c[k] = &res->step[k].who[res->step[k].slowest].cdf;
	svg_cdf_fit(&p, c, res->steps);
	svg_cdf_axes(f, &p, "each step's slowest sender: WRITE latency, post to completion");
	for (int k = 0; k < res->steps; k++) {
		const struct rc_incast_step *st = &res->step[k];
		const char *colour = k == knee ? LEAK : shade[k % 8];

		if (!c[k])
			continue;
		snprintf(text, sizeof(text),
			 "N=%d, slowest sender rank %d: p50 %.1f p99 %.1f p99.9 %.1f max %.1f us (%d)",
			 st->senders, st->slowest, st->lat.p50_us, st->lat.p99_us, st->lat.p999_us,
			 st->lat.max_us, (int)st->lat.n);
		svg_cdf_line(f, &p, c[k], colour, "", text);
		snprintf(text, sizeof(text), "N=%d", st->senders); /* the knee's red */
		svg_cdf_key(f, p.x + 72 * (k % 6), 52 + 14 * (k / 6), colour, "", text);
	}
}

int sweep_incast_svg(const struct rc_incast_result *res, int knee, const char *path)
{
	char text[96];
	FILE *f;

	if (!(f = fopen(path, "w")))
		return -errno;
	svg_begin(f, (int)(PX + 2 * PW + GAP + 30), (int)(PY + PH + 60), "rdmactl sweep --incast");
	snprintf(text, sizeof(text),
		 "rdmactl sweep --incast %d: goodput, fairness and latency against N",
		 res->receiver);
	svg_text(f, 10, 24, "start", 16, "#000000", text);
	incast_bars(f, res, knee);
	incast_cdfs(f, res, knee);
	svg_end(f);
	return fclose(f) ? -errno : 0;
}
