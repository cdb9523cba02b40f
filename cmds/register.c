// SPDX-License-Identifier: MIT
/* rdmactl register: register memory regions and serve them until a signal. */
#include <errno.h>
#include <poll.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <rdmactl/etcd.h>
#include <rdmactl/server.h>

#include "cmds.h"
#include "metrics.h"
#include "session.h"

#define REGISTER_OPTS(X)                                                                    \
	X(RG_LISTEN, "listen", 'l', "ADDR[:PORT]",                                           \
	  "address (and port, default " RC_DEFAULT_PORT ") to serve on")                     \
	X(RG_NAME, "name", 'N', "NAME", "name of the region; each --name starts another region", \
	  .repeat = true)                                                                     \
	X(RG_SIZE, "size", 'S', "SIZE", "region size (4K, 1M, 1G...)", .repeat = true)       \
	X(RG_FILE, "file", 'f', "FILE", "back the region with FILE (written back on exit)",  \
	  COMP_FILE, .repeat = true)                                                          \
	X(RG_MEM, "mem", 'm', "KIND",                                                          \
	  "memory: host, hugepage, file or cuda[:N] (GPU N in PCI bus order; default host)",  \
	  COMP_WORDS, "host|hugepage|file|cuda|cuda:0", .repeat = true)                       \
	X(RG_GPU_REG, "gpu-reg", 0, "PATH",                                                   \
	  "GPU memory registration: auto (dma-buf, then peer memory, then a host bounce buffer), dmabuf, peermem or bounce", \
	  COMP_WORDS, "auto|dmabuf|peermem|bounce")                                          \
	X(RG_ACCESS, "access", 0, "ACCESS", "what peers may do: ro, rw or atomic (default rw)", \
	  COMP_WORDS, "ro|rw|atomic", .repeat = true)                                         \
	X(RG_TOKEN, "token", 'T', "TOKEN",                                                    \
	  "require TOKEN in the connect request (visible in /proc: prefer --token-file or $RDMACTL_TOKEN)") \
	X(RG_TOKEN_FILE, "token-file", 0, "FILE",                                             \
	  "require the token on the first line of FILE (mode 600)", COMP_FILE)                   \
	X(RG_ADMIN_TOKEN_FILE, "admin-token-file", 0, "FILE",                                 \
	  "the admin token, for migration steps (migrate --admin-token-file), from FILE (default: $RDMACTL_ADMIN_TOKEN)", \
	  COMP_FILE)                                                                          \
	X(RG_ALLOW_UNAUTH_MIG, "allow-unauthenticated-migration", 0, NULL,                    \
	  "without an admin token: let any connected client run migration steps")           \
	X(RG_MAX_CONNS, "max-conns", 0, "N", "connections served at once (default 64)")          \
	X(RG_KEEPALIVE_MS, "keepalive-ms", 0, "MS",                                           \
	  "probe each connection every MS, drop one whose host vanished (default 5000, 0: off)") \
	X(RG_FLUSH_EVERY, "flush-every", 0, "TIME",                                           \
	  "also write file-backed regions back to their files every TIME (500ms, 30s, 5m; default: only on exit)") \
	X(RG_PUBLISH, "publish", 0, "URL",                                                    \
	  "publish each region in etcd under rdmactl/NS/region/NAME, with a lease kept alive: etcd://HOST:PORT/NS") \
	X(RG_LEASE_TTL, "lease-ttl", 0, "SECONDS",                                            \
	  "--publish: the lease's TTL; the keys go this long after the server dies (default 10)") \
	METRICS_OPT(X, RG)                                                                    \
	X(RG_METRICS_INTERVAL, "metrics-interval", 0, "SECONDS",                              \
	  "--metrics: rewrite the file this often while serving, 1 to 86400 (default 15)")

enum { REGISTER_OPTS(OPT_INDEX) REGISTER_NOPTS };
static const struct cmd_opt register_opts[] = { REGISTER_OPTS(OPT_ENTRY) OPT_END };
OPTS_BOUND(register_opts, REGISTER_NOPTS);

