// SPDX-License-Identifier: MIT
/*
 * sweep --load's part of the report: each direction's 8-byte WRITE and
 * READ latency idle and under load (p50, p99, p99.9, max) with the
 * leakage (loaded over idle, of the p50 as judged and of the p99), the
 * fleet's leakage and its ceiling,
 * the ports blamed for the leakage, and the congestion counters that moved
 * on each rank's port meanwhile.
 */
#include <math.h>
#include <stdio.h>

#include "output.h"
#include "sweep_judged.h"
#include "sweep_report.h"

static void put_direction(struct out *o, const struct judged *j, int a, int b)
{
	const struct rc_sweep_cell *c = cell(j, a, b);
	struct rc_sweep_tail
		wi = { c->wlat_p50_us, c->wlat_p99_us, c->wlat_p999_us, c->wlat_max_us, 0, 0 },
		ri = { c->rlat_p50_us, c->rlat_p99_us, c->rlat_p999_us, c->rlat_max_us, 0, 0 };
	bool leaks = j->v.why[a * j->W + b] & RC_SWEEP_LEAK;

	out_obj_begin(o, NULL);
	out_i64(o, "from", "# %3lld", a);
	out_i64(o, "to", " -> %-3lld", b);
	out_text(o, " %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %7.2f %7.2f%s\n", c->wlat_p50_us,
		 c->wload.p50_us, c->wlat_p99_us, c->wload.p99_us, c->wload.p999_us, c->wload.max_us,
		 rc_sweep_leak(c, false), rc_sweep_leak(c, true), leaks ? " !" : "");
	sweep_put_leak(o, "write", &wi, &c->wload);
	sweep_put_leak(o, "read", &ri, &c->rload);
	out_bool(o, "leaks", NULL, leaks);
	out_obj_end(o);
}

static void put_blamed(struct out *o, const struct judged *j)
{
	out_arr_begin(o, "blamed_ports");
	for (int i = 0; i < j->W; i++) {
		const struct rc_sweep_node *n = &j->res->nodes[i];
		int b = j->v.blamed[i];

		if (!b)
			continue;
		out_obj_begin(o, NULL);
		out_i64(o, "rank", "port behind the leakage: rank %lld", i);
		out_str(o, "host", " (%s", n->host);
		out_str(o, "device", " %s", n->dev);
		out_i64(o, "port", ":%lld)", n->port);
		out_arr_begin(o, "sides");
		if (b & RC_SWEEP_BLAME_RECV)
			out_str(o, NULL, ", as the receiver of most of its leaking directions",
				"receive");
		if (b & RC_SWEEP_BLAME_SEND)
			out_str(o, NULL, ", as the sender of most of its leaking directions",
				"send");
		out_arr_end(o);
		out_text(o, "\n");
		out_obj_end(o);
	}
	out_arr_end(o);
}

void sweep_load_report(struct out *o, const struct judged *j, const struct rc_sweep_opts *run,
		       const struct rc_sweep_limits *lim)
{
	out_obj_begin(o, "load");
	out_str(o, "mode", "# under load (%s): ", rc_sweep_load_name(run->load));
	out_i64(o, "directions", "%lld directions timed again while bulk WRITEs ran; ", j->v.loaded);
	out_f64(o, "leak_ratio", NULL, lim->leak_ratio);
	if (j->v.loaded) {
		out_f64(o, "write_leak_median", "leakage (p50 loaded / idle) median WRITE %.2f",
			j->v.wleak_median);
		out_f64(o, "read_leak_median", " READ %.2f", j->v.rleak_median);
		out_f64(o, "write_leak_ceiling", ", outlier above %.2f", j->v.wleak_ceiling);
		out_f64(o, "read_leak_ceiling", " and %.2f", j->v.rleak_ceiling);
	}
	out_text(o, "\n#  from -> to   WRITE p50 idle  loaded   p99 idle  loaded  p99.9     max"
		    "  leakage p50 W, R, p99 W (loaded / idle)\n");
	out_arr_begin(o, "directions_loaded");
	for (int a = 0; a < j->W; a++)
		for (int b = 0; b < j->W; b++)
			if (a != b && !isnan(rc_sweep_leak(cell(j, a, b), false)))
				put_direction(o, j, a, b);
	out_arr_end(o);
	put_blamed(o, j);
	out_obj_end(o);
	sweep_put_cong(o, j->res->nodes, j->W);
}
