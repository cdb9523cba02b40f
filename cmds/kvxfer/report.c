// SPDX-License-Identifier: MIT
/* rdmactl kvxfer serve and send, what they print: one document per event
 * (listening, connected, a request done...), the summary, and the
 * --metrics figures. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <rdmactl/kv.h>

#include "cmds.h"
#include "kvxfer.h"
#include "metrics.h"

static void put_timeline(struct out *o, const char *key, const char *label, const double *us,
			 uint32_t n)
{
	if (!us) {
		out_null(o, key);
		return;
	}
	out_text(o, "  %s (ms):", label);
	out_arr_begin(o, key);
	for (uint32_t i = 0; i < n; i++) {
		if (us[i] < 0) {
			out_null(o, NULL);
			out_text(o, " -");
		} else {
			out_f64(o, NULL, NULL, us[i]); /* JSON: microseconds, as the key says */
			out_text(o, " %.3f", us[i] / 1000.0);
		}
	}
	out_arr_end(o);
	out_text(o, "\n");
}

static void put_report(struct run_ctx *run, const struct kv_event *ev)
{
	static const char *const names
		[] = { [KV_EV_DONE] = "done", [KV_EV_CANCELLED] = "cancelled", [KV_EV_FAILED] = "failed" };
	const struct kv_report *r = ev->rep;
	struct out *o = &run->ctx->out;
	double gbyte = r->seconds > 0 ? (double)r->bytes / 1e9 / r->seconds : 0;

	out_str(o, "event", NULL, names[ev->kind]);
	out_u64(o, "request", "request %llu: ", r->req);
	out_text(o, "%s", names[ev->kind]);
	out_u64(o, "rank", NULL, ev->rank);
	out_u64(o, "tokens", ", %llu tokens", r->tokens);
	out_u64(o, "layers", NULL, r->layers);
	out_u64(o, "layers_landed", ", %llu", r->layers_landed);
	out_text(o, "/%u layers", r->layers);
	out_u64(o, "bytes", ", %llu bytes", r->bytes);
	out_f64(o, "seconds", " in %.4f s", r->seconds);
	out_f64(o, "gbyte_per_s", " (%.3f GB/s", gbyte);
	out_f64(o, "gbit_per_s", ", %.3f Gb/s)", gbyte * 8);
	if (run->send) {
		if (r->exposed_s >= 0)
			out_f64(o, "exposed_us", ", exposed %.0f us", r->exposed_s * 1e6);
		else
			out_null(o, "exposed_us");
	}
	if (r->unpack_s >= 0)
		out_f64(o, "unpack_us",
			run->send ? " (%.0f us of it the decode ranks' unpack)"
				  : ", in the pool %.0f us after the last layer landed",
			r->unpack_s * 1e6);
	else
		out_null(o, "unpack_us");
	if (!run->send && r->complete_s >= 0)
		out_f64(o, "complete_us", " (complete %.0f us after its start)",
			r->complete_s * 1e6);
	else if (!run->send)
		out_null(o, "complete_us");
	/* JSON: when it started here, as Unix time: one run's ranks line up. */
	if (r->started_at > 0)
		out_f64(o, "started_at", NULL, r->started_at);
	else
		out_null(o, "started_at");
	if (!run->send) {
		out_arr_begin(o, "sources");
		for (uint32_t s = 0; s < 64; s++)
			if (r->sources >> s & 1)
				out_u64(o, NULL, NULL, s);
		out_arr_end(o);
	}
	out_bool(o, "checked", NULL, r->checked);
	out_bool(o, "verified", NULL, r->verified);
	out_text(o, ", %s",
		 r->verified  ? "verified"
		 : r->checked ? "NOT verified (content wrong)"
			      : "not checked");
	if (r->reason)
		out_str(o, "reason", ": %s", r->reason);
	else
		out_null(o, "reason");
	out_text(o, "\n");
	if (run->send)
		put_timeline(o, "ready_us", "layers ready", r->ready_us, r->layers);
	put_timeline(o, "landed_us", "layers landed", r->landed_us, r->layers);
}

/* send on a terminal: requests ended of those asked, bytes done, the rate;
 * redrawn after each event, whose line came first. */
static void send_progress(struct run_ctx *run, const struct kv_event *ev)
{
	double el = rc_now() - run->prog.start;
	char b[32];

	if (ev->kind == KV_EV_DONE || ev->kind == KV_EV_CANCELLED || ev->kind == KV_EV_FAILED) {
		run->ended++;
		run->bytes += ev->kind == KV_EV_DONE ? ev->rep->bytes : 0;
	}
	rc_format_size(run->bytes, b, sizeof(b));
	progress_say(&run->prog, true, "kvxfer send: %u/%u request%s ended, %s moved, %.3f GB/s",
		     run->ended, run->asked, run->asked == 1 ? "" : "s", b,
		     el > 0 ? (double)run->bytes / 1e9 / el : 0.0);
}