struct region_spec {
	const char *name, *size, *file, *mem, *access; /* as given */
	enum rc_mem_kind kind;                        /* as checked */
	int gpu;                                      /* cuda:N */
	enum rc_access acc;
	uint64_t bytes;
};

#define MAX_SPECS 16

/* Each --name starts a region; the options after it describe it. Options
 * before the first --name describe the first region. */
static int collect_regions(struct ctx *ctx, const struct opt_vals *v, struct region_spec *r,
			   int *n)
{
	const struct cmd *c = &cmd_register;
	int cur = 0;

	memset(r, 0, sizeof(*r) * MAX_SPECS);
	for (int i = 0; i < v->nmulti; i++) {
		int idx = v->multi_idx[i];
		const char **slot;

		if (idx == RG_NAME && r[cur].name) {
			if (++cur >= MAX_SPECS)
				return usage_err(ctx, "register: at most %d regions", MAX_SPECS);
		}
		slot = idx == RG_NAME   ? &r[cur].name
		       : idx == RG_SIZE ? &r[cur].size
		       : idx == RG_FILE ? &r[cur].file
		       : idx == RG_MEM  ? &r[cur].mem
					: &r[cur].access;
		if (*slot)
			return usage_err(ctx, "register: --%s given twice for one region (start the next one with --name)",
					 c->opts[idx].name);
		*slot = v->multi[i];
	}
	*n = cur + 1;
	return 0;
}

void register_on_event(void *arg, const struct rc_server_event *ev)
{
	struct ctx *ctx = arg;
	static const char *const names[] = { "connected", "disconnected", "rejected", "imm",
					     "flush_failed" };

	if (ev->kind == RC_EV_FLUSH_FAILED) {
		if (!out_is_json(&ctx->out)) {
			fprintf(ctx->out.fp, "region %s: flush failed: %s\n", ev->region, ev->reason);
			fflush(ctx->out.fp);
			return;
		}
		out_str(&ctx->out, "event", NULL, names[ev->kind]);
		out_str(&ctx->out, "region", NULL, ev->region);
		out_str(&ctx->out, "reason", NULL, ev->reason);
		out_event(&ctx->out);
		return;
	}
	if (!out_is_json(&ctx->out)) {
		if (ev->kind == RC_EV_IMM)
			fprintf(ctx->out.fp, "%s: immediate data %u\n", ev->peer, ev->imm);
		else
			fprintf(ctx->out.fp, "%s: %s%s%s\n", ev->peer, names[ev->kind],
				ev->reason ? ": " : "", ev->reason ? ev->reason : "");
		fflush(ctx->out.fp);
		return;
	}
	out_str(&ctx->out, "event", NULL, names[ev->kind]);
	out_str(&ctx->out, "peer", NULL, ev->peer);
	if (ev->reason)
		out_str(&ctx->out, "reason", NULL, ev->reason);
	if (ev->kind == RC_EV_IMM)
		out_u64(&ctx->out, "imm", NULL, ev->imm);
	out_event(&ctx->out);
}

