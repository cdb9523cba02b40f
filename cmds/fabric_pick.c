// SPDX-License-Identifier: MIT
/* --fabric: the transport picked, never a software one by itself, and the
 * keys that name it in a report (fabric_cmds.h). Apart from the client
 * over libfabric (fabric_cmds.c), which stands on the client's own code:
 * client_cmds.c calls these, and nothing here calls it. */
#include <errno.h>

#include <rdmactl/dev.h>

#include "cmds.h"
#include "fabric_cmds.h"

int fabric_pick(struct ctx *ctx, const char *cmd, const char *given, struct rc_fabric *f)
{
	const char *s = given ? given : cmds_config_fabric();
	const char *from = given ? "--fabric" : "$RDMACTL_FABRIC";
	int n;

	if (rc_fabric_parse(s, f))
		return usage_err(ctx, "%s: invalid %s '%s': expected %s", cmd, from, s,
				 RC_FABRIC_CHOICES);
	if (!s || f->kind == RC_FABRIC_OFI)
		return 0;
	n = rc_dev_count();
	if (f->kind == RC_FABRIC_VERBS && !n)
		return fail(ctx, -ENODEV,
			    "%s: %s verbs: this host has no RDMA device; "
			    "the choices are %s",
			    cmd, from, RC_FABRIC_CHOICES);
	if (f->kind == RC_FABRIC_AUTO && !n)
		return fail(ctx, -ENODEV,
			    "%s: %s auto picked nothing: this host has no RDMA device, and rdmactl "
			    "does not fall back to a software provider by itself; name one: %s",
			    cmd, from, RC_FABRIC_CHOICES);
	if (f->kind == RC_FABRIC_AUTO)
		out_log(&ctx->out, "%s: %s auto picked verbs (%d RDMA device%s)", cmd, from, n,
			n == 1 ? "" : "s");
	f->kind = RC_FABRIC_VERBS;
	return 0;
}

void fabric_report(struct ctx *ctx, const char *transport, const struct rc_fabric_info *fi)
{
	out_str(&ctx->out, "transport", " over %s", transport);
	out_str(&ctx->out, "provider", " (%s", fi->provider);
	out_str(&ctx->out, "domain", ", domain %s): ", fi->domain);
}

void fabric_verbs_keys(struct ctx *ctx, const char *devs)
{
	out_str(&ctx->out, "transport", NULL, "verbs");
	out_str(&ctx->out, "provider", NULL, "verbs");
	out_str(&ctx->out, "domain", NULL, devs);
}
