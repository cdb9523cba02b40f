// SPDX-License-Identifier: MIT
/* The dispatcher that every entry point (command line, batch file,
 * interactive shell) goes through, over the table of cmds/table.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"

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

const struct cmd *cmd_sub_find(const struct cmd *c, const char *word)
{
	for (int i = 0; c->subs && c->subs[i]; i++) {
		const char *name = strrchr(c->subs[i]->name, ' ');

		if (!strcmp(name ? name + 1 : c->subs[i]->name, word))
			return c->subs[i];
	}
	return NULL;
}

/* c has sub-commands: the one the first word names, its words parsed once
 * against c's table; or, with options first ("kvxfer --tokens 64 plan"),
 * the first positional word, each option given then checked to be its. */
static int run_nested(struct ctx *ctx, const struct cmd *c, int argc, char **argv)
{
	const struct cmd *sub = argc > 1 ? cmd_sub_find(c, argv[1]) : NULL;
	struct opt_vals v;
	char words[256];
	int rc, first = 0;

	cmd_subs_words(c, ~0u, false, " or ", words, sizeof(words));
	rc = sub ? opts_parse(ctx, sub, argc - 1, argv + 1, &v) : opts_parse(ctx, c, argc, argv, &v);
	if (rc)
		return rc < 0 ? rc : 0;
	if (!sub) {
		if (v.npos < 1)
			return usage_err(ctx, "%s: give a subcommand: %s (see 'rdmactl %s --help')",
					 c->name, words, c->name);
		sub = cmd_sub_find(c, v.pos[0]);
		if (!sub && v.npos > 1)
			return usage_err(ctx, "%s %s: unexpected argument '%s'", c->name, v.pos[0],
					 v.pos[1]);
		if (!sub)
			return usage_err(ctx, "%s: unknown subcommand '%s': expected %s", c->name,
					 v.pos[0], words);
		first = 1;
		for (int i = 0; c->opts && c->opts[i].name; i++)
			if (opt_on(&v, i) && !opt_for(sub, &c->opts[i]))
				return opt_not_for(ctx, sub, &c->opts[i]);
	}
	if (v.npos > first && !sub->args)
		return usage_err(ctx, "%s: unexpected argument '%s'", sub->name, v.pos[first]);
	ctx->out.cmd = sub->name;
	return sub->run_opts(ctx, sub, &v);
}

void cmds_list(FILE *fp, bool shell)
{
	fprintf(fp, "Commands:\n");
	for (int i = 0; rdmactl_cmds[i]; i++) {
		const struct cmd *c = rdmactl_cmds[i];

		/* in the shell, every command but a second shell */
		if (!c->hidden && (shell || !c->shell_only) && !(shell && !strcmp(c->name, "shell")))
			help_line(fp, 2, c->name, 19, c->summary);
	}
}

const char *comp_kind_name(enum comp_kind k)
{
	static const char *const names[] = {
		[COMP_NONE] = "none",     [COMP_FILE] = "file",       [COMP_DIR] = "dir",
		[COMP_WORDS] = "words",   [COMP_DEVICE] = "device",   [COMP_TARGET] = "target",
		[COMP_REGION] = "region", [COMP_COMMAND] = "command",
	};

	return (unsigned)k < sizeof(names) / sizeof(names[0]) && names[k] ? names[k] : "none";
}

int cmd_unknown(struct ctx *ctx, const char *name)
{
	const char *names[128], *near;
	size_t n = 0;

	for (int i = 0; rdmactl_cmds[i] && n < 128; i++)
		if (!rdmactl_cmds[i]->hidden && (ctx->session || !rdmactl_cmds[i]->shell_only))
			names[n++] = rdmactl_cmds[i]->name;
	near = word_suggest(name, names, n);
	if (near)
		return usage_err(ctx, "unknown command '%s' (did you mean '%s'?)", name, near);
	return usage_err(ctx, "unknown command '%s' (see 'rdmactl help')", name);
}

int cmd_dispatch(struct ctx *ctx, int argc, char **argv)
{
	const char *dev_name = ctx->dev_name;
	int gid_index = ctx->gid_index, timeout_ms = ctx->timeout_ms, verbose = ctx->verbose;
	enum out_mode mode = ctx->out.mode;
	const struct cmd *c;
	int rc;

	if (argc < 1)
		return usage_err(ctx, "no command given (see 'rdmactl help')");
	c = cmd_find(argv[0]);
	if (!c)
		return cmd_unknown(ctx, argv[0]);
	if (c->shell_only && !ctx->session)
		return usage_err(ctx, "'%s' works only inside 'rdmactl shell'", c->name);
	ctx->out.cmd = c->name;
	rc = c->subs ? run_nested(ctx, c, argc, argv) : c->run(ctx, argc, argv);
	/* Global options given after the command held for it alone: the next
	 * line of a batch or the shell starts from the ones before it. */
	if (mode == OUT_TEXT && out_is_json(&ctx->out))
		out_finish(&ctx->out);
	out_set_mode(&ctx->out, mode);
	ctx->dev_name = dev_name;
	ctx->gid_index = gid_index;
	ctx->timeout_ms = timeout_ms;
	ctx->verbose = verbose;
	return rc;
}