static void print_region(struct ctx *ctx, struct rc_server *s, const struct rc_region *r)
{
	const struct rc_listener *l = rc_server_listener(s);
	const struct rc_gid_info *g = rc_server_gid(s);
	struct out *o = &ctx->out;
	char rkey[16], addr[24];

	snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)r->d.addr);
	snprintf(rkey, sizeof(rkey), "0x%x", r->d.rkey);
	out_str(o, "event", NULL, "region");
	out_str(o, "name", "region %s:", r->d.name);
	out_u64(o, "addr", NULL, r->d.addr);
	out_str(o, "addr_hex", " addr %s", addr);
	out_u64(o, "rkey", NULL, r->d.rkey);
	out_str(o, "rkey_hex", " rkey %s", rkey);
	out_u64(o, "length", " length %llu", (unsigned long long)r->d.length);
	out_str(o, "access", " access %s", rc_access_name(r->d.access));
	out_mem(o, " ", r->mem.kind, r->mem.gpu, r->mem.reg, r->mem.reg_notes);
	if (r->path[0])
		out_str(o, "file", " file %s", r->path);
	out_str(o, "device", " device %s", l->dev_name);
	out_u64(o, "port", NULL, l->port_num);
	out_str(o, "gid", " gid %s", g->str);
	out_i64(o, "gid_index", " (index %lld", g->index);
	out_str(o, "gid_type", ", %s)", rc_gid_type_name(g->type));
	out_obj_begin(o, "listen");
	out_str(o, "address", " listen %s", l->addr);
	out_u64(o, "port", ":%llu", l->port);
	out_obj_end(o);
	if (rc_server_token(s))
		out_str(o, "token", " token %s", rc_server_token(s));
	out_text(o, "\n");
	out_event(o);
}

static int split_listen(struct ctx *ctx, const char *s, char *host, size_t hl, char *port, size_t pl)
{
	struct rc_target t;
	char tmp[RC_HOST_MAX + 16];

	/* Reuse the target grammar: HOST[:PORT] or [IPV6][:PORT]. */
	snprintf(tmp, sizeof(tmp), "%s", s);
	if (rc_parse_target(tmp, &t) || t.region[0])
		return usage_err(ctx, "invalid --listen '%s': expected ADDR[:PORT] or [IPV6][:PORT]", s);
	snprintf(host, hl, "%s", t.host);
	snprintf(port, pl, "%s", t.port);
	return 0;
}

/* What `register` was asked, parsed and checked. */
struct register_args {
	char host[RC_HOST_MAX];
	char port[8];
	int max_conns;
	int keepalive_ms; /* 0: the default, -1: off */
	int flush_every_ms; /* 0: only on exit */
	struct region_spec specs[MAX_SPECS];
	int nspecs;
	enum rc_mem_reg gpu_reg;
	const char *token;
	char token_buf[RC_TOKEN_MAX + 1]; /* what --token-file held */
	char admin[RC_TOKEN_MAX + 1]; /* "": none */
	bool allow_unauth_mig;
	char etcd[RC_HOST_MAX + 8]; /* --publish: the etcd's HOST:PORT, or "" */
	char ns[64];
	int lease_ttl;
	const char *metrics; /* --metrics FILE, or NULL */
	int metrics_every_s;
};

/* A duration: N with ms, s (the default) or m after it, 100 ms to a day. */
static int parse_interval_ms(const char *s, int *ms)
{
	unsigned long long n, unit = 1000;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	if (!strcmp(end, "ms"))
		unit = 1;
	else if (!strcmp(end, "m"))
		unit = 60000;
	else if (*end && strcmp(end, "s"))
		return -EINVAL;
	if (n > 86400000ULL / unit || n * unit < 100)
		return -ERANGE;
	*ms = (int)(n * unit);
	return 0;
}

/* One --name group's memory, access and size, checked; "default" when it
 * has no name. */
