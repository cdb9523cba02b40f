// SPDX-License-Identifier: MIT
/* The one command table, and the dispatcher that every entry point
 * (command line, batch file, interactive shell) goes through. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "cmds.h"

const struct cmd *const rdmactl_cmds[] = {
	&cmd_register,
	&cmd_write,
	&cmd_read,
	&cmd_atomic,
	&cmd_probe_topology,
	&cmd_help,
	&cmd_version,
	NULL,
};

const struct cmd_opt rdmactl_global_opts[] = {
	{ "json", 'j', NULL, "JSON output, one document per command" },
	{ "pretty", 'p', NULL, "pretty-printed JSON output" },
	{ "device", 'd', "NAME", "RDMA device (default: the one owning the address)", COMP_DEVICE },
	{ "gid-index", 'g', "N", "GID index override (default: RoCE v2, IPv4 first)" },
	{ "timeout", 't', "MS", "connect and completion timeout in ms (default 10000)" },
	{ "verbose", 'v', NULL, "more logs on stderr" },
	{ "version", 'V', NULL, "print the version" },
	OPT_END,
};

const struct cmd *cmd_find(const char *name)
{
	for (int i = 0; rdmactl_cmds[i]; i++) {
		const struct cmd *c = rdmactl_cmds[i];

		if (!strcmp(c->name, name))
			return c;
		for (int j = 0; c->aliases && c->aliases[j]; j++)
			if (!strcmp(c->aliases[j], name))
				return c;
	}
	return NULL;
}

void cmds_list(FILE *fp)
{
	fprintf(fp, "Commands:\n");
	for (int i = 0; rdmactl_cmds[i]; i++)
		if (!rdmactl_cmds[i]->hidden)
			fprintf(fp, "  %-16s %s\n", rdmactl_cmds[i]->name, rdmactl_cmds[i]->summary);
}

int cmd_dispatch(struct ctx *ctx, int argc, char **argv)
{
	const struct cmd *c;

	if (argc < 1)
		return usage_err(ctx, "no command given (see 'rdmactl help')");
	c = cmd_find(argv[0]);
	if (!c)
		return usage_err(ctx, "unknown command '%s' (see 'rdmactl help')", argv[0]);
	return c->run(ctx, argc, argv);
}

static int do_help(struct ctx *ctx, int argc, char **argv)
{
	struct opt_vals v;
	int rc = opts_parse(ctx, &cmd_help, argc, argv, &v);

	if (rc)
		return rc < 0 ? rc : 0;
	if (v.npos > 1)
		return usage_err(ctx, "help: too many arguments");
	if (v.npos == 1) {
		const struct cmd *c = cmd_find(v.pos[0]);

		if (!c)
			return usage_err(ctx, "unknown command '%s' (see 'rdmactl help')", v.pos[0]);
		cmd_usage(c, stdout);
		return 0;
	}
	printf("Usage: rdmactl [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]\n\n");
	cmds_list(stdout);
	printf("\nGlobal options:\n");
	opts_print(rdmactl_global_opts, stdout);
	printf("\nRun 'rdmactl help COMMAND' for a command's options; see rdmactl(8).\n");
	return 0;
}

const struct cmd cmd_help = {
	.name = "help",
	.run = do_help,
	.args = "[COMMAND]",
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
