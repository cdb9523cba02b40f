// SPDX-License-Identifier: MIT
/*
 * --bench and --lat for write, read and atomic: the figures that perftest's
 * ib_write_bw, ib_read_bw and ib_atomic_bw print (and latencies, post to
 * completion, beside ib_*_lat's round trips), measured the
 * same way (fixed message size, a fixed number of work requests, one local
 * buffer per queue pair, the same remote buffer), so both can stand side by
 * side.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "client_cmds.h"

_Static_assert(RC_LAT_CLOCK_AUTO == 0 && RC_LAT_CLOCK_TSC == 1 && RC_LAT_CLOCK_MONOTONIC == 2,
	       "--lat-clock's words are in enum rc_lat_clock's order");

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *sorted, uint64_t n, double p)
{
	uint64_t i = (uint64_t)ceil(p / 100.0 * (double)n);

	return sorted[i ? i - 1 : 0];
}

static void print_latency(struct ctx *ctx, const char *key, const char *title, const double *sorted,
			  uint64_t n, double scale)
{
	double sum = 0, sq = 0, avg;

	for (uint64_t i = 0; i < n; i++)
		sum += sorted[i];
	avg = sum / (double)n;
	for (uint64_t i = 0; i < n; i++)
		sq += (sorted[i] - avg) * (sorted[i] - avg);
	out_text(&ctx->out, "%s:", title);
	out_obj_begin(&ctx->out, key);
	out_f64(&ctx->out, "min", " min %.2f", sorted[0] * scale);
	out_f64(&ctx->out, "p50", ", p50 %.2f", pct(sorted, n, 50) * scale);
	out_f64(&ctx->out, "avg", ", avg %.2f", sum / (double)n * scale);
	out_f64(&ctx->out, "p99", ", p99 %.2f", pct(sorted, n, 99) * scale);
	out_f64(&ctx->out, "p999", ", p99.9 %.2f", pct(sorted, n, 99.9) * scale);
	out_f64(&ctx->out, "max", ", max %.2f", sorted[n - 1] * scale);
	/* perftest's t_stdev: the population's */
	out_f64(&ctx->out, "stdev", ", stdev %.2f\n", sqrt(sq / (double)n) * scale);
	out_u64(&ctx->out, "count", NULL, n);
	out_f64(&ctx->out, "sum", NULL, sum * scale);
	out_obj_end(&ctx->out);
}

static const char *op_key(enum rc_op op)
{
	switch (op) {
	case RC_OP_WRITE:
		return "write";
	case RC_OP_READ:
		return "read";
	case RC_OP_FAA:
		return "faa";
	case RC_OP_CAS:
		return "cas";
	default:
		return "?";
	}
}

/* --msg-size SIZE, or MIN:MAX: a row per size from MIN, doubling, to MAX. */
static int msg_sizes(struct ctx *ctx, const struct cmd *c, const char *s, struct bench_args *a)
{
	const char *colon = s ? strchr(s, ':') : NULL;
	char min[64];

	if (!s)
		return 0;
	if (!colon)
		return opt_size_parse(ctx, "msg-size", s, &a->msg);
	snprintf(min, sizeof(min), "%.*s", (int)(colon - s), s);
	if (opt_size_parse(ctx, "msg-size", min, &a->msg) ||
	    opt_size_parse(ctx, "msg-size", colon + 1, &a->msg_max))
		return -EINVAL;
	if (!a->msg || a->msg_max < a->msg)
		return usage_err(ctx, "%s: invalid --msg-size '%s': MIN:MAX with 1 <= MIN <= MAX",
				 c->name, s);
	if (a->lat)
		return usage_err(ctx, "%s: --msg-size MIN:MAX goes with --bench, not --lat",
				 c->name);
	return 0;
}

int bench_args_parse(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int first,
		     enum rc_op op, struct bench_args *a)
{
	bool atomic = op == RC_OP_FAA || op == RC_OP_CAS;
	int rc;

