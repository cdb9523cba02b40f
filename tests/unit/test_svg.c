// SPDX-License-Identifier: MIT
/* The pictures' scales (cmds/svg.c): a heatmap coloured by the ratio to a
 * reference, so that a healthy fleet whose values spread a little is green
 * where a scale from the least to the most painted its least red; the
 * timeline's round ticks with their unit; sizes as a reader says them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdmactl/sweep_core.h>

#include "check.h"
#include "svg.h"
#include "svg_cdf.h"

/* The fills of the heatmap's cells in the file at path (the cells are the
 * rectangles with a tooltip), as red and green parts; returns how many. */
static int cell_fills(const char *path, int red[], int green[], int max)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int n = 0;

	while (f && n < max && fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, "fill=\"#");
		unsigned r, g, b;

		if (!strstr(line, "<rect") || !strstr(line, "<title>") || !p ||
		    sscanf(p, "fill=\"#%2x%2x%2x", &r, &g, &b) != 3)
			continue;
		red[n] = (int)r;
		green[n] = (int)g;
		n++;
	}
	if (f)
		fclose(f);
	return n;
}

/* A fleet of 3 whose bandwidths spread from 1.14 to 1.29 Gbit/s, drawn as
 * the sweep draws it (ref: its median) and without a reference. */
static void heatmap(void)
{
	char path[] = "/tmp/test_svg_XXXXXX";
	int fd = mkstemp(path), red[16], green[16], n, reddish = 0;
	const char *labels[] = { "a", "b", "c" }, *tips[9];
	double nan = 0.0 / 0.0;
	double v[9] = { nan, 1.14, 1.29, 1.2, nan, 1.25, 1.18, 1.22, nan };
	struct svg_heatmap h = { .n = 3,
				 .title = "t",
				 .unit = "Gbit/s",
				 .row_axis = "from",
				 .col_axis = "to",
				 .labels = labels,
				 .value = v,
				 .tip = tips,
				 .high_good = true,
				 .ref = 1.21,
				 .bad_ratio = 0.5,
				 .ref_what = "the fleet's median" };

	for (int k = 0; k < 9; k++)
		tips[k] = "tip";
	CHECK(fd >= 0);
	CHECK(svg_heatmap_write(path, &h) == 0);
	n = cell_fills(path, red, green, 16);
	CHECK(n == 9);
	for (int k = 0; k < n; k++)
		reddish += red[k] > green[k];
	CHECK(reddish == 0); /* the three grey cells (none) are not red either */
	/* a direction at a third of the median is red */
	v[1] = 0.4;
	CHECK(svg_heatmap_write(path, &h) == 0);
	n = cell_fills(path, red, green, 16);
	CHECK(n == 9 && red[1] > 200 && green[1] < 60);
	/* the wrong answer: from the least to the most, the healthy fleet's
	 * least cell is red */
	v[1] = 1.14;
	h.ref = 0;
	CHECK(svg_heatmap_write(path, &h) == 0);
	n = cell_fills(path, red, green, 16);
	CHECK(n == 9 && red[1] > green[1]);
	unlink(path);
	close(fd);
}

/* The points of the first polyline in the file at path, as written. */
static void polyline_points(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	char line[8192];

	buf[0] = 0;
	while (f && fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, "<polyline"), *q;

		if (p && (p = strstr(p, "points=\"")) && (q = strchr(p + 8, '"'))) {
			snprintf(buf, cap, "%.*s", (int)(q - p - 8), p + 8);
			break;
		}
	}
	if (f)
		fclose(f);
}

/* A CDF drawn from known samples: its points where the hand-computed
 * quantiles put them, on the log latency axis and the scale of nines. */
