// SPDX-License-Identifier: MIT
/*
 * The table entries of the interactive shell: "shell" itself, whose body
 * lives in cli/ and is reached through ctx->shell, and the commands that
 * only make sense inside it, on the regions its `register` serves.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "session.h"

static const struct cmd_opt shell_opts[] = { SHELL_OPTS(OPT_ENTRY) OPT_END };
OPTS_BOUND(shell_opts, SHELL_NOPTS);

static int do_shell(struct ctx *ctx, int argc, char **argv)
{
	if (ctx->session)
		return usage_err(ctx, "shell: already in the shell");
	if (!ctx->shell)
		return usage_err(ctx, "shell: not available here (in a batch?)");
	return ctx->shell(ctx, argc, argv);
}

const struct cmd cmd_shell = {
	.name = "shell",
	.run = do_shell,
	.opts = shell_opts,
	.summary = "interactive mode: history, completion, background regions",
};

static void put_listen(struct out *o, const struct session_served *sv)
{
	out_obj_begin(o, "listen");
	out_str(o, "address", NULL, sv->addr);
	out_u64(o, "port", NULL, sv->port);
	out_obj_end(o);
}

static int do_regions(struct ctx *ctx, int argc, char **argv)
{
	struct out *o = &ctx->out;
	struct opt_vals v;
	int rc = opts_parse(ctx, &cmd_regions, argc, argv, &v), n = 0;

	if (rc)
		return rc < 0 ? rc : 0;
	if (v.npos)
		return usage_err(ctx, "regions: takes no arguments");
	out_arr_begin(o, "regions");
	for (int i = 0; i < session_nserved(ctx->session); i++) {
		const struct session_served *sv = session_served(ctx->session, i);
		char where[RC_HOST_MAX + 8], hex[24];

		snprintf(where, sizeof(where), "%s:%u", sv->addr, sv->port);
		for (int j = 0; j < sv->nregions; j++) {
			const struct rc_region_desc *d = &sv->regions[j];

			if (!n++)
				out_text(o, "%-16s %-24s %12s %-6s %-8s %-10s %s\n", "NAME",
					 "LISTEN", "LENGTH", "ACCESS", "MEM", "RKEY", "ADDR");
			out_obj_begin(o, NULL);
			out_str(o, "name", "%-16s ", d->name);
			out_text(o, "%-24s ", where);
			put_listen(o, sv);
			out_str(o, "device", NULL, sv->device);
			out_u64(o, "length", "%12llu ", (unsigned long long)d->length);
			out_str(o, "access", "%-6s ", rc_access_name(d->access));
			out_str(o, "mem", "%-8s ", rc_mem_kind_name(sv->mem[j]));
			out_u64(o, "rkey", NULL, d->rkey);
			snprintf(hex, sizeof(hex), "0x%x", d->rkey);
			out_str(o, "rkey_hex", "%-10s ", hex);
			out_u64(o, "addr", NULL, d->addr);
			snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)d->addr);
			out_str(o, "addr_hex", "%s\n", hex);
			out_bool(o, "token", NULL, sv->token);
			out_obj_end(o);
		}
	}
	out_arr_end(o);
	if (!n)
		out_text(o, "no regions served here (serve some with 'register')\n");
	return 0;
}

const struct cmd cmd_regions = {
	.name = "regions",
	.run = do_regions,
	.summary = "list the regions this shell serves in the background",
	.shell_only = true,
};

/* What unregister was asked (its typed rows). */
struct unregister_args {
	bool all;
};
#define UNREGISTER_OPTS(X) \
	X(UN_ALL, "all", 0, NULL, "stop every server this shell started", \
	  OPT_FLAG(struct unregister_args, all))
enum { UNREGISTER_OPTS(OPT_INDEX) UNREGISTER_NOPTS };
static const struct cmd_opt unregister_opts[] = { UNREGISTER_OPTS(OPT_ENTRY) OPT_END };
OPTS_BOUND(unregister_opts, UNREGISTER_NOPTS);

static bool serves(const struct session_served *sv, const char *name)
{
	for (int j = 0; j < sv->nregions; j++)
		if (!strcmp(sv->regions[j].name, name))
			return true;
	return false;
}

static bool wanted(const struct session_served *sv, const struct opt_vals *v, bool all)
{
	for (int k = 0; k < v->npos; k++)
		if (serves(sv, v->pos[k]))
			return true;
	return all;
}

/* Parse: --all or region names, each served here. */
static int unregister_parse(struct ctx *ctx, const struct opt_vals *v, bool *all)
{
	struct rc_session *ss = ctx->session;
	struct unregister_args a;

	opts_fill_all(ctx, &cmd_unregister, v, &a); /* a flag: cannot fail */
	*all = a.all;
	if (*all == (v->npos > 0))
		return usage_err(ctx, "unregister: give region names or --all");
	for (int k = 0; k < v->npos; k++) {
		int i = 0;

		while (i < session_nserved(ss) && !serves(session_served(ss, i), v->pos[k]))
			i++;
		if (i == session_nserved(ss))
			return fail(ctx, -ENOENT,
				    "no region named '%s' is served here (see 'regions')",
				    v->pos[k]);
	}
	return 0;
}

/* Print one server about to stop. */
static void unregister_print(struct out *o, const struct session_served *sv)
{
	out_obj_begin(o, NULL);
	put_listen(o, sv);
	out_arr_begin(o, "regions");
	out_text(o, "stopped serving");
	for (int j = 0; j < sv->nregions; j++)
		out_str(o, NULL, j ? ", %s" : " %s", sv->regions[j].name);
	out_arr_end(o);
	out_text(o, " on %s:%u\n", sv->addr, sv->port);
	out_obj_end(o);
}

/* Run: stop each wanted server, printed first (its snapshot goes with it). */
static int do_unregister(struct ctx *ctx, int argc, char **argv)
{
	struct rc_session *ss = ctx->session;
	struct out *o = &ctx->out;
	struct opt_vals v;
	bool all;
	int rc = opts_parse(ctx, &cmd_unregister, argc, argv, &v), first = 0;

	if (rc)
		return rc < 0 ? rc : 0;
	if ((rc = unregister_parse(ctx, &v, &all)))
		return rc;
	out_arr_begin(o, "stopped");
	for (int i = session_nserved(ss) - 1; i >= 0; i--) {
		const struct session_served *sv = session_served(ss, i);
		struct rc_err e;
		int r;

		if (!wanted(sv, &v, all))
			continue;
		unregister_print(o, sv);
		r = session_stop(ss, i, &e);
		if (r && !first)
			first = fail(ctx, r, "%s", ERR_TEXT(e));
	}
	out_arr_end(o);
	return first;
}

const struct cmd cmd_unregister = {
	.name = "unregister",
	.run = do_unregister,
	.opts = unregister_opts,
	.args = "[NAME...]",
	.args_comp = COMP_REGION,
	.summary = "stop serving regions (with every region of the same 'register')",
	.shell_only = true,
};
