// SPDX-License-Identifier: MIT
/* rdmactl kvxfer serve and send: options to the engines (libcore/kv_*.c),
 * their events to the output layer, one document per event. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <rdmactl/kv.h>
#include <rdmactl/parse.h>

#include "client_cmds.h"
#include "cmds.h"
#include "kvxfer.h"
#include "metrics.h"

struct run_ctx {
	struct ctx *ctx;
	bool send;
	/* send: the progress line on a terminal, and what it counts */
	struct progress prog;
	uint32_t asked, ended;
	uint64_t bytes;
};

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

static void on_event(void *arg, const struct kv_event *ev)
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

static void put_summary(struct ctx *ctx, const struct kv_summary *s, uint32_t asked, bool send)
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
	out_text(o, "\n");
	(void)asked;
	out_event(o);
}

static int common(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		  struct kv_common_opts *co)
{
	/* What --token-file held: it lasts the run, which is one at a time. */
	static char token_buf[RC_TOKEN_MAX + 1];
	int rank = 0, after = 0;
	uint64_t u = 0;
	int rc;

	co->rank = 0;
	co->dev_name = ctx->dev_name;
	co->timeout_ms = ctx->timeout_ms;
	co->hb_ms = 200;
	co->hb_timeout_ms = 3000;
	co->cancel_req = -1;
	co->stop_fd = -1;
	if ((rc = kvxfer_geom(ctx, c, v, &co->g, NULL, 0)) ||
	    (rc = opt_int_at(ctx, c, v, KVX_RANK, 0, KV_MAX_TP - 1, &rank)) ||
	    (rc = opt_int_at(ctx, c, v, KVX_HEARTBEAT_MS, 10, 60000, &co->hb_ms)) ||
	    (rc = opt_int_at(ctx, c, v, KVX_HEARTBEAT_TIMEOUT, 50, 3600000, &co->hb_timeout_ms)) ||
	    (rc = opt_u64_at(ctx, c, v, KVX_REQUESTS, &u)))
		return rc;
	if (u > UINT32_MAX)
		return usage_err(ctx, "invalid --requests %llu", (unsigned long long)u);
	if ((rc = opt_token(ctx, v, KVX_TOKEN, KVX_TOKEN_FILE, token_buf, &co->token)))
		return rc;
	co->rank = (uint32_t)rank;
	co->requests = (uint32_t)u;
	if (co->hb_timeout_ms <= co->hb_ms)
		return usage_err(
			ctx,
			"--heartbeat-timeout (%d ms) must be longer than --heartbeat-ms (%d ms)",
			co->hb_timeout_ms, co->hb_ms);
	if (opt_on(v, KVX_CANCEL_REQUEST) != opt_on(v, KVX_CANCEL_AFTER_LAYERS))
		return usage_err(ctx, "--cancel-request and --cancel-after-layers go together");
	if (opt_on(v, KVX_CANCEL_REQUEST)) {
		if ((rc = opt_u64_at(ctx, c, v, KVX_CANCEL_REQUEST, &u)))
			return rc;
		co->cancel_req = (int64_t)u;
		if ((rc = opt_int_at(ctx, c, v, KVX_CANCEL_AFTER_LAYERS, 0, KV_MAX_LAYERS, &after)))
			return rc;
		co->cancel_after = (uint32_t)after;
	}
	return 0;
}

/* SIGINT/SIGTERM/SIGHUP through a descriptor, so that stopping is a step. */
static int signals(struct ctx *ctx, sigset_t *mask)
{
	int fd;

	sigemptyset(mask);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGHUP);
	sigprocmask(SIG_BLOCK, mask, NULL);
	fd = signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0)
		return fail(ctx, -errno, "signalfd: %s", strerror(errno));
	return fd;
}

