// SPDX-License-Identifier: MIT
/*
 * alltoall --background: its options, the background's own group (each
 * rank connected to its bulk peer, rc_a2a_bg_peer, and to rank 0 for the
 * group's barrier tree), and its report: each phase's latency idle and
 * loaded with the leakage, as sweep --load writes a direction's
 * (sweep_put_leak).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/sweep.h>

#include "cmds.h"
#include "alltoall.h"
#include "sweep_report.h"

int a2a_bg_parse(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int first,
		 struct a2a_cli *a)
{
	int rc = opts_fill(ctx, c, v, first, first + 3, a);

	if (rc)
		return rc;
	a->run.bg_mode = a->bg_mode;
	if (!a->bg_mode && (a->bg_size_given || a->bg_depth_given))
		return usage_err(ctx, "--%s and --%s go with --background pairs",
				 c->opts[first + 1].name, c->opts[first + 2].name);
	if (a->bg_size < 1 || a->bg_size > (1u << 30))
		return usage_err(ctx, "--background-size %llu: from 1 byte to 1G",
				 (unsigned long long)a->bg_size);
	a->run.bg_size = (uint32_t)a->bg_size;
	if (a->bg_mode && a->grp.nrails > 1)
		return usage_err(ctx, "--background runs beside one rail, not %d", a->grp.nrails);
	return 0;
}

/* The background's connections: each rank's bulk peer, and rank 0 (the
 * barrier's tree spans them). */
static int bg_plan(void *arg, const struct rc_endpoint *all, int W, uint8_t *need,
		   struct rc_err *err)
{
	const struct a2a_cli *a = arg;

	(void)all;
	(void)err;
	memset(need, 0, (size_t)W * (size_t)W);
	for (int i = 0; i < W; i++) {
		int p = rc_a2a_bg_peer(a->run.bg_mode, W, i);

		if (p >= 0)
			need[i * W + p] = need[p * W + i] = 1;
		if (i)
			need[i] = need[i * W] = 1;
	}
	return 0;
}

/* Where the background's group listens: --listen's address on a port of
 * its own (an etcd rendezvous publishes it), or the peers file's. */
static const char *bg_listen(const struct a2a_cli *a, char *buf, size_t cap)
{
	const char *l = group_listen(&a->grp, 0), *colon;

	if (!l || !strncmp(a->grp.rendezvous, "file:", 5))
		return NULL;
	snprintf(buf, cap, "%s", l);
	colon = strrchr(buf, ':');
	if (buf[0] == '[' && (colon = strstr(buf, "]:")))
		buf[colon - buf + 1] = '\0';
	else if (colon && colon == strchr(buf, ':'))
		buf[colon - buf] = '\0';
	return buf;
}

int a2a_bg_join(struct ctx *ctx, struct a2a_cli *a, struct rc_a2a_result *res, double *us,
		struct rc_group **bg)
{
	char rdv[512], listen[RC_HOST_MAX + 8];
	struct rc_group_join join = { .rank = a->grp.who.rank,
				      .world = a->grp.who.world,
				      .token = a->grp.token,
				      .timeout_ms = ctx->timeout_ms,
				      .busy_poll = a->busy_poll,
				      .dev_name = group_dev(ctx, &a->grp, 0),
				      .plan = bg_plan,
				      .plan_arg = a };
	struct rc_group_join_out how;
	struct rc_err e;
	int rc;

	res->disp_us = us; /* each phase idle, then loaded */
	res->comb_us = us + 2 * (size_t)a->run.iters;
	snprintf(rdv, sizeof(rdv), "%s.bg", a->grp.rendezvous);
	join.rendezvous = rdv;
	join.listen = bg_listen(a, listen, sizeof(listen));
	if ((rc = rc_group_join(&join, bg, &how, &e)))
		return how.usage
			       ? usage_err(ctx, "--background (rendezvous %s): %s", rdv, ERR_TEXT(e))
			       : fail(ctx, rc, "--background (rendezvous %s): %s", rdv, ERR_TEXT(e));
	return 0;
}

/* One phase's tails idle and loaded (sorting the samples in place). */
static void put_phase(struct out *o, const char *name, double *us, int n)
{
	struct rc_sweep_tail idle, loaded;

	rc_sweep_tail_of(us, n, &idle);
	rc_sweep_tail_of(us + n, n, &loaded);
	out_text(o, "#   %-8s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %7.2f %7.2f %7.2f\n", name,
		 idle.p50_us, loaded.p50_us, idle.p99_us, loaded.p99_us, idle.p999_us,
		 loaded.p999_us, sweep_leak_of(idle.p50_us, loaded.p50_us),
		 sweep_leak_of(idle.p99_us, loaded.p99_us),
		 sweep_leak_of(idle.p999_us, loaded.p999_us));
	sweep_put_leak(o, name, &idle, &loaded);
}

void a2a_bg_report(struct out *o, const struct a2a_cli *a, const struct rc_a2a_result *r)
{
	int W = a->grp.who.world, me = a->grp.who.rank, n = a->run.iters;
	int peer = rc_a2a_bg_peer(a->run.bg_mode, W, me);

	if (!a->run.bg_mode) {
		out_null(o, "background");
		return;
	}
	out_obj_begin(o, "background");
	out_str(o, "mode", "# background %s: ", rc_a2a_bg_name(a->run.bg_mode));
	if (peer >= 0) {
		out_text(o, "rank %d wrote into rank ", me);
		out_i64(o, "peer", "%lld ", peer);
	} else {
		out_text(o, "rank %d stayed quiet (no peer)", me);
		out_null(o, "peer");
	}
	out_u64(o, "bytes", peer >= 0 ? "%llu bytes" : NULL, r->bg_bytes);
	out_f64(o, "seconds", peer >= 0 ? " in %.3f s" : NULL, r->bg_seconds);
	out_f64(o, "gbyte_per_s", peer >= 0 ? " (%.4f GB/s)" : NULL,
		r->bg_seconds > 0 ? (double)r->bg_bytes / r->bg_seconds / 1e9 : 0);
	out_u64(o, "size_bytes", " of %llu-byte WRITEs", a->run.bg_size);
	out_i64(o, "depth", ", %lld deep, over QPs of their own, while the loaded iterations ran\n",
		a->run.bg_depth);
	out_text(o, "#   phase     p50 idle    loaded  p99 idle    loaded p99.9 idle  loaded"
		    "  leakage p50     p99   p99.9 (loaded / idle)\n");
	put_phase(o, "dispatch", r->disp_us, n);
	put_phase(o, "combine", r->comb_us, n);
	out_obj_begin(o, "congestion_counters");
	out_str(o, "device", "# congestion counters of %s", r->bg_dev);
	out_i64(o, "port", ":%lld (every rank on it) over the loaded pass:", r->bg_port);
	sweep_put_cong_one(o, &r->bg_cong_loaded);
	out_text(o, "#   over the idle pass:");
	out_text(o,
		 sweep_put_cong_moved(o, "moved_idle", &r->bg_cong_idle) ? "\n" : " none moved\n");
	out_obj_end(o);
	out_obj_end(o);
}
