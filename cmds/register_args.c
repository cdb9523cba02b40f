// SPDX-License-Identifier: MIT
/* rdmactl register: its options, parsed and checked before any device. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/etcd.h>

#include "register.h"
#include "session.h"

/* Each --name starts a region; the options after it describe it. Options
 * before the first --name describe the first region. */
static int collect_regions(struct ctx *ctx, const struct opt_vals *v, struct region_spec *r, int *n)
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
			return usage_err(
				ctx,
				"register: --%s given twice for one region (start the next one with --name)",
				c->opts[idx].name);
		*slot = v->multi[i];
	}
	*n = cur + 1;
	return 0;
}

/* --listen ADDR1[:PORT],ADDR2[:PORT] and -d DEV1,DEV2: one rail each, in
 * the same order. */
static int split_rails(struct ctx *ctx, const char *listen, const char *devs,
		       struct register_args *a)
{
	int rc = listen_rails(ctx, "register", listen, devs, &a->lr);

	if (rc)
		return rc;
	if (a->lr.n > 1 && ctx->session)
		return usage_err(ctx, "register: several rails are served by a server of its own, "
				      "not one in the shell");
	snprintf(a->host, sizeof(a->host), "%s", a->lr.host[0]);
	snprintf(a->port, sizeof(a->port), "%s", a->lr.port[0]);
	return 0;
}

/* --rails PLAN: each rail on its device's address, at the port of --listen
 * 0.0.0.0:PORT (or [::]:PORT; none: the default port). */
static int auto_listen(struct ctx *ctx, const char *plan, struct register_args *a)
{
	int rc = rails_auto_listen(ctx, "register", plan, a->listen, RC_DEFAULT_PORT, &a->ra,
				   a->auto_listen, sizeof(a->auto_listen));

	if (rc)
		return rc;
	a->listen = a->auto_listen;
	return split_rails(ctx, a->listen, a->ra.devs, a);
}

/* One --name group's memory, access and size, checked; "default" when it
 * has no name. */
static int check_region(struct ctx *ctx, struct region_spec *r)
{
	enum rc_mem_kind kind = r->file ? RC_MEM_FILE : RC_MEM_HOST;
	const char *acc = r->access ? r->access : cmd_register.opts[RG_ACCESS].def;
	enum rc_access access;
	uint64_t size = 0;

	if (r->mem && rc_mem_parse(r->mem, &kind, &r->gpu))
		return usage_err(ctx,
				 "invalid --mem '%s': expected host, hugepage, file, cuda or cuda:N",
				 r->mem);
	if (kind == RC_MEM_CUDA && !rc_mem_gpu_built())
		return fail(ctx, -ENOTSUP,
			    "--mem %s: this rdmactl was built without CUDA (the CUDA toolkit was not found, or -DRDMACTL_CUDA=OFF): GPU memory is not available",
			    r->mem);
	if (rc_access_parse(acc, &access))
		return usage_err(ctx, "invalid --access '%s': expected ro, rw or atomic", acc);
	if (r->size && opt_size_parse(ctx, "size", r->size, &size))
		return -EINVAL;
	if (r->size && size == 0)
		return usage_err(ctx,
				 "invalid --size '%s': expected a size such as 4096, 4K, 1M or 1G",
				 r->size);
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

	opts_fill(ctx, c, v, RG_LISTEN, RG_LISTEN + 1, a);
	opts_fill(ctx, c, v, RG_RAILS, RG_RAILS + 1, a);
	if (a->rails_plan)
		rc = auto_listen(ctx, a->rails_plan, a);
	else if (!a->listen)
		return usage_err(ctx, "register: --listen ADDR[:PORT] is required");
	else
		rc = split_rails(ctx, a->listen, ctx->dev_name, a);
	if (rc)
		return rc;
	if ((rc = opts_fill(ctx, c, v, RG_MAX_CONNS, RG_FLUSH_EVERY + 1, a)))
		return rc;
	if (!a->keepalive_ms)
		a->keepalive_ms = -1; /* off */
	if ((rc = collect_regions(ctx, v, a->specs, &a->nspecs)))
		return rc;
	opts_fill(ctx, c, v, RG_GPU_REG, RG_GPU_REG + 1, a); /* a string */
	if (rc_mem_reg_parse(a->gpu_reg_name, &a->gpu_reg))
		return usage_err(ctx,
				 "invalid --gpu-reg '%s': expected auto, dmabuf, peermem or bounce",
				 a->gpu_reg_name);
	if (a->gpu_reg == RC_REG_HOST)
		return usage_err(ctx,
				 "invalid --gpu-reg 'host': expected auto, dmabuf, peermem or bounce");
	for (int i = 0; i < a->nspecs; i++)
		if ((rc = check_region(ctx, &a->specs[i])))
			return rc;
	if (a->flush_every_ms) {
		bool any = false;

		for (int i = 0; i < a->nspecs; i++)
			any |= a->specs[i].kind == RC_MEM_FILE && a->specs[i].acc != RC_ACCESS_RO;
		if (!any)
			return usage_err(ctx,
					 "register: --flush-every writes file-backed regions back, "
					 "and no writable region has --file");
	}
	/* Local causes, after the usage checks and before the RDMA CM: the
	 * GPU, the folder of a region's file. */
	for (int i = 0; i < a->nspecs; i++) {
		const struct region_spec *r = &a->specs[i];

		if ((r->kind == RC_MEM_CUDA && (rc = opt_mem_ready(ctx, r->mem, r->kind, r->gpu))) ||
		    (r->file && (rc = output_file(ctx, "register: --file", r->file))))
			return rc;
	}
	return 0;
}