static int check_region(struct ctx *ctx, struct region_spec *r)
{
	enum rc_mem_kind kind = r->file ? RC_MEM_FILE : RC_MEM_HOST;
	enum rc_access access = RC_ACCESS_RW;
	uint64_t size = 0;

	if (r->mem && rc_mem_parse(r->mem, &kind, &r->gpu))
		return usage_err(ctx, "invalid --mem '%s': expected host, hugepage, file, cuda or cuda:N", r->mem);
	if (kind == RC_MEM_CUDA && !rc_mem_gpu_built())
		return fail(ctx, -ENOTSUP,
			    "--mem %s: this rdmactl was built without CUDA (the CUDA toolkit was not found, or -DRDMACTL_CUDA=OFF): GPU memory is not available",
			    r->mem);
	if (r->access && rc_access_parse(r->access, &access))
		return usage_err(ctx, "invalid --access '%s': expected ro, rw or atomic", r->access);
	if (r->size && (rc_parse_size(r->size, &size) || size == 0))
		return usage_err(ctx, "invalid --size '%s': expected a size such as 4096, 4K, 1M or 1G", r->size);
	if (kind == RC_MEM_FILE && !r->file)
		return usage_err(ctx, "register: --mem file needs --file FILE");
	if (r->file && kind != RC_MEM_FILE)
		return usage_err(ctx, "register: --file goes with --mem file, not --mem %s", r->mem);
	if (!r->file && !r->size)
		return usage_err(ctx, "register: region %s needs --size or --file",
				 r->name ? r->name : "default");
	if (r->name && !rc_region_name_valid(r->name))
		return usage_err(ctx, "invalid --name '%s': 1 to %d of A-Z a-z 0-9 _ . -", r->name,
				 RC_NAME_MAX - 1);
	if (!r->name)
		r->name = "default";
	r->kind = kind;
	r->acc = access;
	r->bytes = size;
	return 0;
}

/* --listen, --max-conns, --keepalive-ms, --flush-every and the regions. */
static int parse_serving(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
			 struct register_args *a)
{
	int rc;

	if (!opt_on(v, RG_LISTEN))
		return usage_err(ctx, "register: --listen ADDR[:PORT] is required");
	if ((rc = split_listen(ctx, opt_arg(v, RG_LISTEN), a->host, sizeof(a->host), a->port,
			       sizeof(a->port))))
		return rc;
	if ((rc = opt_int_at(ctx, c, v, RG_MAX_CONNS, 1, 256, &a->max_conns)))
		return rc;
	if (opt_on(v, RG_KEEPALIVE_MS)) {
		if ((rc = opt_int_at(ctx, c, v, RG_KEEPALIVE_MS, 0, 3600000, &a->keepalive_ms)))
			return rc;
		if (!a->keepalive_ms)
			a->keepalive_ms = -1; /* off */
	}
	if (opt_on(v, RG_FLUSH_EVERY) &&
	    parse_interval_ms(opt_arg(v, RG_FLUSH_EVERY), &a->flush_every_ms))
		return usage_err(ctx, "invalid --flush-every '%s': expected 100ms to 24h, such as 500ms, 30s or 5m",
				 opt_arg(v, RG_FLUSH_EVERY));
	if ((rc = collect_regions(ctx, v, a->specs, &a->nspecs)))
		return rc;
	if (opt_on(v, RG_GPU_REG) && rc_mem_reg_parse(opt_arg(v, RG_GPU_REG), &a->gpu_reg))
		return usage_err(ctx, "invalid --gpu-reg '%s': expected auto, dmabuf, peermem or bounce",
				 opt_arg(v, RG_GPU_REG));
	if (a->gpu_reg == RC_REG_HOST)
		return usage_err(ctx, "invalid --gpu-reg 'host': expected auto, dmabuf, peermem or bounce");
	for (int i = 0; i < a->nspecs; i++)
		if ((rc = check_region(ctx, &a->specs[i])))
			return rc;
	if (a->flush_every_ms) {
		bool any = false;

		for (int i = 0; i < a->nspecs; i++)
			any |= a->specs[i].kind == RC_MEM_FILE && a->specs[i].acc != RC_ACCESS_RO;
		if (!any)
			return usage_err(ctx, "register: --flush-every writes file-backed regions back, "
					 "and no writable region has --file");
	}
	return 0;
}

/* --publish and --lease-ttl: the server's key in etcd. */
static int parse_publish(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
			 struct register_args *a)
{
	struct rc_err e;
	int rc;

