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
	&cmd_kvxfer,
	&cmd_alltoall,
	&cmd_shell,
	&cmd_regions,
	&cmd_unregister,
	&cmd_help,
	&cmd_version,
	&cmd_complete,
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
	{ "batch", 'b', "FILE", "run the commands in FILE, one a line ('-': stdin)", COMP_FILE },
	{ "force", 0, NULL, "with --batch: go on after a failing command" },
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

void cmds_list(FILE *fp, bool shell)
{
	fprintf(fp, "Commands:\n");
	for (int i = 0; rdmactl_cmds[i]; i++) {
		const struct cmd *c = rdmactl_cmds[i];

		if (!c->hidden && (shell || !c->shell_only))
			fprintf(fp, "  %-16s %s\n", c->name, c->summary);
	}
}

const char *comp_kind_name(enum comp_kind k)
{
	static const char *const names[] = {
		[COMP_NONE] = "none",	  [COMP_FILE] = "file",	    [COMP_DIR] = "dir",
		[COMP_WORDS] = "words",	  [COMP_DEVICE] = "device", [COMP_TARGET] = "target",
		[COMP_REGION] = "region", [COMP_COMMAND] = "command",
	};

	return (unsigned)k < sizeof(names) / sizeof(names[0]) && names[k] ? names[k] : "none";
}

int cmd_dispatch(struct ctx *ctx, int argc, char **argv)
{
	const struct cmd *c;

	if (argc < 1)
		return usage_err(ctx, "no command given (see 'rdmactl help')");
	c = cmd_find(argv[0]);
	if (!c)
		return usage_err(ctx, "unknown command '%s' (see 'rdmactl help')", argv[0]);
	if (c->shell_only && !ctx->session)
		return usage_err(ctx, "'%s' works only inside 'rdmactl shell'", c->name);
	return c->run(ctx, argc, argv);
}