static void cdf_plot(void)
{
	char path[] = "/tmp/test_svg_cdf_XXXXXX", pts[8192];
	int fd = mkstemp(path);
	double v[1000], four[4] = { 10, 20, 40, 100 };
	struct rc_sweep_cdf c;
	const struct rc_sweep_cdf *all[1] = { &c };
	struct svg_cdf_plot p = { 0, 0, 300, 300, 0, 0, 0 };
	FILE *f;

	CHECK(fd >= 0);
	/* four samples: every one, the step curve exact; the axes 10 to 100 us
	 * (x 0 to 300) and 2 nines (y 300 to 0, 150 px a nine) */
	rc_sweep_cdf_of(four, 4, &c);
	svg_cdf_fit(&p, all, 1);
	CHECK(p.lo == 10 && p.hi == 100 && p.nines == 2);
	CHECK((f = fopen(path, "w")) != NULL);
	svg_cdf_line(f, &p, &c, "#000000", "", "t");
	fclose(f);
	polyline_points(path, pts, sizeof(pts));
	/* x 300 log10(us / 10); y 300 - 150 (-log10(1 - F)), F 1/4 .. 1 */
	CHECK_STR(pts, "0.0,300.0 0.0,281.3 90.3,281.3 90.3,254.8 180.6,254.8 180.6,209.7 "
		       "300.0,209.7 300.0,0.0 ");

	/* 1 .. 1000: the grid's quantiles; 1 to 1000 us (100 px a decade), 4
	 * nines (75 px a nine) */
	for (int i = 0; i < 1000; i++)
		v[i] = i + 1;
	rc_sweep_cdf_of(v, 1000, &c);
	svg_cdf_fit(&p, all, 1);
	CHECK(p.lo == 1 && p.hi == 1000 && p.nines == 4);
	CHECK((f = fopen(path, "w")) != NULL);
	svg_cdf_line(f, &p, &c, "#000000", "", "t");
	fclose(f);
	polyline_points(path, pts, sizeof(pts));
	CHECK(strstr(pts, " 270.0,277.4 ") != NULL); /* p50: 501 us at F 0.501 */
	CHECK(strstr(pts, " 299.6,150.0 ") != NULL); /* p99: 990 us at F 0.99 */
	CHECK(strstr(pts, " 300.0,75.0 ") != NULL);  /* p99.9: 999 us at F 0.999 */
	CHECK(strstr(pts, " 300.0,0.0 ") != NULL);   /* max: 1000 us on the top line */
	/* the wrong answers: the p99 at 0.99 of a linear scale (y 3), where
	 * the tail has no room, or the scale upside down (y 297) */
	CHECK(strstr(pts, " 299.6,3.0 ") == NULL && strstr(pts, " 299.6,297.0 ") == NULL);
	unlink(path);
	close(fd);
}

static void ticks(void)
{
	char buf[32];
	double last, step;

	/* the issue's case: 1.17 s drawn as 292 585 877 1.17e+03 */
	step = svg_tick_step(1170, &last);
	CHECK(step == 250 && last == 1250);
	svg_tick_label(buf, sizeof(buf), 0, step, last);
	CHECK(!strcmp(buf, "0 s"));
	svg_tick_label(buf, sizeof(buf), 250, step, last);
	CHECK(!strcmp(buf, "0.25 s"));
	svg_tick_label(buf, sizeof(buf), 500, step, last);
	CHECK(!strcmp(buf, "0.5 s"));
	svg_tick_label(buf, sizeof(buf), 1000, step, last);
	CHECK(!strcmp(buf, "1 s"));
	step = svg_tick_step(930, &last);
	CHECK(step == 200 && last == 1000);
	step = svg_tick_step(480, &last);
	CHECK(step == 100 && last == 500);
	svg_tick_label(buf, sizeof(buf), 300, step, last);
	CHECK(!strcmp(buf, "300 ms"));
	step = svg_tick_step(3.7, &last);
	CHECK(step == 1 && last == 4);
	step = svg_tick_step(0.9, &last);
	CHECK(step == 0.2 && last == 1);
	svg_tick_label(buf, sizeof(buf), 0.6, step, last);
	CHECK(!strcmp(buf, "0.6 ms"));
	step = svg_tick_step(6200, &last);
	CHECK(step == 2000 && last == 8000);
	svg_tick_label(buf, sizeof(buf), 6000, step, last);
	CHECK(!strcmp(buf, "6 s"));
}

static void sizes(void)
{
	char buf[32];

	svg_bytes(buf, sizeof(buf), 25165824);
	CHECK(!strcmp(buf, "24 MiB"));
	svg_bytes(buf, sizeof(buf), 1536ULL << 20);
	CHECK(!strcmp(buf, "1.5 GiB"));
	svg_bytes(buf, sizeof(buf), 100);
	CHECK(!strcmp(buf, "100 B"));
	svg_bytes(buf, sizeof(buf), 1ULL << 20);
	CHECK(!strcmp(buf, "1 MiB"));
}

int main(void)
{
	heatmap();
	ticks();
	sizes();
	cdf_plot();
	CHECK_DONE();
}