	if (opt_on(v, RG_LEASE_TTL) && !opt_on(v, RG_PUBLISH))
		return usage_err(ctx, "register: --lease-ttl goes with --publish");
	if ((rc = opt_int_at(ctx, c, v, RG_LEASE_TTL, 2, 3600, &a->lease_ttl)))
		return rc;
	if (!opt_on(v, RG_PUBLISH))
		return 0;
	if (rc_etcd_url_parse(opt_arg(v, RG_PUBLISH), a->etcd, sizeof(a->etcd), a->ns, sizeof(a->ns),
			      &e) || !rc_etcd_ns_valid(a->ns))
		return usage_err(ctx, "invalid --publish '%s': expected etcd://HOST:PORT/NS (NS: letters, digits, '-', '_', '.')",
				 opt_arg(v, RG_PUBLISH));
	if (ctx->session)
		return usage_err(ctx, "register: --publish is for a server of its own, not one in the shell");
	if (!strcmp(a->host, "0.0.0.0") || !strcmp(a->host, "::"))
		return usage_err(ctx, "register: --publish needs --listen with the address clients reach, not %s",
				 a->host);
	return 0;
}

/* The token, the admin token and --allow-unauthenticated-migration. */
static int parse_secrets(struct ctx *ctx, const struct opt_vals *v, struct register_args *a)
{
	int rc;

	if ((rc = opt_token(ctx, v, RG_TOKEN, RG_TOKEN_FILE, a->token_buf, &a->token)))
		return rc;
	if ((rc = opt_admin_token_at(ctx, v, RG_ADMIN_TOKEN_FILE, a->admin)))
		return rc;
	if (a->admin[0] && a->token && !strcmp(a->admin, a->token))
		return usage_err(ctx, "register: the admin token must differ from --token (it grants more)");
	a->allow_unauth_mig = opt_on(v, RG_ALLOW_UNAUTH_MIG);
	if (a->allow_unauth_mig && a->admin[0])
		return usage_err(ctx, "register: --allow-unauthenticated-migration is for a server without an admin token");
	return 0;
}

/* --metrics FILE and --metrics-interval. */
static int parse_metrics(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
			 struct register_args *a)
{
	int rc;

	a->metrics = opt_arg(v, RG_METRICS);
	a->metrics_every_s = 15;
	if (opt_on(v, RG_METRICS_INTERVAL) && !a->metrics)
		return usage_err(ctx, "register: --metrics-interval goes with --metrics FILE");
	if ((rc = opt_int_at(ctx, c, v, RG_METRICS_INTERVAL, 1, 86400, &a->metrics_every_s)))
		return rc;
	if (a->metrics && ctx->session)
		return usage_err(ctx, "register: --metrics is for a server of its own, not one in the shell");
	return a->metrics ? metrics_path_check(ctx, a->metrics) : 0;
}

/* Parse: every region is checked before any device is touched. */
static int register_parse(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
			  struct register_args *a)
{
	int rc;

	memset(a, 0, sizeof(*a));
	a->gpu_reg = RC_REG_AUTO;
	if (v->npos)
		return usage_err(ctx, "register: unexpected argument '%s'", v->pos[0]);
	if ((rc = parse_serving(ctx, c, v, a)) || (rc = parse_publish(ctx, c, v, a)) ||
	    (rc = parse_secrets(ctx, v, a)))
		return rc;
	return parse_metrics(ctx, c, v, a);
}

/* Run, first part: the server and its regions. */
static int register_start(struct ctx *ctx, const struct register_args *a,
			  struct rc_server_opts *so, struct rc_server **s)
{
	struct rc_err e;
	int rc;

	so->addr = a->host;
	so->port = a->port;
	so->dev_name = ctx->dev_name;
	so->token = a->token;
	so->admin_token = a->admin[0] ? a->admin : NULL;
	so->allow_unauth_migration = a->allow_unauth_mig;
	if (a->max_conns)
		so->max_conns = a->max_conns;
	so->keepalive_ms = a->keepalive_ms;
	so->flush_every_ms = a->flush_every_ms;
	rc = rc_server_create(so, s, &e);
	if (rc)
		return fail(ctx, rc, "%s", e.msg);
	for (int i = 0; i < a->nspecs; i++) {
		const struct region_spec *r = &a->specs[i];
		struct rc_mem_spec ms = { .kind = r->kind, .len = (size_t)r->bytes, .path = r->file,
					  .gpu = r->gpu,
					  .reg = r->kind == RC_MEM_CUDA ? a->gpu_reg : RC_REG_AUTO };

		rc = rc_server_add_region_spec(*s, r->name, &ms, r->acc, &e);
		if (rc)
			return fail(ctx, rc, "region %s: %s", r->name, e.msg);
	}
	return 0;
}