/* --metrics: the summary's figures. */
static void kv_metrics(struct metrics *m, const struct kv_summary *s, bool send)
{
	char qp[16];

	metrics_family(m, "rdmactl_kvxfer_requests_total", METRIC_COUNTER,
		       "requests finished, by outcome");
	metrics_sample(m, "", "outcome", "done", s->done);
	metrics_sample(m, "", "outcome", "cancelled", s->cancelled);
	metrics_sample(m, "", "outcome", "failed", s->failed);
	metrics_counter(m, "rdmactl_kvxfer_verified_requests_total",
			"requests whose every byte was checked and right", s->verified);
	metrics_counter(m, "rdmactl_kvxfer_bytes_total", "bytes of the requests done",
			(double)s->bytes);
	metrics_gauge(m, "rdmactl_kvxfer_duration_seconds",
		      "from the first request's start to the last one's end", s->seconds);
	if (!send)
		return;
	metrics_gauge(m, "rdmactl_kvxfer_exposed_max_seconds",
		      "the longest a request's transfer outlasted its compute", s->exposed_max_s);
	metrics_counter(m, "rdmactl_kvxfer_exposed_seconds_total",
			"the requests' transfer time not hidden by compute, together",
			s->exposed_sum_s);
	metrics_family(m, "rdmactl_kvxfer_qp_bytes_total", METRIC_COUNTER,
		       "RDMA WRITE payload bytes per data queue pair (all decode ranks)");
	for (uint32_t k = 0; k < s->nqps; k++) {
		snprintf(qp, sizeof(qp), "%u", k);
		metrics_sample(m, "", "qp", qp, (double)s->qp_bytes[k]);
	}
}

static int finish_run(struct ctx *ctx, int rc, const struct rc_err *e, const struct kv_summary *sum,
		      uint32_t asked, bool send, int sfd, sigset_t *mask)
{
	if (sfd >= 0) {
		close(sfd);
		sigprocmask(SIG_UNBLOCK, mask, NULL);
	}
	if (rc)
		return fail(ctx, rc, "%s", e->msg);
	put_summary(ctx, sum, asked, send);
	if (sum->failed)
		return fail(ctx, -EIO, "%u request%s failed", sum->failed,
			    sum->failed == 1 ? "" : "s");
	if (send && sum->done + sum->cancelled < asked)
		return fail(ctx, -EINTR, "stopped after %u of %u requests",
			    sum->done + sum->cancelled, asked);
	return 0;
}

static int finish(struct ctx *ctx, const struct opt_vals *v, uint32_t rank, int rc,
		  const struct rc_err *e, const struct kv_summary *sum, uint32_t asked, bool send,
		  int sfd, sigset_t *mask)
{
	const char *path = opt_arg(v, KVX_METRICS);
	bool ran = !rc;
	struct metrics m;

	rc = finish_run(ctx, rc, e, sum, asked, send, sfd, mask);
	if (!path)
		return rc;
	metrics_init(&m);
	metrics_label(&m, "command", send ? "kvxfer send" : "kvxfer serve");
	metrics_label_u64(&m, "rank", rank);
	if (ran)
		kv_metrics(&m, sum, send);
	return metrics_commit(ctx, &m, path, rc);
}

/* --mem and --gpu-reg of serve (the pool) and send (the source pages). */
static int mem_opts(struct ctx *ctx, const struct opt_vals *v, const char *sub,
		    struct rc_mem_spec *m)
{
	int rc;

	if (opt_on(v, KVX_GPU_REG) &&
	    (rc_mem_reg_parse(opt_arg(v, KVX_GPU_REG), &m->reg) || m->reg == RC_REG_HOST))
		return usage_err(ctx,
				 "invalid --gpu-reg '%s': expected auto, dmabuf, peermem or bounce",
				 opt_arg(v, KVX_GPU_REG));
	if ((rc = opt_mem(ctx, opt_arg(v, KVX_MEM), true, NULL, &m->kind, &m->gpu)))
		return rc;
	if (opt_on(v, KVX_GPU_REG) && m->kind != RC_MEM_CUDA)
		return usage_err(ctx, "kvxfer %s: --gpu-reg is for --mem cuda[:N]", sub);
	return 0;
}