	*a = (struct bench_args){ .msg = atomic ? 8 : 65536 };
	opts_given_at(c, v, first + BO_BENCH, first + BO_LAT_CLOCK + 1, a);
	opts_fill(ctx, c, v, first + BO_BENCH, first + BO_LAT + 1, a); /* two flags */
	a->on = a->lat || a->bench;
	opts_fill(ctx, c, v, first + BO_METRICS, first + BO_METRICS + 1, a); /* a string */
	/* Two runs, not one: perftest has ib_write_bw and ib_write_lat. */
	if (a->lat && a->bench)
		return usage_err(ctx, "%s: --bench and --lat are two different runs: give one",
				 c->name);
	if (!a->lat && a->lat_clock_given)
		return usage_err(ctx, "%s: --lat-clock goes with --lat", c->name);
	/* write and read also write a transfer's figures, per rail */
	if (!a->on && a->metrics && atomic)
		return usage_err(ctx, "%s: --metrics goes with --bench or --lat", c->name);
	if (!a->on)
		return a->metrics ? metrics_path_check(ctx, a->metrics) : 0;
	/* The numbers are read only for a benchmark (as its defaults are). */
	if ((rc = opts_fill(ctx, c, v, first + BO_MSG_SIZE, first + BO_LAT_CLOCK + 1, a)) ||
	    (rc = msg_sizes(ctx, c, a->msg_size, a)))
		return rc;
	if (atomic && a->msg != 8)
		return usage_err(ctx, "%s: atomics move 8 bytes: --msg-size must be 8", c->name);
	if (!a->msg || a->msg > (1u << 30) || a->msg_max > (1u << 30))
		return usage_err(ctx, "%s: --msg-size must be 1 byte to 1 GiB", c->name);
	if (atomic && a->msg_max && a->msg_max != 8)
		return usage_err(ctx, "%s: atomics move 8 bytes: --msg-size must be 8", c->name);
	if (!a->iters || a->iters > (1ULL << 32))
		return usage_err(ctx, "%s: --iters must be 1 to 2^32", c->name);
	if (a->lat && ((a->depth_given && a->depth != 1) || a->qps != 1))
		return usage_err(ctx,
				 "%s: --lat measures one operation in flight: no --depth or --qps",
				 c->name);
	if (a->lat) {
		a->depth = 1;
		a->signal_every = 1;
	}
	return a->metrics ? metrics_path_check(ctx, a->metrics) : 0;
}

/* The run's totals and rates: GB/s, Gb/s and Mpps (perftest's million
 * messages a second) for a bandwidth run; for a latency run, one operation in
 * flight, the rate says nothing of the link and text leaves it out. */
static void bench_rates(struct ctx *ctx, const struct bench_args *b,
			const struct rc_stream_result *res, double peak_s)
{
	double gbyte = res->seconds > 0 ? (double)res->bytes / 1e9 / res->seconds : 0;
	double msgs = res->seconds > 0 ? (double)res->ops / res->seconds : 0;

	out_u64(&ctx->out, "bytes", "%llu bytes", (unsigned long long)res->bytes);
	out_u64(&ctx->out, "operations", " in %llu operations", (unsigned long long)res->ops);
	out_f64(&ctx->out, "seconds", b->lat ? " in %.3f s\n" : " in %.3f s", res->seconds);
	out_f64(&ctx->out, "gbyte_per_s", b->lat ? NULL : ": %.3f GB/s", gbyte);
	out_f64(&ctx->out, "gbit_per_s", b->lat ? NULL : " (%.3f Gb/s)", gbyte * 8);
	out_f64(&ctx->out, "msgs_per_s", NULL, msgs);
	out_f64(&ctx->out, "mpps", b->lat ? NULL : ", %.3f Mpps\n", msgs / 1e6);
	if (peak_s > 0) { /* perftest's BW peak: the fastest run of operations */
		out_f64(&ctx->out, "peak_gbyte_per_s", "  peak: %.3f GB/s",
			(double)b->msg / 1e9 / peak_s);
		out_f64(&ctx->out, "peak_gbit_per_s", " (%.3f Gb/s)",
			(double)b->msg * 8 / 1e9 / peak_s);
		out_f64(&ctx->out, "peak_mpps", ", %.3f Mpps\n", 1 / peak_s / 1e6);
	}
}

/* One row of a --msg-size MIN:MAX sweep: a size's run. */
struct size_row {
	uint64_t msg, bytes, ops;
	double seconds;
};
/* 1 byte to 1 GiB, doubling */
#define SIZE_ROWS 31