/* --publish: this server's key, then each region's unless another server
 * holds it (the region's home until a migration moves the key here). One
 * event per region says which. */
static int register_publish(struct ctx *ctx, const struct register_args *a, struct rc_server *s,
			    struct rc_etcd **out)
{
	const struct rc_listener *l = rc_server_listener(s);
	char key[RC_ETCD_KEY_MAX], val[RC_ETCD_VAL_MAX], port[8];
	struct rc_etcd *e = NULL;
	struct rc_err err;
	int rc;

	snprintf(port, sizeof(port), "%u", l->port);
	rc = rc_etcd_open(a->etcd, ctx->timeout_ms, &e, &err);
	if (!rc)
		rc = rc_etcd_lease(e, a->lease_ttl ? a->lease_ttl : 10, &err);
	if (!rc) {
		json_t *j = json_pack("{s:s,s:s,s:i}", "host", a->host, "port", port, "regions",
				      rc_server_nregions(s));
		char *txt = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

		rc_etcd_server_key(a->ns, a->host, port, key, sizeof(key));
		rc = txt ? rc_etcd_put(e, key, txt, rc_etcd_lease_id(e), &err)
			 : rc_err_set(&err, ENOMEM, "out of memory");
		free(txt);
		json_decref(j);
	}
	for (int i = 0; !rc && i < rc_server_nregions(s); i++) {
		const struct rc_region *r = rc_server_region(s, i);
		struct rc_etcd_region d = { .length = r->d.length };
		struct rc_etcd_kv held;
		struct rc_etcd_region other;

		snprintf(d.host, sizeof(d.host), "%s", a->host);
		snprintf(d.port, sizeof(d.port), "%s", port);
		snprintf(d.region, sizeof(d.region), "%s", r->d.name);
		snprintf(d.access, sizeof(d.access), "%s", rc_access_name(r->d.access));
		rc_etcd_region_key(a->ns, r->d.name, key, sizeof(key));
		if (rc_etcd_region_format(&d, val, sizeof(val))) {
			rc = rc_err_set(&err, ENOSPC, "region %s: its etcd record is too long", r->d.name);
			break;
		}
		rc = rc_etcd_create(e, key, val, rc_etcd_lease_id(e), &held, &err);
		if (rc && rc != -EEXIST)
			break;
		out_str(&ctx->out, "event", NULL, "published");
		out_str(&ctx->out, "key", "etcd %s", key);
		out_bool(&ctx->out, "claimed", NULL, rc == 0);
		if (rc == 0) {
			out_null(&ctx->out, "held_by");
			out_text(&ctx->out, ": published here\n");
		} else {
			char who[RC_HOST_MAX + 16] = "another server";

			if (!rc_etcd_region_parse(held.value, &other))
				snprintf(who, sizeof(who), "%s:%s", other.host, other.port);
			out_str(&ctx->out, "held_by", ": held by %s (not claimed here)\n", who);
		}
		out_event(&ctx->out);
		rc = 0;
	}
	if (rc) {
		rc_etcd_close(e);
		return fail(ctx, rc, "--publish: %s", err.msg);
	}
	out_str(&ctx->out, "event", NULL, "lease");
	out_str(&ctx->out, "lease", "etcd lease %s", rc_etcd_lease_id(e));
	out_u64(&ctx->out, "ttl", " (ttl %llu s", (unsigned long long)(a->lease_ttl ? a->lease_ttl : 10));
	out_str(&ctx->out, "etcd", ") at %s\n", a->etcd);
	out_event(&ctx->out);
	*out = e;
	return 0;
}