int kvxfer_serve(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v)
{
	struct kv_recv_opts o = { .scatter_seed = 0 };
	struct run_ctx r = { ctx, false };
	struct kv_summary sum;
	struct rc_target t;
	uint64_t pool = 0, land = 0;
	struct rc_err e;
	sigset_t mask;
	int rc;

	if ((rc = common(ctx, c, v, &o.c)))
		return rc;
	if (!opt_on(v, KVX_LISTEN) || !opt_on(v, KVX_POOL_PAGES))
		return usage_err(ctx,
				 "kvxfer serve: --listen ADDR:PORT and --pool-pages N are required");
	if (rc_parse_target(opt_arg(v, KVX_LISTEN), &t) || t.region[0])
		return usage_err(ctx, "invalid --listen '%s': expected ADDR:PORT",
				 opt_arg(v, KVX_LISTEN));
	if ((rc = opt_u64_at(ctx, c, v, KVX_POOL_PAGES, &pool)) ||
	    (rc = opt_u64_at(ctx, c, v, KVX_SCATTER, &o.scatter_seed)) ||
	    (rc = opt_u64_at(ctx, c, v, KVX_LAND_PAGES, &land)))
		return rc;
	if (pool < 1 || pool > UINT32_MAX)
		return usage_err(ctx, "invalid --pool-pages %llu: expected at least 1",
				 (unsigned long long)pool);
	if (opt_on(v, KVX_LAND_PAGES) && (land < 1 || land > pool))
		return usage_err(ctx,
				 "invalid --land-pages %llu: expected 1 to the pool's %llu pages",
				 (unsigned long long)land, (unsigned long long)pool);
	o.land_pages = (uint32_t)land;
	if (o.c.rank >= o.c.g.dst_tp)
		return usage_err(ctx, "kvxfer serve: --rank %u, but --dst-tp %u has ranks 0 to %u",
				 o.c.rank, o.c.g.dst_tp, o.c.g.dst_tp - 1);
	o.addr = t.host;
	o.port = t.port;
	o.pool_pages = (uint32_t)pool;
	o.scatter = opt_on(v, KVX_SCATTER);
	o.verify = opt_on(v, KVX_VERIFY);
	if ((rc = mem_opts(ctx, v, "serve", &o.mem)))
		return rc;
	if (o.mem.kind == RC_MEM_CUDA && o.verify)
		return usage_err(
			ctx, "kvxfer serve: --verify reads the pool with the CPU, not with --mem %s",
			opt_arg(v, KVX_MEM));
	o.c.on_event = on_event;
	o.c.arg = &r;
	if (ctx->session)
		return usage_err(ctx,
				 "kvxfer serve: run it from the command line, not in the shell");
	if (opt_on(v, KVX_METRICS) && (rc = metrics_path_check(ctx, opt_arg(v, KVX_METRICS))))
		return rc;
	if ((rc = opt_mem_ready(ctx, opt_arg(v, KVX_MEM), o.mem.kind, o.mem.gpu)))
		return rc;
	if ((o.c.stop_fd = signals(ctx, &mask)) < 0)
		return o.c.stop_fd;
	rc = kv_recv_run(&o, &sum, &e);
	return finish(ctx, v, o.c.rank, rc, &e, &sum, o.c.requests, false, o.c.stop_fd, &mask);
}

/* Test hook, kept out of help: RDMACTL_TEST_KV_CORRUPT=REQ sends request
 * REQ with one byte of its content wrong (kv_send_opts.corrupt), so that the
 * tests see --verify fail. */
static int corrupt_hook(struct ctx *ctx, struct kv_send_opts *o)
{
	const char *s = getenv("RDMACTL_TEST_KV_CORRUPT");
	unsigned long long req;
	char rest;

	if (!s || !*s)
		return 0;
	if (sscanf(s, "%llu%c", &req, &rest) != 1 || req > UINT32_MAX)
		return usage_err(ctx, "RDMACTL_TEST_KV_CORRUPT=%s: not a request number", s);
	o->corrupt = true;
	o->corrupt_req = (uint32_t)req;
	return 0;
}

/* --connect, each decode rank (given as often as there are), and --tokens. */
static int send_targets(struct ctx *ctx, const struct opt_vals *v, struct kv_send_opts *o,
			struct kv_send_target *targets)
{
	if (!opt_on(v, KVX_CONNECT) || !opt_on(v, KVX_TOKENS))
		return usage_err(
			ctx,
			"kvxfer send: --connect ADDR:PORT (each decode rank) and --tokens N are required");
	for (int i = 0; i < v->nmulti; i++) {
		struct rc_target t;

		if (rc_parse_target(v->multi[i], &t) || t.region[0])
			return usage_err(ctx, "invalid --connect '%s': expected ADDR:PORT",
					 v->multi[i]);
		snprintf(targets[o->ntargets].host, sizeof(targets[0].host), "%s", t.host);
		snprintf(targets[o->ntargets].port, sizeof(targets[0].port), "%s", t.port);
		o->ntargets++;
	}
	return 0;
}

/* A request's size and pace: --tokens, --qps, --inflight, --layer-compute-us,
 * checked against the geometry and this rank. */