void kvxfer_on_event(void *arg, const struct kv_event *ev)
{
	struct run_ctx *run = arg;
	struct out *o = &run->ctx->out;

	if (run->send)
		progress_end(&run->prog); /* the event's line starts clean */
	switch (ev->kind) {
	case KV_EV_READY:
		out_str(o, "event", NULL, run->send ? "ready" : "listening");
		out_u64(o, "rank",
			run->send ? "source rank %llu: connected and welcomed"
				  : "decode rank %llu listening",
			ev->rank);
		if (!run->send) {
			out_str(o, "address", " on %s", ev->peer);
			out_u64(o, "port", ":%llu", ev->port);
			out_str(o, "device", " (%s)", ev->dev);
			if (ev->nrails > 1)
				out_u64(o, "rail", ", rail %llu", (unsigned long long)ev->rail + 1);
			out_u64(o, "pool_bytes", ", pool %llu bytes", ev->pool_bytes);
			out_u64(o, "land_bytes", ", landing area %llu bytes", ev->land_bytes);
		}
		if (ev->mem)
			out_mem(o, ", ", ev->mem->kind, ev->mem->gpu, ev->mem->reg,
				ev->mem->reg_notes);
		out_text(o, "\n");
		break;
	case KV_EV_PEER_REFUSED:
		out_str(o, "event", NULL, "refused");
		out_str(o, "peer", "%s", ev->peer);
		if (ev->rank < KV_MAX_TP)
			out_u64(o, "peer_rank", " (source rank %llu)", ev->rank);
		else
			out_null(o, "peer_rank");
		out_str(o, "reason", ": refused: %s\n", ev->reason);
		break;
	case KV_EV_PEER_UP:
	case KV_EV_PEER_DOWN:
		out_str(o, "event", NULL, ev->kind == KV_EV_PEER_UP ? "connected" : "disconnected");
		out_str(o, "peer", "%s", ev->peer);
		out_u64(o, "peer_rank", run->send ? " (decode rank %llu)" : " (source rank %llu)",
			ev->rank);
		if (ev->kind == KV_EV_PEER_UP) {
			out_u64(o, "qps", ": connected, %llu data QPs", ev->qps);
			if (ev->dev)
				out_str(o, "device", " through %s", ev->dev);
			out_text(o, "\n");
		} else {
			out_text(o, ": gone");
			out_str(o, "reason", ": %s\n", ev->reason);
		}
		break;
	default:
		put_report(run, ev);
	}
	out_event(o);
	if (run->send)
		send_progress(run, ev);
}

/* Several rails: each rail's peers (serve: source ranks welcomed on it;
 * send: decode ranks sent to over it) and bytes, and its share of them. */
static void put_rails(struct out *o, const struct kv_summary *s, bool send)
{
	uint64_t total = 0;

	if (s->nrails < 2)
		return;
	for (uint32_t i = 0; i < s->nrails; i++)
		total += s->rails[i].bytes;
	out_text(o, "; per rail:");
	out_arr_begin(o, "rails");
	for (uint32_t i = 0; i < s->nrails; i++) {
		const struct kv_rail_sum *r = &s->rails[i];

		out_obj_begin(o, NULL);
		out_u64(o, "rail", i ? ", rail %llu" : " rail %llu", i + 1);
		out_str(o, "device", " %s", r->dev);
		if (send) {
			out_str(o, "address", r->addr[0] ? " (from %s)" : "", r->addr);
			out_u64(o, "decode_ranks", " %llu decode ranks", r->sources);
		} else {
			out_str(o, "address", " (%s", r->addr);
			out_u64(o, "port", ":%llu)", r->port);
			out_u64(o, "sources", " %llu source ranks", r->sources);
		}
		out_u64(o, "bytes", ", %llu bytes", r->bytes);
		out_f64(o, "share", " (%.2f of the total)",
			total ? (double)r->bytes / (double)total : 0.0);
		out_obj_end(o);
	}
	out_arr_end(o);
}

