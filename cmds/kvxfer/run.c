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
#include "rails_cmds.h"

static int common(struct ctx *ctx, const struct opt_vals *v, struct kvxfer_args *a,
		  struct kv_common_opts *co)
{
	/* What --token-file held: it lasts the run, which is one at a time. */
	static char token_buf[RC_TOKEN_MAX + 1];
	int rc;

	co->dev_name = ctx->dev_name;
	co->timeout_ms = ctx->timeout_ms;
	co->cancel_req = -1;
	co->stop_fd = -1;
	if ((rc = kvxfer_geom(ctx, v, a, &co->g, NULL, 0)) ||
	    (rc = kvxfer_fill(ctx, v, a, KVX_RANK, KVX_RANK)) ||
	    (rc = kvxfer_fill(ctx, v, a, KVX_HEARTBEAT_MS, KVX_HEARTBEAT_TIMEOUT)) ||
	    (rc = kvxfer_fill(ctx, v, a, KVX_REQUESTS, KVX_REQUESTS)))
		return rc;
	if (a->requests > UINT32_MAX)
		return usage_err(ctx, "invalid --requests %llu", (unsigned long long)a->requests);
	if ((rc = kvxfer_fill(ctx, v, a, KVX_TOKEN, KVX_TOKEN_FILE)) ||
	    (rc = token_take(ctx, a->token_arg, a->token_file, token_buf, &co->token)))
		return rc;
	co->rank = (uint32_t)a->rank;
	co->requests = (uint32_t)a->requests;
	co->hb_ms = a->hb_ms;
	co->hb_timeout_ms = a->hb_timeout_ms;
	if (co->hb_timeout_ms <= co->hb_ms)
		return usage_err(
			ctx,
			"--heartbeat-timeout (%d ms) must be longer than --heartbeat-ms (%d ms)",
			co->hb_timeout_ms, co->hb_ms);
	if (!a->cancel_request_given != !a->cancel_after_given)
		return usage_err(ctx, "--cancel-request and --cancel-after-layers go together");
	if (a->cancel_request_given) {
		if ((rc = kvxfer_fill(ctx, v, a, KVX_CANCEL_REQUEST, KVX_CANCEL_AFTER_LAYERS)))
			return rc;
		co->cancel_req = (int64_t)a->cancel_request;
		co->cancel_after = (uint32_t)a->cancel_after;
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

static int finish_run(struct ctx *ctx, int rc, const struct rc_err *e, const struct kv_summary *sum,
		      uint32_t asked, bool send, int sfd, sigset_t *mask)
{
	if (sfd >= 0) {
		close(sfd);
		sigprocmask(SIG_UNBLOCK, mask, NULL);
	}
	if (rc)
		return fail(ctx, rc, "%s", ERR_TEXT(*e));
	kvxfer_put_summary(ctx, sum, asked, send);
	if (sum->failed)
		return fail(ctx, -EIO, "%u request%s failed", sum->failed,
			    sum->failed == 1 ? "" : "s");
	if (send && sum->done + sum->cancelled < asked)
		return fail(ctx, -EINTR, "stopped after %u of %u requests",
			    sum->done + sum->cancelled, asked);
	return 0;
}

static int finish(struct ctx *ctx, const struct kvxfer_args *a, uint32_t rank, int rc,
		  const struct rc_err *e, const struct kv_summary *sum, uint32_t asked, bool send,
		  int sfd, sigset_t *mask)
{
	const char *path = a->metrics;
	bool ran = !rc;
	struct metrics m;

	if (path) /* the summary event built in text mode too */
		out_keep_tree(&ctx->out);
	rc = finish_run(ctx, rc, e, sum, asked, send, sfd, mask);
	if (!path)
		return rc;
	metrics_init(&m);
	metrics_label(&m, "command", send ? "kvxfer send" : "kvxfer serve");
	metrics_label_u64(&m, "rank", rank);
	if (ran)
		metrics_render(&m, out_last_event(&ctx->out),
			       send ? &kv_send_metric_table : &kv_serve_metric_table);
	return metrics_commit(ctx, &m, path, rc);
}

/* --mem and --gpu-reg of serve (the pool) and send (the source pages). */
static int mem_opts(struct ctx *ctx, const struct opt_vals *v, struct kvxfer_args *a,
		    const char *sub, struct rc_mem_spec *m)
{
	int rc;

	if ((rc = kvxfer_fill(ctx, v, a, KVX_MEM, KVX_GPU_REG)))
		return rc;
	if (rc_mem_reg_parse(a->gpu_reg, &m->reg) || m->reg == RC_REG_HOST)
		return usage_err(ctx,
				 "invalid --gpu-reg '%s': expected auto, dmabuf, peermem or bounce",
				 a->gpu_reg);
	if ((rc = opt_mem(ctx, a->mem, true, NULL, &m->kind, &m->gpu)))
		return rc;
	if (a->gpu_reg_given && m->kind != RC_MEM_CUDA)
		return usage_err(ctx, "kvxfer %s: --gpu-reg is for --mem cuda[:N]", sub);
	return 0;
}

/* --listen, one address or one a rail (with -d DEV1,DEV2, or --rails PLAN
 * and --listen 0.0.0.0:PORT). */
static int serve_listen(struct ctx *ctx, const struct kvxfer_args *a, struct kvxfer_rails *kr,
			struct listen_rails *lr, struct kv_recv_opts *o)
{
	const char *listen = a->listen, *devs = ctx->dev_name;
	int rc;

	if (a->rails && (rc = rails_auto_listen(ctx, "kvxfer serve", a->rails, a->listen, NULL,
						&kr->ra, kr->listen, sizeof(kr->listen))))
		return rc;
	if (a->rails) {
		listen = kr->listen;
		devs = kr->ra.devs; /* as -d DEV1,DEV2 */
	}
	if ((rc = listen_rails(ctx, "kvxfer serve", listen, devs, lr)))
		return rc;
	o->addr = lr->host[0];
	o->port = lr->port[0];
	if (a->rails)
		o->c.dev_name = kr->ra.dev[0];
	if (lr->n < 2)
		return 0;
	o->nrails = lr->n;
	for (int i = 0; i < lr->n; i++) {
		o->rail_addr[i] = lr->host[i];
		o->rail_port[i] = lr->port[i];
		o->rail_dev[i] = lr->dev[i][0] ? lr->dev[i] : NULL;
	}
	o->c.dev_name = o->rail_dev[0];
	return 0;
}

int kvxfer_serve(struct ctx *ctx, const struct opt_vals *v, struct kvxfer_args *a)
{
	struct kv_recv_opts o = { .scatter_seed = 0 };
	struct run_ctx r = { ctx, false };
	struct kv_summary sum;
	struct listen_rails lr;
	struct kvxfer_rails kr = { .listen = "" };
	struct rc_err e;
	sigset_t mask;
	int rc;

	if ((rc = common(ctx, v, a, &o.c)) || (rc = kvxfer_fill(ctx, v, a, KVX_LISTEN, KVX_RAILS)))
		return rc;
	if (!a->listen || !a->pool_pages_given)
		return usage_err(ctx,
				 "kvxfer serve: --listen ADDR:PORT and --pool-pages N are required");
	if ((rc = serve_listen(ctx, a, &kr, &lr, &o)))
		return rc;
	if ((rc = kvxfer_fill(ctx, v, a, KVX_POOL_PAGES, KVX_POOL_PAGES)) ||
	    (rc = kvxfer_fill(ctx, v, a, KVX_SCATTER, KVX_VERIFY)) ||
	    (rc = kvxfer_fill(ctx, v, a, KVX_LAND_PAGES, KVX_LAND_PAGES)))
		return rc;
	if (a->pool_pages < 1 || a->pool_pages > UINT32_MAX)
		return usage_err(ctx, "invalid --pool-pages %llu: expected at least 1",
				 (unsigned long long)a->pool_pages);
	if (a->land_pages_given && (a->land_pages < 1 || a->land_pages > a->pool_pages))
		return usage_err(ctx,
				 "invalid --land-pages %llu: expected 1 to the pool's %llu pages",
				 (unsigned long long)a->land_pages,
				 (unsigned long long)a->pool_pages);
	o.land_pages = (uint32_t)a->land_pages;
	if (o.c.rank >= o.c.g.dst_tp)
		return usage_err(ctx, "kvxfer serve: --rank %u, but --dst-tp %u has ranks 0 to %u",
				 o.c.rank, o.c.g.dst_tp, o.c.g.dst_tp - 1);
	o.pool_pages = (uint32_t)a->pool_pages;
	o.scatter_seed = a->scatter;
	o.scatter = a->scatter_given;
	o.verify = a->verify;
	if ((rc = mem_opts(ctx, v, a, "serve", &o.mem)))
		return rc;
	if (o.mem.kind == RC_MEM_CUDA && o.verify)
		return usage_err(
			ctx, "kvxfer serve: --verify reads the pool with the CPU, not with --mem %s",
			a->mem);
	o.c.on_event = kvxfer_on_event;
	o.c.arg = &r;
	if (ctx->session)
		return usage_err(ctx,
				 "kvxfer serve: run it from the command line, not in the shell");
	if ((rc = kvxfer_fill(ctx, v, a, KVX_METRICS, KVX_METRICS)) ||
	    (a->metrics && (rc = metrics_path_check(ctx, a->metrics))))
		return rc;
	if ((rc = opt_mem_ready(ctx, a->mem, o.mem.kind, o.mem.gpu)))
		return rc;
	if ((o.c.stop_fd = signals(ctx, &mask)) < 0)
		return o.c.stop_fd;
	rc = kv_recv_run(&o, &sum, &e);
	return finish(ctx, a, o.c.rank, rc, &e, &sum, o.c.requests, false, o.c.stop_fd, &mask);
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
static int send_targets(struct ctx *ctx, const struct opt_vals *v, struct kvxfer_args *a,
			struct kv_send_opts *o, struct kv_send_target *targets)
{
	int rc = kvxfer_fill(ctx, v, a, KVX_CONNECT, KVX_CONNECT);

	if (rc)
		return rc;
	if (!a->connect || !a->tokens_given)
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

/* -d DEV1,DEV2 (or --rails PLAN) and --bind ADDR1,ADDR2: several rails of
 * this source rank, decode rank i over rail i modulo them (fr holds the
 * strings). */
static int send_rails(struct ctx *ctx, const struct opt_vals *v, struct kvxfer_args *a,
		      struct kv_send_opts *o, struct kvxfer_rails *kr, struct from_rails *fr)
{
	const char *devs = ctx->dev_name;
	int rc;

	if ((rc = kvxfer_fill(ctx, v, a, KVX_RAILS, KVX_RAILS)))
		return rc;
	if (a->rails && o->bind_addr)
		return usage_err(ctx,
				 "kvxfer send: --rails %s picks the devices: give it or --bind, "
				 "not both",
				 a->rails);
	if (a->rails && (rc = rails_auto(ctx, "kvxfer send", a->rails, &kr->ra)))
		return rc;
	if (a->rails)
		devs = o->c.dev_name = kr->ra.devs;
	if ((rc = from_rails(ctx, "kvxfer send", devs, o->bind_addr, fr)))
		return rc;
	if (fr->n < 2)
		return 0;
	if (o->ntargets < fr->n)
		return usage_err(ctx,
				 "kvxfer send: %d rails (-d, --bind, --rails) but %d decode rank%s "
				 "(--connect): each rail needs one (decode rank i goes over rail i "
				 "modulo the rails)",
				 fr->n, o->ntargets, o->ntargets == 1 ? "" : "s");
	o->nrails = fr->n;
	for (int i = 0; i < fr->n; i++) {
		o->rail_dev[i] = fr->dev[i][0] ? fr->dev[i] : NULL;
		o->rail_bind[i] = fr->bind[i][0] ? fr->bind[i] : NULL;
	}
	o->c.dev_name = o->rail_dev[0];
	o->bind_addr = o->rail_bind[0];
	return 0;
}

/* A request's size and pace: --tokens, --qps, --inflight, --layer-compute-us,
 * checked against the geometry and this rank. */
static int send_load(struct ctx *ctx, const struct opt_vals *v, struct kvxfer_args *a,
		     struct kv_send_opts *o)
{
	int rc;

	if ((rc = kvxfer_fill(ctx, v, a, KVX_TOKENS, KVX_TOKENS)) ||
	    (rc = kvxfer_fill(ctx, v, a, KVX_QPS, KVX_QPS)) ||
	    (rc = kvxfer_fill(ctx, v, a, KVX_INFLIGHT, KVX_INFLIGHT)))
		return rc;
	o->nqps = (uint32_t)a->qps;
	o->inflight = (uint32_t)a->inflight;
	if (a->tokens < 1 || a->tokens > UINT32_MAX)
		return usage_err(ctx, "invalid --tokens %llu: expected at least 1",
				 (unsigned long long)a->tokens);
	if (o->c.rank >= o->c.g.src_tp)
		return usage_err(ctx, "kvxfer send: --rank %u, but --src-tp %u has ranks 0 to %u",
				 o->c.rank, o->c.g.src_tp, o->c.g.src_tp - 1);
	if (kv_pages_for(&o->c.g, true, (uint32_t)a->tokens) > KV_MAX_REQ_PAGES)
		return usage_err(ctx, "kvxfer send: %llu tokens take more than %d destination pages",
				 (unsigned long long)a->tokens, KV_MAX_REQ_PAGES);
	/* The row's number (plan takes any pace); a simulated layer's is at
	 * most 10 s, and send names that bound for any bad value. */
	if (a->layer_compute_given &&
	    (opt_double_parse(&cmd_kvxfer.opts[KVX_LAYER_COMPUTE_US], a->layer_compute_given,
			      &o->layer_compute_us) ||
	     o->layer_compute_us > 1e7))
		return usage_err(ctx, "invalid --layer-compute-us '%s': expected 0 to 10000000",
				 a->layer_compute_given);
	o->tokens = (uint32_t)a->tokens;
	return 0;
}

/* How the bytes go: --bind, --no-stream, --max-sge, the source pages'
 * memory, --pack and --land. */
static int send_path(struct ctx *ctx, const struct opt_vals *v, struct kvxfer_args *a,
		     struct kv_send_opts *o)
{
	int rc;

	if ((rc = kvxfer_fill(ctx, v, a, KVX_BIND, KVX_BIND)) ||
	    (rc = kvxfer_fill(ctx, v, a, KVX_NO_STREAM, KVX_NO_STREAM)) ||
	    (rc = kvxfer_fill(ctx, v, a, KVX_MAX_SGE, KVX_MAX_SGE)))
		return rc;
	o->bind_addr = a->bind;
	o->no_stream = a->no_stream;
	o->max_sge = (uint32_t)a->max_sge;
	if ((rc = mem_opts(ctx, v, a, "send", &o->mem)) ||
	    (rc = kvxfer_fill(ctx, v, a, KVX_PACK, KVX_PACK)) ||
	    (rc = kvxfer_fill(ctx, v, a, KVX_LAND, KVX_LAND)))
		return rc;
	if (kv_pack_parse(a->pack, &o->pack))
		return usage_err(ctx, "invalid --pack '%s': expected auto, always or never",
				 a->pack);
	if (kv_pack_parse(a->land, &o->land))
		return usage_err(ctx, "invalid --land '%s': expected auto, always or never",
				 a->land);
	return 0;
}

int kvxfer_send(struct ctx *ctx, const struct opt_vals *v, struct kvxfer_args *a)
{
	struct kv_send_target targets[REPEAT_MAX];
	struct kv_send_opts o = { .nqps = 1, .inflight = 1 };
	struct run_ctx r = { ctx, true };
	struct from_rails fr;
	struct kvxfer_rails kr = { .listen = "" };
	struct kv_summary sum;
	struct rc_err e;
	sigset_t mask;
	int rc;

	if ((rc = common(ctx, v, a, &o.c)))
		return rc;
	if (!a->requests_given)
		o.c.requests = 1;
	if ((rc = send_targets(ctx, v, a, &o, targets)) || (rc = send_load(ctx, v, a, &o)) ||
	    (rc = send_path(ctx, v, a, &o)) || (rc = send_rails(ctx, v, a, &o, &kr, &fr)) ||
	    (rc = corrupt_hook(ctx, &o)))
		return rc;
	o.targets = targets;
	o.c.on_event = kvxfer_on_event;
	o.c.arg = &r;
	if (ctx->session)
		return usage_err(ctx, "kvxfer send: run it from the command line, not in the shell");
	if ((rc = kvxfer_fill(ctx, v, a, KVX_METRICS, KVX_METRICS)) ||
	    (a->metrics && (rc = metrics_path_check(ctx, a->metrics))))
		return rc;
	if ((rc = opt_mem_ready(ctx, a->mem, o.mem.kind, o.mem.gpu)))
		return rc;
	if ((o.c.stop_fd = signals(ctx, &mask)) < 0)
		return o.c.stop_fd;
	progress_init(&r.prog, ctx);
	r.asked = o.c.requests;
	rc = kv_send_run(&o, &sum, &e);
	progress_end(&r.prog);
	return finish(ctx, a, o.c.rank, rc, &e, &sum, o.c.requests, true, o.c.stop_fd, &mask);
}