/* The rows as ib_write_bw -a prints its own, after the run's header. */
static void size_rows_print(struct ctx *ctx, const struct size_row *rows, int n)
{
	out_text(&ctx->out, "  %12s %12s %14s %14s %12s\n", "bytes", "operations", "GB/s", "Gb/s",
		 "Mpps");
	out_arr_begin(&ctx->out, "sizes");
	for (int i = 0; i < n; i++) {
		const struct size_row *r = &rows[i];
		double s = r->seconds > 0 ? r->seconds : 1;

		out_obj_begin(&ctx->out, NULL);
		out_u64(&ctx->out, "msg_size", "  %12llu", (unsigned long long)r->msg);
		out_u64(&ctx->out, "operations", " %12llu", (unsigned long long)r->ops);
		out_u64(&ctx->out, "bytes", NULL, (unsigned long long)r->bytes);
		out_f64(&ctx->out, "seconds", NULL, r->seconds);
		out_f64(&ctx->out, "gbyte_per_s", " %14.3f", (double)r->bytes / 1e9 / s);
		out_f64(&ctx->out, "gbit_per_s", " %14.3f", (double)r->bytes * 8 / 1e9 / s);
		out_f64(&ctx->out, "mpps", " %12.3f\n", (double)r->ops / 1e6 / s);
		out_obj_end(&ctx->out);
	}
	out_arr_end(&ctx->out);
	out_text(&ctx->out, "  all sizes: ");
}

/* Where a benchmark ran: the peer, the region, the device, and over
 * libfabric the provider (NULL: verbs). */
struct bench_where {
	const char *peer, *region, *device;
	const struct rc_fabric_info *ofi;
};

static void bench_print(struct ctx *ctx, const struct bench_args *b, enum rc_op op,
			const struct bench_where *w, const struct rc_stream_result *res,
			double *lat_us, double peak_s, const struct size_row *rows, int nrows)
{
	out_str(&ctx->out, "operation", "%s", op_key(op));
	out_str(&ctx->out, "mode", " %s benchmark", b->lat ? "latency" : "bandwidth");
	out_str(&ctx->out, "peer", " against %s", w->peer);
	out_str(&ctx->out, "region", "/%s\n", w->region);
	out_str(&ctx->out, "device", "  device %s", w->device);
	if (w->ofi) {
		out_str(&ctx->out, "transport", " over %s", "ofi");
		out_str(&ctx->out, "provider", " (%s)", w->ofi->provider);
		out_str(&ctx->out, "domain", NULL, w->ofi->domain);
	} else {
		fabric_verbs_keys(ctx, w->device);
	}
	out_u64(&ctx->out, "msg_size", ", %llu", (unsigned long long)b->msg);
	if (b->msg_max)
		out_u64(&ctx->out, "msg_size_max", " to %llu", (unsigned long long)b->msg_max);
	out_text(&ctx->out, b->msg_max ? "-byte messages, doubling" : "-byte messages");
	out_u64(&ctx->out, "iters", ", %llu work requests", (unsigned long long)b->iters);
	out_i64(&ctx->out, "depth", ", depth %lld", b->depth);
	out_i64(&ctx->out, "qps", ", %lld QP", b->qps);
	out_i64(&ctx->out, "post_list", ", post list %lld", b->post_list);
	out_i64(&ctx->out, "signal_every", ", signal every %lld\n", b->signal_every);
	out_text(&ctx->out, "  ");
	if (nrows)
		size_rows_print(ctx, rows, nrows);
	bench_rates(ctx, b, res, peak_s);
	if (b->lat) {
		bool tsc = res->lat_clock == RC_LAT_CLOCK_TSC;
		uint64_t n = b->iters - res->lat_moved;

		qsort(lat_us, (size_t)n, sizeof(double), cmp_double);
		out_str(&ctx->out, "lat_clock", NULL, tsc ? "tsc" : "monotonic");
		out_text(&ctx->out, "  latencies timed by the %s", tsc ? "TSC" : "monotonic clock");
		out_f64(&ctx->out, "lat_clock_mhz",
			tsc ? " (%.1f MHz, checked against CLOCK_MONOTONIC)" : NULL,
			res->lat_hz / 1e6);
		out_f64(&ctx->out, "clock_us",
			"; a reading costs %.3f us: taken off each, as it falls inside\n",
			res->clock_us);
		out_u64(&ctx->out, "lat_left_out",
			res->lat_moved ? "  %llu left out: the thread changed CPU between the "
					 "post and the completion, whose counters need not agree\n"
				       : NULL,
			res->lat_moved);
		print_latency(ctx, "latency_us", "  latency us (post to completion)", lat_us, n, 1);
		/* A write completes on the ACK, so half of it estimates one way.
		 * Not ib_write_lat's figure: that is half a ping-pong round trip
		 * between two programs (rdmactl-write(8)). */
		if (op == RC_OP_WRITE)
			print_latency(ctx, "one_way_us", "  one-way estimate us (half of it)",
				      lat_us, n, 0.5);
	}
}

