// SPDX-License-Identifier: MIT
/* The client side over libfabric: the target, the server's descriptor, the
 * handshake, the transfer (fabric_cmds.h; --fabric itself: fabric_pick.c). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "client_cmds.h"
#include "cmds.h"
#include "fabric_cmds.h"

/* The descriptor's region line for region (the last one of it, or of any
 * region where region is "": after a rotated nonce the server printed them
 * again): its address, nonce and token check, copied out. */
static int read_descriptor(struct ctx *ctx, const char *path, const char *region, char *addr,
			   char *nonce, char *check)
{
	char line[4096];
	FILE *f = fopen(path, "r");
	int found = 0;

	if (!f)
		return fail(ctx, -errno, "cannot read '%s': %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) { /* the last: a rotated nonce's */
		json_t *j = json_loads(line, 0, NULL);
		const char *ev = json_string_value(json_object_get(j, "event"));
		const char *name = json_string_value(json_object_get(j, "name"));
		const char *a = json_string_value(json_object_get(j, "ofi_address"));
		const char *n = json_string_value(json_object_get(j, "nonce"));
		const char *t = json_string_value(json_object_get(j, "token_check"));

		if (ev && !strcmp(ev, "region") && name && (!region[0] || !strcmp(name, region)) &&
		    a && n && strlen(a) < RC_FABRIC_HEX && strlen(n) < 33 &&
		    (!t || strlen(t) < 33)) {
			strcpy(addr, a);
			strcpy(nonce, n);
			strcpy(check, t ? t : "");
			found = 1;
		}
		json_decref(j);
	}
	fclose(f);
	if (!found)
		return fail(ctx, -ENOENT,
			    "'%s' holds no region line of a server over libfabric%s%s (register "
			    "--fabric ofi:PROVIDER -j prints it)",
			    path, region[0] ? " for region " : "", region);
	return 0;
}

int fabric_client_open(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		       const struct client_args *a, struct rc_fcli **out)
{
	char addr[RC_FABRIC_HEX], nonce[33], check[33];
	struct rc_fcli_opts o = { .prov = a->fab.prov,
				  .bind = a->bind,
				  .token = a->token,
				  .timeout_ms = ctx->timeout_ms };
	struct rc_target t;
	struct rc_err e;
	int rc;

	if ((rc = client_target(ctx, c, v, &t)))
		return rc;
	o.host = t.host;
	o.port = t.port;
	o.region = t.region;
	if (a->descriptor) {
		if ((rc = read_descriptor(ctx, a->descriptor, t.region, addr, nonce, check)))
			return rc;
		o.srv_address = addr;
		o.srv_nonce = nonce;
		o.srv_token_check = check;
	}
	if ((rc = rc_fcli_open(&o, out, &e)))
		return fail(ctx, rc, "%s", ERR_TEXT(e));
	if (ctx->verbose)
		out_log(&ctx->out, "%s: over libfabric's %s, domain %s", c->name,
			rc_fcli_info(*out)->provider, rc_fcli_info(*out)->domain);
	return 0;
}

int fabric_transfer(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		    const struct client_args *a, bool write, uint64_t size, bool have_size,
		    rc_fcli_fill io, void *arg, const char *out, const uint32_t *imm)
{
	struct rc_stream_result res = { 0 };
	const struct rc_fregion *r;
	struct rc_fcli *fc = NULL;
	struct rc_err e;
	char peer[RC_HOST_MAX + 16];
	int rc;

	if ((rc = fabric_client_open(ctx, c, v, a, &fc)))
		return rc;
	r = rc_fcli_region(fc);
	if (!have_size)
		size = a->off < r->length ? r->length - a->off : 0;
	rc = rc_fcli_transfer(fc, write, a->off, size, io, arg, &res.bytes, &res.seconds, &e);
	if (!rc && imm)
		rc = rc_fcli_write_imm(fc, a->off, *imm, &e);
	if (rc) {
		rc = fail(ctx, rc, "%s", ERR_TEXT(e));
	} else if (write || out) {
		const char *slash = strrchr(v->pos[0], '/');

		snprintf(peer, sizeof(peer), "%.*s", slash ? (int)(slash - v->pos[0]) : 0,
			 v->pos[0]);
		out_str(&ctx->out, "operation", NULL, write ? "write" : "read");
		out_str(&ctx->out, "peer", write ? "wrote to %s" : "read from %s", peer);
		out_str(&ctx->out, "region", "/%s", r->name);
		out_u64(&ctx->out, "offset", " at offset %llu", (unsigned long long)a->off);
		if (out)
			out_str(&ctx->out, "out", " into %s", out);
		out_str(&ctx->out, "device", NULL, rc_fcli_info(fc)->domain);
		fabric_report(ctx, "ofi", rc_fcli_info(fc));
		if (imm)
			out_u64(&ctx->out, "imm", NULL, *imm);
		report_transfer(ctx, &res);
	}
	rc_fcli_close(fc);
	return rc;
}