/* Print: one event per region. */
static void register_print(struct ctx *ctx, struct rc_server *s)
{
	for (int i = 0; i < rc_server_nregions(s); i++)
		print_region(ctx, s, rc_server_region(s, i));
}

/* --metrics: the server's counters and its regions; up says whether it
 * still serves (0 in the file written at exit). */
static void server_metrics(struct metrics *m, const struct rc_server *s, double started, bool up)
{
	const struct rc_listener *l = rc_server_listener(s);
	struct rc_server_stats st;
	char listen[RC_HOST_MAX + 16];

	rc_server_stats(s, &st);
	snprintf(listen, sizeof(listen), "%s:%u", l->addr, l->port);
	metrics_label(m, "listen", listen);
	metrics_label(m, "device", l->dev_name);
	metrics_gauge(m, "rdmactl_server_up", "1 while the server serves, 0 once it stopped", up);
	metrics_gauge(m, "rdmactl_server_start_time_seconds",
		      "when the server started, in seconds since the Unix epoch", started);
	metrics_gauge(m, "rdmactl_server_connections", "connections now", st.conns);
	metrics_counter(m, "rdmactl_server_connections_total", "connections established",
			(double)st.accepted);
	metrics_counter(m, "rdmactl_server_rejected_connections_total",
			"connect requests refused (token, too many connections, accept failed)",
			(double)st.rejected);
	metrics_family(m, "rdmactl_server_errors_total", METRIC_COUNTER,
		       "errors by kind: connection (dropped on a failed completion or keepalive), "
		       "flush (a periodic write-back of a region)");
	metrics_sample(m, "", "kind", "connection", (double)st.dropped);
	metrics_sample(m, "", "kind", "flush", (double)st.flush_failed);
	metrics_counter(m, "rdmactl_server_requests_total",
			"control requests answered (region lists, migration steps)", (double)st.requests);
	metrics_counter(m, "rdmactl_server_immediates_total",
			"immediate data received (RDMA WRITE_WITH_IMM)", (double)st.imms);
	metrics_gauge(m, "rdmactl_server_regions", "regions served", rc_server_nregions(s));
	metrics_family(m, "rdmactl_server_region_size_bytes", METRIC_GAUGE, "each region's size");
	for (int i = 0; i < rc_server_nregions(s); i++)
		metrics_sample(m, "", "region", rc_server_region(s, i)->d.name,
			       (double)rc_server_region(s, i)->d.length);
}

/* The periodic rewrite: a small local file, never a wait on a peer. A
 * failure does not stop the server; it is said once, until a write works. */
static void metrics_tick(struct ctx *ctx, const struct register_args *a, const struct rc_server *s,
			 double started, bool *failing)
{
	struct metrics m;
	char msg[4400];
	int rc;

	metrics_init(&m);
	metrics_label(&m, "command", "register");
	server_metrics(&m, s, started, true);
	rc = metrics_write(&m, a->metrics, msg, sizeof(msg));
	metrics_free(&m);
	if (rc && !*failing)
		out_log(&ctx->out, "--metrics: %s (the server goes on)", msg);
	*failing = rc != 0;
}

/* Serve until a signal, as rc_server_run; with --metrics, the file is
 * rewritten from this loop every --metrics-interval. */
static int register_serve(struct ctx *ctx, const struct register_args *a, struct rc_server *s,
			  int sfd, double started, struct rc_err *e)
{
	bool failing = false;
	double next = 0;

	if (!a->metrics)
		return rc_server_run(s, sfd, e);
	for (;;) {
		struct pollfd p = { .fd = sfd, .events = POLLIN };
		int rc;

		if (rc_now() >= next) {
			metrics_tick(ctx, a, s, started, &failing);
			next = rc_now() + a->metrics_every_s;
		}
		if (poll(&p, 1, 0) > 0)
			return 0;
		if ((rc = rc_server_step(s, 200, e)))
			return rc;
	}
}