/* Pack the samples kept (not NaN) at the front; returns how many. */
static uint64_t compact(double *lat_us, uint64_t n)
{
	uint64_t kept = 0;

	for (uint64_t i = 0; i < n; i++)
		if (!isnan(lat_us[i]))
			lat_us[kept++] = lat_us[i];
	return kept;
}

/* --metrics: the figures bench_print emitted. */
static const struct metric_row bench_rows[] = {
	{ "bytes", "rdmactl_bench_bytes_total", METRIC_COUNTER, "bytes the benchmark moved" },
	{ "operations", "rdmactl_bench_operations_total", METRIC_COUNTER,
	  "work requests completed" },
	{ "seconds", "rdmactl_bench_duration_seconds", METRIC_GAUGE, "how long the timed run took" },
	{ "gbyte_per_s", "rdmactl_bench_throughput_bytes_per_second", METRIC_GAUGE,
	  "bytes per second over the run", 1e9 },
	{ "msg_size", "rdmactl_bench_message_size_bytes", METRIC_GAUGE, "bytes per work request" },
	{ "qps", "rdmactl_bench_queue_pairs", METRIC_GAUGE, "queue pairs" },
	{ "depth", "rdmactl_bench_depth", METRIC_GAUGE, "work requests outstanding per queue pair" },
#define LAT_ROW(key, q, suffix) \
	{ \
		"latency_us." key, "rdmactl_bench_latency_seconds", METRIC_SUMMARY, \
			"post to completion, one operation in flight (quantile 0: min, 1: max)", \
			1e-6, q, suffix \
	}
	LAT_ROW("min", "quantile=0", NULL),
	LAT_ROW("p50", "quantile=0.5", NULL),
	LAT_ROW("p99", "quantile=0.99", NULL),
	LAT_ROW("p999", "quantile=0.999", NULL),
	LAT_ROW("max", "quantile=1", NULL),
	LAT_ROW("sum", NULL, "_sum"),
#undef LAT_ROW
	{ "latency_us.count", "rdmactl_bench_latency_seconds", METRIC_SUMMARY,
	  "post to completion, one operation in flight (quantile 0: min, 1: max)", 0, NULL,
	  "_count" },
	{ "lat_left_out", "rdmactl_bench_latency_left_out", METRIC_GAUGE,
	  "samples left out of the summary: their two readings on two CPUs" },
};

/* The benchmark, once, or with --msg-size MIN:MAX at each size from MIN,
 * doubling, to MAX: the rows, and in res their sum (figures over all). */
static int bench_sizes(struct ctx *ctx, struct rc_client *cl, struct rc_client_bench *cb,
		       const struct bench_args *b, struct size_row *rows, int *nrows,
		       struct rc_stream_result *res)
{
	struct rc_stream_result one;
	struct rc_err e;
	int rc;

	*nrows = 0;
	if (!b->msg_max) {
		rc = rc_client_bench(cl, cb, res, &e);
		return rc ? fail(ctx, rc, "%s (after %llu operations)", ERR_TEXT(e),
				 (unsigned long long)res->ops)
			  : 0;
	}
	memset(res, 0, sizeof(*res));
	for (uint64_t msg = b->msg; msg <= b->msg_max && *nrows < SIZE_ROWS; msg *= 2) {
		cb->msg = (size_t)msg;
		memset(&one, 0, sizeof(one));
		rc = rc_client_bench(cl, cb, &one, &e);
		if (rc)
			return fail(ctx, rc, "%s (at --msg-size %llu, after %llu operations)",
				    ERR_TEXT(e), (unsigned long long)msg,
				    (unsigned long long)one.ops);
		rows[(*nrows)++] = (struct size_row){ msg, one.bytes, one.ops, one.seconds };
		res->bytes += one.bytes;
		res->ops += one.ops;
		res->seconds += one.seconds;
	}
	return 0;
}

/* The samples a run fills: latencies with --lat; for a bandwidth run of one
 * size, when each operation was posted and then completed (perftest's
 * peak). */