/* --publish and --lease-ttl: the server's key in etcd. */
static int parse_publish(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
			 struct register_args *a)
{
	struct rc_err e;
	int rc;

	opts_fill(ctx, c, v, RG_PUBLISH, RG_PUBLISH + 1, a);
	if (a->lease_ttl_given && !a->publish)
		return usage_err(ctx, "register: --lease-ttl goes with --publish");
	if ((rc = opts_fill(ctx, c, v, RG_LEASE_TTL, RG_LEASE_TTL + 1, a)))
		return rc;
	if (!a->publish)
		return 0;
	if (rc_etcd_url_parse(a->publish, a->etcd, sizeof(a->etcd), a->ns, sizeof(a->ns), &e) ||
	    !rc_etcd_ns_valid(a->ns))
		return usage_err(
			ctx,
			"invalid --publish '%s': expected etcd://HOST:PORT/NS (NS: letters, digits, '-', '_', '.')",
			a->publish);
	if (ctx->session)
		return usage_err(
			ctx, "register: --publish is for a server of its own, not one in the shell");
	if (!strcmp(a->host, "0.0.0.0") || !strcmp(a->host, "::"))
		return usage_err(
			ctx,
			"register: --publish needs --listen with the address clients reach, not %s",
			a->host);
	return 0;
}

/* The token, the admin token and --allow-unauthenticated-migration. */
static int parse_secrets(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
			 struct register_args *a)
{
	int rc;

	opts_fill(ctx, c, v, RG_TOKEN, RG_ADMIN_TOKEN_FILE + 1, a); /* strings */
	if ((rc = token_take(ctx, a->token_arg, a->token_file, a->token_buf, &a->token)))
		return rc;
	if ((rc = admin_token_take(ctx, a->admin_token_file, a->admin)))
		return rc;
	if (a->admin[0] && a->token && !strcmp(a->admin, a->token))
		return usage_err(
			ctx, "register: the admin token must differ from --token (it grants more)");
	opts_fill(ctx, c, v, RG_ALLOW_UNAUTH_MIG, RG_ALLOW_UNAUTH_MIG + 1, a);
	if (a->allow_unauth_mig && a->admin[0])
		return usage_err(
			ctx,
			"register: --allow-unauthenticated-migration is for a server without an admin token");
	return 0;
}

/* --metrics FILE and --metrics-interval. */
static int parse_metrics(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
			 struct register_args *a)
{
	int rc;

	opts_fill(ctx, c, v, RG_METRICS, RG_METRICS + 1, a); /* a string */
	if (a->metrics_every_given && !a->metrics)
		return usage_err(ctx, "register: --metrics-interval goes with --metrics FILE");
	if ((rc = opts_fill(ctx, c, v, RG_METRICS_INTERVAL, RG_METRICS_INTERVAL + 1, a)))
		return rc;
	if (a->metrics && ctx->session)
		return usage_err(
			ctx, "register: --metrics is for a server of its own, not one in the shell");
	return a->metrics ? metrics_path_check(ctx, a->metrics) : 0;
}

/* Parse: every region is checked before any device is touched. */
int register_parse(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		   struct register_args *a)
{
	int rc;

	memset(a, 0, sizeof(*a));
	opts_given(c, v, a); /* what was given, for the checks before the values */
	if (v->npos)
		return usage_err(ctx, "register: unexpected argument '%s'", v->pos[0]);
	if ((rc = parse_serving(ctx, c, v, a)) || (rc = parse_publish(ctx, c, v, a)) ||
	    (rc = parse_secrets(ctx, c, v, a)))
		return rc;
	return parse_metrics(ctx, c, v, a);
}
