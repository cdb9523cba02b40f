// SPDX-License-Identifier: MIT
/* rdmactl register: register memory regions and serve them until a signal. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <rdmactl/server.h>

#include "cmds.h"
#include "session.h"

static const struct cmd_opt register_opts[] = {
	{ "listen", 'l', "ADDR[:PORT]", "address (and port, default " RC_DEFAULT_PORT ") to serve on" },
	{ "name", 'N', "NAME", "name of the region; each --name starts another region",
	  .repeat = true },
	{ "size", 'S', "SIZE", "region size (4K, 1M, 1G...)", .repeat = true },
	{ "file", 'f', "FILE", "back the region with FILE (written back on exit)", COMP_FILE,
	  .repeat = true },
	{ "mem", 'm', "KIND", "memory: host, hugepage, file or cuda[:N] (GPU N in PCI bus order; default host)",
	  COMP_WORDS, "host|hugepage|file|cuda|cuda:0", .repeat = true },
	{ "gpu-reg", 0, "PATH", "GPU memory registration: auto (dma-buf, then peer memory, then a host bounce buffer), dmabuf, peermem or bounce",
	  COMP_WORDS, "auto|dmabuf|peermem|bounce" },
	{ "access", 'a', "ACCESS", "what peers may do: ro, rw or atomic (default rw)", COMP_WORDS,
	  "ro|rw|atomic", .repeat = true },
	{ "token", 'T', "TOKEN", "require TOKEN in the connect request (default: $RDMACTL_TOKEN)" },
	{ "max-conns", 0, "N", "connections served at once (default 64)" },
	{ "keepalive-ms", 0, "MS", "probe each connection every MS, drop one whose host vanished (default 5000, 0: off)" },
	OPT_END,
};
OPTS_FIT(register_opts);

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
		const char *opt = c->opts[v->multi_idx[i]].name, **slot;

		if (!strcmp(opt, "name") && r[cur].name) {
			if (++cur >= MAX_SPECS)
				return usage_err(ctx, "register: at most %d regions", MAX_SPECS);
		}
		slot = !strcmp(opt, "name")	? &r[cur].name
		       : !strcmp(opt, "size")	? &r[cur].size
		       : !strcmp(opt, "file")	? &r[cur].file
		       : !strcmp(opt, "mem")	? &r[cur].mem
					      : &r[cur].access;
		if (*slot)
			return usage_err(ctx, "register: --%s given twice for one region (start the next one with --name)",
					 opt);
		*slot = v->multi[i];
	}
	*n = cur + 1;
	return 0;
}

void register_on_event(void *arg, const struct rc_server_event *ev)
{
	struct ctx *ctx = arg;
	static const char *const names[] = { "connected", "disconnected", "rejected", "imm" };

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
	out_str(o, "mem", " mem %s", rc_mem_kind_name(r->mem.kind));
	if (r->mem.kind == RC_MEM_CUDA)
		out_i64(o, "gpu", ":%lld", r->mem.gpu);
	else
		out_null(o, "gpu");
	out_str(o, "registration", r->mem.kind == RC_MEM_CUDA ? " via %s" : NULL,
		rc_mem_reg_name(r->mem.reg));
	if (r->mem.reg == RC_REG_BOUNCE)
		out_text(o, " (a host bounce buffer: peers reach a host copy, not GPU memory; no GPUDirect)");
	if (r->mem.kind == RC_MEM_CUDA && r->mem.reg_notes[0])
		out_str(o, "registration_notes", " [tried first: %s]", r->mem.reg_notes);
	else
		out_null(o, "registration_notes");
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

static int do_register(struct ctx *ctx, int argc, char **argv)
{
	const struct cmd *c = &cmd_register;
	struct region_spec specs[MAX_SPECS];
	struct rc_server_opts so = { .gid_index = ctx->gid_index, .on_event = register_on_event, .arg = ctx };
	struct rc_server *s = NULL;
	char host[RC_HOST_MAX], port[8];
	struct opt_vals v;
	struct rc_err e;
	sigset_t mask;
	enum rc_mem_reg gpu_reg = RC_REG_AUTO;
	int nspecs = 0, sfd = -1, rc, rc2;

	rc = opts_parse(ctx, c, argc, argv, &v);
	if (rc)
		return rc < 0 ? rc : 0;
	if (v.npos)
		return usage_err(ctx, "register: unexpected argument '%s'", v.pos[0]);
	if (!opt_has(c, &v, "listen"))
		return usage_err(ctx, "register: --listen ADDR[:PORT] is required");
	if ((rc = split_listen(ctx, opt_get(c, &v, "listen"), host, sizeof(host), port, sizeof(port))))
		return rc;
	if ((rc = opt_int(ctx, c, &v, "max-conns", 1, 256, &so.max_conns)))
		return rc;
	if (opt_has(c, &v, "keepalive-ms")) {
		if ((rc = opt_int(ctx, c, &v, "keepalive-ms", 0, 3600000, &so.keepalive_ms)))
			return rc;
		if (!so.keepalive_ms)
			so.keepalive_ms = -1; /* off */
	}
	if ((rc = collect_regions(ctx, &v, specs, &nspecs)))
		return rc;
	if (opt_has(c, &v, "gpu-reg") && rc_mem_reg_parse(opt_get(c, &v, "gpu-reg"), &gpu_reg))
		return usage_err(ctx, "invalid --gpu-reg '%s': expected auto, dmabuf, peermem or bounce",
				 opt_get(c, &v, "gpu-reg"));
	if (gpu_reg == RC_REG_HOST)
		return usage_err(ctx, "invalid --gpu-reg 'host': expected auto, dmabuf, peermem or bounce");
	/* Validate every region before touching any device. */
	for (int i = 0; i < nspecs; i++) {
		struct region_spec *r = &specs[i];
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
			return usage_err(ctx, "invalid --name '%s': 1 to %d of A-Z a-z 0-9 _ . -",
					 r->name, RC_NAME_MAX - 1);
		if (!r->name)
			r->name = "default";
		r->kind = kind;
		r->acc = access;
		r->bytes = size;
	}
	so.addr = host;
	so.port = port;
	so.dev_name = ctx->dev_name;
	so.token = opt_token(c, &v);
	if (so.token && !rc_token_valid(so.token))
		return usage_err(ctx, "invalid --token: 1 to %d printable characters without spaces",
				 RC_TOKEN_MAX);

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
	rc = rc_server_create(&so, &s, &e);
	if (rc) {
		rc = fail(ctx, rc, "%s", e.msg);
		goto out;
	}
	for (int i = 0; i < nspecs; i++) {
		struct rc_mem_spec ms = { .kind = specs[i].kind, .len = (size_t)specs[i].bytes,
					  .path = specs[i].file, .gpu = specs[i].gpu,
					  .reg = specs[i].kind == RC_MEM_CUDA ? gpu_reg : RC_REG_AUTO };

		rc = rc_server_add_region_spec(s, specs[i].name, &ms, specs[i].acc, &e);
		if (rc) {
			rc = fail(ctx, rc, "region %s: %s", specs[i].name, e.msg);
			goto out;
		}
	}
	for (int i = 0; i < rc_server_nregions(s); i++)
		print_region(ctx, s, rc_server_region(s, i));
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
		return 0;
	}
	if (!out_is_json(&ctx->out))
		out_log(&ctx->out, "serving %d region%s on %s:%u (%s); stop with Ctrl-C or SIGTERM",
			rc_server_nregions(s), rc_server_nregions(s) == 1 ? "" : "s",
			rc_server_listener(s)->addr, rc_server_listener(s)->port,
			rc_server_listener(s)->dev_name);
	rc = rc_server_run(s, sfd, &e);
	if (rc)
		rc = fail(ctx, rc, "%s", e.msg);
	else {
		struct signalfd_siginfo si;

		/* Consume the signal, or unblocking it below would deliver it. */
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			;
	}
out:
	rc2 = rc_server_destroy(s, &e);
	if (rc2 && !rc)
		rc = fail(ctx, rc2, "%s", e.msg);
	if (s && !rc) {
		out_str(&ctx->out, "event", "stopped\n", "stopped");
		out_event(&ctx->out);
	}
	if (sfd >= 0)
		close(sfd);
	if (!ctx->session)
		sigprocmask(SIG_UNBLOCK, &mask, NULL);
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