struct bench_bufs {
	double *lat_us;
	double *times;
};

static int bench_bufs_get(struct ctx *ctx, const struct bench_args *b, struct bench_bufs *k)
{
	if (b->lat && !(k->lat_us = calloc((size_t)b->iters, sizeof(double))))
		return fail(ctx, -ENOMEM, "out of memory for %llu latency samples",
			    (unsigned long long)b->iters);
	if (!b->lat && !b->msg_max && b->iters <= (1u << 22))
		k->times = calloc(2 * (size_t)b->iters, sizeof(double));
	return 0;
}

static double bench_peak(const struct bench_bufs *k, const struct bench_args *b,
			 const struct rc_stream_result *res)
{
	return k->times ? rc_peak_op_seconds(k->times, k->times + b->iters, res->ops) : 0;
}

/* The latency samples that count packed at the front (one whose two
 * readings came from two CPUs is left out), or a failure when none does. */
static int samples_kept(struct ctx *ctx, const struct bench_bufs *k, const struct bench_args *b)
{
	if (k->lat_us && compact(k->lat_us, b->iters) == 0)
		return fail(ctx, -EAGAIN,
			    "every latency sample's two readings came from two CPUs, whose "
			    "time-stamp counters need not agree (--lat-clock monotonic)");
	return 0;
}

static int bench_verbs(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		       const struct client_args *ca, const struct bench_args *b, enum rc_op op,
		       uint64_t compare_add, uint64_t swap, struct bench_bufs *k)
{
	bool atomic = op == RC_OP_FAA || op == RC_OP_CAS;
	struct size_row rows[SIZE_ROWS];
	struct rc_stream_result res;
	struct rc_client *cl = NULL;
	int nrows = 0;
	struct rc_err e;
	int rc;

	if ((rc = client_target(ctx, c, v, NULL)))
		return rc;
	rc = client_open(ctx, c, v, ca, b->qps, b->lat || b->busy_poll, b->depth, &cl);
	if (rc)
		goto out;
	rc = rc_client_check(cl, ca->off, b->msg_max ? b->msg_max : b->msg, op != RC_OP_READ,
			     atomic, &e);
	if (rc) {
		rc = fail(ctx, rc, "%s", ERR_TEXT(e));
		goto out;
	}
	struct rc_client_bench cb = {
		.op = op,
		.off = ca->off,
		.msg = (size_t)b->msg,
		.iters = b->iters,
		.depth = b->depth,
		.qps = b->qps,
		.post_list = b->post_list,
		.signal_every = b->signal_every,
		.compare_add = compare_add,
		.swap = swap,
		.timeout_ms = ctx->timeout_ms,
		.lat_us = k->lat_us,
		.lat_clock = (enum rc_lat_clock)b->lat_clock,
		.posted_s = k->times,
		.completed_s = k->times ? k->times + b->iters : NULL,
	};

	if ((rc = bench_sizes(ctx, cl, &cb, b, rows, &nrows, &res)))
		goto out;
	if ((rc = samples_kept(ctx, k, b)))
		goto out;
	struct bench_where w = { rc_client_peer(cl), rc_client_region(cl)->name,
				 rc_client_device(cl), NULL };

	bench_print(ctx, b, op, &w, &res, k->lat_us, bench_peak(k, b, &res), rows, nrows);
out:
	client_close(ctx, cl, rc);
	return rc;
}

/* Over libfabric, as bench_sizes over verbs: one size, or each from MIN,
 * doubling, to MAX (a row each), res their sum and the last one's clock. */
static int ofi_sizes(struct ctx *ctx, struct rc_fcli *fc, struct rc_fcli_bench *fb,
		     const struct bench_args *b, struct size_row *rows, int *nrows,
		     struct rc_stream_result *res)
{
	uint64_t last = b->msg_max ? b->msg_max : b->msg;
	struct rc_err e;
	int rc;