static int do_register(struct ctx *ctx, int argc, char **argv)
{
	const struct cmd *c = &cmd_register;
	struct rc_server_opts so = { .gid_index = ctx->gid_index, .on_event = register_on_event, .arg = ctx };
	struct register_args *a;
	struct rc_server *s = NULL;
	struct rc_etcd *etcd = NULL;
	struct opt_vals v;
	struct rc_err e;
	sigset_t mask;
	int sfd = -1, rc, rc2;
	double started = rc_wall(rc_now());
	struct metrics m;

	metrics_init(&m);
	metrics_label(&m, "command", "register");

	rc = opts_parse(ctx, c, argc, argv, &v);
	if (rc)
		return rc < 0 ? rc : 0;
	a = calloc(1, sizeof(*a));
	if (!a)
		return fail(ctx, -ENOMEM, "out of memory");
	rc = register_parse(ctx, c, &v, a);
	if (rc) {
		free(a);
		return rc;
	}

	/* Signals arrive through a descriptor, so shutdown is an ordinary step.
	 * In the shell the server goes on in the background instead, its events
	 * queued in the session until the next prompt. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	if (ctx->session)
		session_server_opts(ctx->session, &so);
	else
		sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = ctx->session ? -1 : signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (!ctx->session && sfd < 0) {
		rc = fail(ctx, -errno, "signalfd: %s", strerror(errno));
		goto out;
	}
	rc = register_start(ctx, a, &so, &s);
	if (rc)
		goto out;
	register_print(ctx, s);
	if (a->etcd[0] && (rc = register_publish(ctx, a, s, &etcd)))
		goto out;
	if (ctx->session) {
		rc = session_serve(ctx->session, s, &e);
		if (rc) {
			rc = fail(ctx, rc, "%s", e.msg);
			goto out;
		}
		if (!out_is_json(&ctx->out))
			out_log(&ctx->out, "serving in the background on %s:%u: 'regions' lists, 'unregister' stops",
				session_served(ctx->session, session_nserved(ctx->session) - 1)->addr,
				session_served(ctx->session, session_nserved(ctx->session) - 1)->port);
		free(a);
		return 0;
	}
	if (!out_is_json(&ctx->out))
		out_log(&ctx->out, "serving %d region%s on %s:%u (%s); stop with Ctrl-C or SIGTERM",
			rc_server_nregions(s), rc_server_nregions(s) == 1 ? "" : "s",
			rc_server_listener(s)->addr, rc_server_listener(s)->port,
			rc_server_listener(s)->dev_name);
	rc = register_serve(ctx, a, s, sfd, started, &e);
	if (rc)
		rc = fail(ctx, rc, "%s", e.msg);
	else {
		struct signalfd_siginfo si;

		/* Consume the signal, or unblocking it below would deliver it. */
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			;
	}
out:
	/* The lease is revoked first: the keys naming this server go with it. */
	rc_etcd_close(etcd);
	if (a->metrics && s)
		server_metrics(&m, s, started, false);
	/* Reported even after a failed serve: a region that did not reach its
	 * file is data lost, whatever stopped the server. */
	rc2 = rc_server_destroy(s, &e);
	if (rc2) {
		rc2 = fail(ctx, rc2, "%s", e.msg);
		if (!rc)
			rc = rc2;
	}
	if (a->metrics)
		rc = metrics_commit(ctx, &m, a->metrics, rc);
	metrics_free(&m);
	if (s && !rc) {
		out_str(&ctx->out, "event", "stopped\n", "stopped");
		out_event(&ctx->out);
	}
	if (sfd >= 0)
		close(sfd);
	if (!ctx->session)
		sigprocmask(SIG_UNBLOCK, &mask, NULL);
	free(a);
	return rc;
}

const struct cmd cmd_register = {
	.name = "register",
	.aliases = (const char *const[]){ "serve", NULL },
	.run = do_register,
	.opts = register_opts,
	.summary = "register memory regions and serve them to RDMA peers until stopped",
	.long_running = true,
};
