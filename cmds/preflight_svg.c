// SPDX-License-Identifier: MIT
/* preflight --svg: every node's settings in one grid, a finding's cell red. */
#include <errno.h>
#include <stdio.h>

#include "preflight_svg.h"
#include "svg.h"

#define ROW_H 22
#define COL_W 120
#define HEAD_W 200
#define TOP 70
#define ROWS_MAX 512 /* beyond it the picture says how many were left out */

int pf_svg_write(const char *path, const struct rc_pf_node *nodes, int n, const uint8_t *differs)
{
	int rows = n < ROWS_MAX ? n : ROWS_MAX, rc = 0;
	FILE *f = fopen(path, "we");
	char label[160];

	if (!f)
		return -errno;
	svg_begin(f, HEAD_W + COL_W * RC_PF_NSETTINGS + 20, TOP + ROW_H * (rows + 2),
		  "rdmactl preflight: settings by node");
	svg_text(f, 10, 24, "start", 16, "#000",
		 "rdmactl preflight: settings by node (red: a finding)");
	for (int s = 0; s < RC_PF_NSETTINGS; s++)
		svg_text(f, HEAD_W + COL_W * s + COL_W / 2.0, TOP - 10, "middle", 11, "#000",
			 rc_pf_setting_name(s));
	for (int i = 0; i < rows; i++) {
		const struct rc_pf_node *x = &nodes[i];
		double y = TOP + ROW_H * i;

		snprintf(label, sizeof(label), "rank %d %.60s %.40s", x->rank, x->hostname, x->dev);
		svg_text(f, 10, y + 15, "start", 11, "#000", label);
		for (int s = 0; s < RC_PF_NSETTINGS; s++) {
			bool bad = differs[(size_t)i * RC_PF_NSETTINGS + (size_t)s];
			char val[256];

			rc_pf_value(x, s, val, sizeof(val));
			svg_rect(f, HEAD_W + COL_W * s, y, COL_W, ROW_H, bad ? "#f4a6a6" : "#e8f4e8",
				 bad ? "#c00000" : "#ffffff", bad ? 2 : 1, val);
			snprintf(label, sizeof(label), "%.18s", val[0] ? val : "-");
			svg_text(f, HEAD_W + COL_W * s + COL_W / 2.0, y + 15, "middle", 10, "#000",
				 label);
		}
	}
	if (rows < n) {
		snprintf(label, sizeof(label), "%d more nodes left out", n - rows);
		svg_text(f, 10, TOP + ROW_H * rows + 15, "start", 11, "#000", label);
	}
	svg_end(f);
	if (ferror(f))
		rc = -EIO;
	if (fclose(f) && !rc)
		rc = -errno;
	return rc;
}