static int send_load(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		     struct kv_send_opts *o)
{
	int rc, nqps = 1, inflight = 1;
	uint64_t tokens = 0;
	const char *lc;

	if ((rc = opt_u64_at(ctx, c, v, KVX_TOKENS, &tokens)) ||
	    (rc = opt_int_at(ctx, c, v, KVX_QPS, 1, KV_MAX_QPS, &nqps)) ||
	    (rc = opt_int_at(ctx, c, v, KVX_INFLIGHT, 1, 64, &inflight)))
		return rc;
	o->nqps = (uint32_t)nqps;
	o->inflight = (uint32_t)inflight;
	if (tokens < 1 || tokens > UINT32_MAX)
		return usage_err(ctx, "invalid --tokens %llu: expected at least 1",
				 (unsigned long long)tokens);
	if (o->c.rank >= o->c.g.src_tp)
		return usage_err(ctx, "kvxfer send: --rank %u, but --src-tp %u has ranks 0 to %u",
				 o->c.rank, o->c.g.src_tp, o->c.g.src_tp - 1);
	if (kv_pages_for(&o->c.g, true, (uint32_t)tokens) > KV_MAX_REQ_PAGES)
		return usage_err(ctx, "kvxfer send: %llu tokens take more than %d destination pages",
				 (unsigned long long)tokens, KV_MAX_REQ_PAGES);
	if ((lc = opt_arg(v, KVX_LAYER_COMPUTE_US))) {
		char *end;

		o->layer_compute_us = strtod(lc, &end);
		if (end == lc || *end || !isfinite(o->layer_compute_us) ||
		    o->layer_compute_us < 0 || o->layer_compute_us > 1e7)
			return usage_err(ctx,
					 "invalid --layer-compute-us '%s': expected 0 to 10000000",
					 lc);
	}
	o->tokens = (uint32_t)tokens;
	return 0;
}

/* How the bytes go: --bind, --no-stream, --max-sge, the source pages'
 * memory, --pack and --land. */
static int send_path(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		     struct kv_send_opts *o)
{
	int rc, sge = KV_GATHER_MAX;

	o->bind_addr = opt_arg(v, KVX_BIND);
	o->no_stream = opt_on(v, KVX_NO_STREAM);
	if ((rc = opt_int_at(ctx, c, v, KVX_MAX_SGE, 1, KV_GATHER_MAX, &sge)))
		return rc;
	o->max_sge = (uint32_t)sge;
	if ((rc = mem_opts(ctx, v, "send", &o->mem)))
		return rc;
	if (opt_on(v, KVX_PACK) && kv_pack_parse(opt_arg(v, KVX_PACK), &o->pack))
		return usage_err(ctx, "invalid --pack '%s': expected auto, always or never",
				 opt_arg(v, KVX_PACK));
	if (opt_on(v, KVX_LAND) && kv_pack_parse(opt_arg(v, KVX_LAND), &o->land))
		return usage_err(ctx, "invalid --land '%s': expected auto, always or never",
				 opt_arg(v, KVX_LAND));
	return 0;
}

int kvxfer_send(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v)
{
	struct kv_send_target targets[REPEAT_MAX];
	struct kv_send_opts o = { .nqps = 1, .inflight = 1 };
	struct run_ctx r = { ctx, true };
	struct kv_summary sum;
	struct rc_err e;
	sigset_t mask;
	int rc;

	if ((rc = common(ctx, c, v, &o.c)))
		return rc;
	if (!opt_on(v, KVX_REQUESTS))
		o.c.requests = 1;
	if ((rc = send_targets(ctx, v, &o, targets)) || (rc = send_load(ctx, c, v, &o)) ||
	    (rc = send_path(ctx, c, v, &o)) || (rc = corrupt_hook(ctx, &o)))
		return rc;
	o.targets = targets;
	o.c.on_event = on_event;
	o.c.arg = &r;
	if (ctx->session)
		return usage_err(ctx, "kvxfer send: run it from the command line, not in the shell");
	if (opt_on(v, KVX_METRICS) && (rc = metrics_path_check(ctx, opt_arg(v, KVX_METRICS))))
		return rc;
	if ((rc = opt_mem_ready(ctx, opt_arg(v, KVX_MEM), o.mem.kind, o.mem.gpu)))
		return rc;
	if ((o.c.stop_fd = signals(ctx, &mask)) < 0)
		return o.c.stop_fd;
	progress_init(&r.prog, ctx);
	r.asked = o.c.requests;
	rc = kv_send_run(&o, &sum, &e);
	progress_end(&r.prog);
	return finish(ctx, v, o.c.rank, rc, &e, &sum, o.c.requests, true, o.c.stop_fd, &mask);
}
