// SPDX-License-Identifier: MIT
/* The pictures' scales (cmds/svg.c): a heatmap coloured by the ratio to a
 * reference, so that a healthy fleet whose values spread a little is green
 * where a scale from the least to the most painted its least red; the
 * timeline's round ticks with their unit; sizes as a reader says them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "svg.h"

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
	CHECK_DONE();
}