	*nrows = 0;
	/* the largest size's span, before any size runs */
	if ((rc = rc_fcli_check(fc, fb->off, last, 0, &e)))
		return fail(ctx, rc, "%s", ERR_TEXT(e));
	for (uint64_t msg = b->msg; msg <= last && *nrows < SIZE_ROWS; msg *= 2) {
		struct rc_stream_result one = { 0 };
		char at[80] = "";

		fb->msg = (size_t)msg;
		if ((rc = rc_fcli_bench(fc, fb, &one, &e))) {
			if (b->msg_max)
				snprintf(at, sizeof(at),
					 " (at --msg-size %llu, after %llu operations)",
					 (unsigned long long)msg, (unsigned long long)one.ops);
			else if (one.ops)
				snprintf(at, sizeof(at), " (after %llu operations)",
					 (unsigned long long)one.ops);
			return fail(ctx, rc, "%s%s", ERR_TEXT(e), at);
		}
		if (b->msg_max)
			rows[(*nrows)++] = (struct size_row){ msg, one.bytes, one.ops, one.seconds };
		one.bytes += res->bytes;
		one.ops += res->ops;
		one.seconds += res->seconds;
		*res = one;
	}
	return 0;
}

/* Over libfabric: sizes as over verbs, by the same engine, on one endpoint,
 * every operation completing (libfabric's completions), timed by the
 * clock --lat-clock picks, completions busy-polled. */
static int bench_ofi(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		     const struct client_args *ca, const struct bench_args *b, enum rc_op op,
		     uint64_t compare_add, uint64_t swap, struct bench_bufs *k)
{
	struct bench_args one = *b;
	struct rc_stream_result res = { 0 };
	struct rc_fcli_bench fb = {
		.op = op == RC_OP_WRITE  ? RC_FBENCH_WRITE
		      : op == RC_OP_READ ? RC_FBENCH_READ
		      : op == RC_OP_FAA  ? RC_FBENCH_FAA
					 : RC_FBENCH_CAS,
		.off = ca->off,
		.msg = (size_t)b->msg,
		.iters = b->iters,
		.depth = b->depth,
		.compare_add = compare_add,
		.swap = swap,
		.timeout_ms = ctx->timeout_ms,
		.lat_us = k->lat_us,
		.posted_s = k->times,
		.completed_s = k->times ? k->times + b->iters : NULL,
		.lat_clock = (enum rc_lat_clock)b->lat_clock,
	};
	const char *slash = strrchr(v->pos[0], '/');
	char peer[RC_HOST_MAX + 16];
	struct rc_fcli *fc = NULL;
	struct size_row rows[SIZE_ROWS];
	int nrows = 0, rc;

	if (b->qps > 1 || b->post_list > 1)
		return usage_err(ctx,
				 "%s: over libfabric a benchmark runs on one endpoint, an "
				 "operation a post: no --qps or --post-list",
				 c->name);
	if ((rc = fabric_client_open(ctx, c, v, ca, &fc)))
		return rc;
	if ((rc = ofi_sizes(ctx, fc, &fb, b, rows, &nrows, &res)) || (rc = samples_kept(ctx, k, b)))
		goto out;
	/* every operation completes: each is signalled, one a post */
	one.signal_every = 1;
	one.post_list = 1;
	snprintf(peer, sizeof(peer), "%.*s", slash ? (int)(slash - v->pos[0]) : 0, v->pos[0]);
	struct bench_where w = { peer, rc_fcli_region(fc)->name, rc_fcli_info(fc)->domain,
				 rc_fcli_info(fc) };

	bench_print(ctx, &one, op, &w, &res, k->lat_us, bench_peak(k, b, &res), rows, nrows);
out:
	rc_fcli_close(fc);
	return rc;
}

int bench_run(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
	      const struct client_args *ca, const struct bench_args *b, enum rc_op op,
	      uint64_t compare_add, uint64_t swap)
{
	struct bench_bufs k = { 0 };
	struct metrics m;
	int rc;

	metrics_init(&m);
	metrics_label(&m, "command", c->name);
	if (b->metrics)
		out_keep_tree(&ctx->out);
	if (!(rc = bench_bufs_get(ctx, b, &k)))
		rc = ca->fab.kind == RC_FABRIC_OFI
			     ? bench_ofi(ctx, c, v, ca, b, op, compare_add, swap, &k)
			     : bench_verbs(ctx, c, v, ca, b, op, compare_add, swap, &k);
	free(k.times);
	free(k.lat_us);
	if (b->metrics) {
		metrics_labels_from(&m, out_tree(&ctx->out), "operation,mode,device,peer,region");
		metrics_from_report(&m, out_tree(&ctx->out), bench_rows,
				    sizeof(bench_rows) / sizeof(bench_rows[0]));
		rc = metrics_commit(ctx, &m, b->metrics, rc);
	}
	metrics_free(&m);
	return rc;
}
