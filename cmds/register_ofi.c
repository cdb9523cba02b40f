// SPDX-License-Identifier: MIT
/* rdmactl register --fabric ofi:PROVIDER: regions of host memory served
 * over libfabric (rdmactl/fabric.h), each region's line its descriptor
 * (the endpoint's address, the listener's nonce, the token check), the
 * control plane's events as they come, until a signal. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "register.h"

static const int ofi_refused[] = { RG_RAILS,       RG_FILE,
				   RG_MEM,         RG_PUBLISH,
				   RG_METRICS,     RG_ADMIN_TOKEN_FILE,
				   RG_FLUSH_EVERY, RG_ALLOW_UNAUTH_MIG };

/* What a server over libfabric does not do yet: named, not ignored. */
static int ofi_check(struct ctx *ctx, const struct opt_vals *v, const struct register_args *a)
{
	for (size_t i = 0; i < sizeof(ofi_refused) / sizeof(ofi_refused[0]); i++)
		if (opt_on(v, ofi_refused[i]))
			return usage_err(ctx,
					 "register --fabric ofi: --%s is served over verbs only "
					 "(--fabric verbs), not yet over libfabric",
					 cmd_register.opts[ofi_refused[i]].name);
	if (a->lr.n > 1)
		return usage_err(ctx, "register --fabric ofi: one --listen address");
	if (a->nspecs > RC_FSRV_REGIONS)
		return usage_err(ctx, "register --fabric ofi: %d regions at most", RC_FSRV_REGIONS);
	return 0;
}

/* What the events need: the context, and the server to print its regions
 * again when the nonce rotated (their descriptor changed). */
struct ofi_serving {
	struct ctx *ctx;
	const struct register_args *a;
	struct rc_fsrv *s;
};

static void print_region(struct ctx *ctx, const struct register_args *a, struct rc_fsrv *s, int i);

static void on_event(void *arg, const struct rc_fsrv_event *ev)
{
	const struct ofi_serving *sv = arg;
	struct ctx *ctx = sv->ctx;
	const char *kind = !strcmp(ev->kind, "admitted") ? "connected"
			   : !strcmp(ev->kind, "left")   ? "disconnected"
							 : ev->kind;

	bool imm = !strcmp(ev->kind, "imm");

	if (!out_is_json(&ctx->out)) {
		if (imm)
			fprintf(ctx->out.fp, "a peer: immediate data %u\n", ev->imm);
		else
			fprintf(ctx->out.fp, "%s: %s%s%s\n", ev->peer[0] ? ev->peer : "a peer",
				kind, ev->reason ? ": " : "", ev->reason ? ev->reason : "");
		fflush(ctx->out.fp);
	} else {
		out_str(&ctx->out, "event", NULL, kind);
		out_str(&ctx->out, "peer", NULL, ev->peer);
		if (ev->reason)
			out_str(&ctx->out, "reason", NULL, ev->reason);
		if (imm)
			out_u64(&ctx->out, "imm", NULL, ev->imm);
		out_event(&ctx->out);
	}
	/* the nonce rotated: each region's descriptor again, the new one */
	for (int i = 0; !strcmp(ev->kind, "rotated") && i < rc_fsrv_nregions(sv->s); i++)
		print_region(ctx, sv->a, sv->s, i);
}

/* A region's line: its descriptor. No key and no address: those a client
 * learns in the WELCOME, after its proof (an RDM target admits any
 * initiator that holds the key). */
static void print_region(struct ctx *ctx, const struct register_args *a, struct rc_fsrv *s, int i)
{
	const struct rc_fregion *r = rc_fsrv_region(s, i);
	const struct rc_fabric_info *fi = rc_fsrv_info(s);
	struct out *o = &ctx->out;
	out_str(o, "event", NULL, "region");
	out_str(o, "name", "region %s:", r->name);
	out_u64(o, "length", " length %llu", (unsigned long long)r->length);
	out_str(o, "access", " access %s", rc_access_name(a->specs[i].acc));
	out_str(o, "fabric", " fabric %s", "ofi");
	out_str(o, "provider", " provider %s", fi->provider);
	out_str(o, "domain", " domain %s", fi->domain);
	out_str(o, "device", NULL, fi->domain);
	out_obj_begin(o, "listen");
	out_str(o, "address", " listen %s", a->host);
	out_u64(o, "port", ":%llu", (unsigned long long)strtoull(a->port, NULL, 10));
	out_obj_end(o);
	out_str(o, "ofi_address", " address %s", fi->address);
	out_str(o, "nonce", " nonce %s", fi->nonce);
	if (fi->token_check[0])
		out_str(o, "token_check", " token_check %s", fi->token_check);
	out_text(o, "\n");
	out_event(o);
}

static int serve(struct ctx *ctx, const struct register_args *a, struct rc_fsrv *s, int sfd)
{
	struct ofi_serving sv = { .ctx = ctx, .a = a, .s = s };
	struct signalfd_siginfo si;
	struct rc_err e;
	int rc;

	for (;;) {
		struct pollfd p = { .fd = sfd, .events = POLLIN };

		if (poll(&p, 1, 0) > 0 && read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			return 0;
		if ((rc = rc_fsrv_step(s, 50, on_event, &sv, &e)))
			return fail(ctx, rc, "%s", ERR_TEXT(e));
	}
}

int register_ofi(struct ctx *ctx, const struct opt_vals *v, const struct register_args *a,
		 const struct rc_fabric *f, int sfd)
{
	static const int bits[] = { [RC_ACCESS_RO] = 1, [RC_ACCESS_RW] = 3, [RC_ACCESS_ATOMIC] = 7 };
	struct rc_fsrv_opts so = { .prov = f->prov,
				   .addr = a->host,
				   .port = a->port,
				   .token = a->token,
				   .max_clients = a->max_conns };
	struct rc_fsrv *s = NULL;
	struct rc_err e;
	int rc;

	if ((rc = ofi_check(ctx, v, a)))
		return rc;
	if ((rc = rc_fsrv_create(&so, &s, &e)))
		return fail(ctx, rc, "%s", ERR_TEXT(e));
	for (int i = 0; i < a->nspecs && !rc; i++)
		rc = rc_fsrv_add(s, a->specs[i].name, a->specs[i].bytes, bits[a->specs[i].acc], &e);
	if (!rc)
		rc = rc_fsrv_start(s, &e);
	if (rc) {
		rc_fsrv_close(s);
		return fail(ctx, rc, "%s", ERR_TEXT(e));
	}
	for (int i = 0; i < rc_fsrv_nregions(s); i++)
		print_region(ctx, a, s, i);
	if (!out_is_json(&ctx->out))
		out_log(&ctx->out,
			"serving %d region%s on %s:%s over libfabric's %s; stop with Ctrl-C or SIGTERM",
			a->nspecs, a->nspecs == 1 ? "" : "s", a->host, a->port,
			rc_fsrv_info(s)->provider);
	rc = serve(ctx, a, s, sfd);
	rc_fsrv_close(s);
	if (!rc) {
		out_str(&ctx->out, "event", "stopped\n", "stopped");
		out_event(&ctx->out);
	}
	return rc;
}