void kvxfer_put_summary(struct ctx *ctx, const struct kv_summary *s, uint32_t asked, bool send)
{
	struct out *o = &ctx->out;
	uint32_t n = s->done + s->cancelled + s->failed;
	double gbyte;

	out_str(o, "event", NULL, "summary");
	out_u64(o, "requests", "summary: %llu requests", n);
	out_u64(o, "done", ", %llu done", s->done);
	out_u64(o, "verified", " (%llu verified)", s->verified);
	out_u64(o, "cancelled", ", %llu cancelled", s->cancelled);
	out_u64(o, "failed", ", %llu failed", s->failed);
	out_u64(o, "bytes", "; %llu bytes", s->bytes);
	out_f64(o, "seconds", " in %.3f s", s->seconds);
	gbyte = s->seconds > 0 ? (double)s->bytes / 1e9 / s->seconds : 0;
	out_f64(o, "gbyte_per_s", " (%.3f GB/s", gbyte);
	out_f64(o, "gbit_per_s", ", %.3f Gb/s)", gbyte * 8);
	if (send)
		out_f64(o, "exposed_total_us", NULL, s->exposed_sum_s * 1e6);
	if (send && s->done) {
		out_f64(o, "exposed_avg_us", "; exposed %.0f us on average",
			s->exposed_sum_s / s->done * 1e6);
		out_f64(o, "exposed_max_us", ", %.0f at most", s->exposed_max_s * 1e6);
	}
	if (send) {
		out_text(o, "; per data QP: bytes");
		out_arr_begin(o, "qp_bytes");
		for (uint32_t k = 0; k < s->nqps; k++)
			out_u64(o, NULL, " %llu", s->qp_bytes[k]);
		out_arr_end(o);
		out_text(o, ", writes");
		out_arr_begin(o, "qp_writes");
		for (uint32_t k = 0; k < s->nqps; k++)
			out_u64(o, NULL, " %llu", s->qp_wrs[k]);
		out_arr_end(o);
		out_u64(o, "routes", "; %llu routes", s->routes);
		out_u64(o, "routes_packed", ", %llu packed", s->routes_packed);
		out_u64(o, "packed_bytes", " (%llu bytes copied", s->packed_bytes);
		out_u64(o, "gathered_bytes", ", %llu gathered", s->gathered_bytes);
		out_u64(o, "gather_sge", ", up to %llu pieces a write)", s->gather_sge);
		out_u64(o, "routes_landed", ", %llu landed", s->routes_landed);
	}
	put_rails(o, s, send);
	out_text(o, "\n");
	(void)asked;
	out_event(o);
}

/* --metrics: the summary event's figures (kvxfer_put_summary). */
#define KV_ROWS(rail_help) \
	{ "done", \
	  "rdmactl_kvxfer_requests_total", \
	  METRIC_COUNTER, \
	  "requests finished, by outcome", \
	  0, \
	  "outcome=done" }, \
		{ "cancelled", \
		  "rdmactl_kvxfer_requests_total", \
		  METRIC_COUNTER, \
		  "requests finished, by outcome", \
		  0, \
		  "outcome=cancelled" }, \
		{ "failed", \
		  "rdmactl_kvxfer_requests_total", \
		  METRIC_COUNTER, \
		  "requests finished, by outcome", \
		  0, \
		  "outcome=failed" }, \
		{ "verified", "rdmactl_kvxfer_verified_requests_total", METRIC_COUNTER, \
		  "requests whose every byte was checked and right" }, \
		{ "bytes", "rdmactl_kvxfer_bytes_total", METRIC_COUNTER, \
		  "bytes of the requests done" }, \
		{ "seconds", "rdmactl_kvxfer_duration_seconds", METRIC_GAUGE, \
		  "from the first request's start to the last one's end" }, \
	{ \
		"rails[].bytes", "rdmactl_kvxfer_rail_bytes_total", METRIC_COUNTER, rail_help, 0, \
			"device={device}" \
	}
static const struct metric_row kv_serve_rows[] = {
	KV_ROWS("bytes of the requests done that came in on each rail (device)"),
};
static const struct metric_row kv_send_rows[] = {
	KV_ROWS("RDMA WRITE payload bytes sent over each rail (device)"),
	{ "exposed_max_us", "rdmactl_kvxfer_exposed_max_seconds", METRIC_GAUGE,
	  "the longest a request's transfer outlasted its compute", 1e-6 },
	{ "exposed_total_us", "rdmactl_kvxfer_exposed_seconds_total", METRIC_COUNTER,
	  "the requests' transfer time not hidden by compute, together", 1e-6 },
	{ "qp_bytes[]", "rdmactl_kvxfer_qp_bytes_total", METRIC_COUNTER,
	  "RDMA WRITE payload bytes per data queue pair (all decode ranks)", 0, "qp={#0}" },
};
#undef KV_ROWS
const struct metric_table kv_serve_metric_table = METRIC_TABLE(kv_serve_rows);
const struct metric_table kv_send_metric_table = METRIC_TABLE(kv_send_rows);
