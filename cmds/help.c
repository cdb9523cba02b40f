// SPDX-License-Identifier: MIT
/* rdmactl help and version: help prints through help_print
 * (framework/help_print.c), as every --help does. */
#include <stdio.h>

#include "cmd.h"
#include "cmds.h"

/* Parse: the command asked about, if any; then print (there is nothing to run). */
static int do_help(struct ctx *ctx, int argc, char **argv)
{
	const struct cmd *c = NULL;
	struct opt_vals v;
	int rc = opts_parse(ctx, &cmd_help, argc, argv, &v);

	if (rc)
		return rc < 0 ? rc : 0;
	if (v.npos >= 1 && !(c = cmd_find(v.pos[0])))
		return cmd_unknown(ctx, v.pos[0]);
	/* help kvxfer plan: a sub-command, as 'kvxfer plan --help' shows it. */
	for (int i = 1; i < v.npos; i++) {
		const struct cmd *sub = cmd_sub_find(c, v.pos[i]);

		if (!sub)
			return usage_err(ctx, "help: '%s' has no sub-command '%s'", c->name,
					 v.pos[i]);
		c = sub;
	}
	help_print(ctx, c);
	return 0;
}

const struct cmd cmd_help = {
	.name = "help",
	.run = do_help,
	.args = "[COMMAND]",
	.args_comp = COMP_COMMAND,
	.summary = "show the commands, or one command's options",
};

static int do_version(struct ctx *ctx, int argc, char **argv)
{
	struct opt_vals v;
	int rc = opts_parse(ctx, &cmd_version, argc, argv, &v);

	if (rc)
		return rc < 0 ? rc : 0;
	if (v.npos)
		return usage_err(ctx, "version: takes no arguments");
	out_str(&ctx->out, "version", "rdmactl %s\n", RDMACTL_VERSION);
	return 0;
}

const struct cmd cmd_version = {
	.name = "version",
	.run = do_version,
	.summary = "print the version",
};
