// SPDX-License-Identifier: MIT
/* What help and every --help print: the command list or one command's
 * usage as text, or with -j the whole command table (what tooling, the
 * completion scripts' tests and the man page drift test read instead of a
 * hand-kept list). The help command itself is cmds/help.c. */
#include <stdio.h>
#include <string.h>

#include <rdmactl/mem.h>

#include "cmd.h"

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *opt_json(const struct cmd *c, const struct cmd_opt *o)
{
	json_t *j = json_object(), *values = json_null();
	char sh[2] = { o->short_name, '\0' };
	char help[512];

	if (o->comp == COMP_WORDS && o->values) {
		const char *p = o->values;

		values = json_array();
		while (*p) {
			size_t n = strcspn(p, "|");

			json_array_append_new(values, json_stringn(p, n));
			p += n + (p[n] == '|');
		}
	}
	json_object_set_new(j, "name", json_string(o->name));
	json_object_set_new(j, "short", o->short_name ? json_string(sh) : json_null());
	json_object_set_new(j, "arg", str_or_null(o->arg));
	json_object_set_new(j, "help", json_string(cmd_opt_help(c, o, help, sizeof(help))));
	json_object_set_new(j, "complete", json_string(comp_kind_name(o->comp)));
	json_object_set_new(j, "values", values);
	json_object_set_new(j, "repeat", json_boolean(o->repeat));
	json_object_set_new(j, "hidden", json_boolean(o->hidden));
	json_object_set_new(j, "default", str_or_null(o->def));
	return j;
}

/* The rows of opts that c takes (c NULL: all). */
static json_t *opts_json(const struct cmd *c, const struct cmd_opt *opts)
{
	json_t *a = json_array();

	for (int i = 0; opts && opts[i].name; i++)
		if (opt_for(c, &opts[i]))
			json_array_append_new(a, opt_json(c, &opts[i]));
	return a;
}

static json_t *cmd_json(const struct cmd *c)
{
	json_t *j = json_object(), *aliases = json_array();

	for (int i = 0; c->aliases && c->aliases[i]; i++)
		json_array_append_new(aliases, json_string(c->aliases[i]));
	json_object_set_new(j, "name", json_string(c->name));
	json_object_set_new(j, "aliases", aliases);
	json_object_set_new(j, "summary", json_string(c->summary));
	json_object_set_new(j, "args", str_or_null(c->args));
	json_object_set_new(j, "args_complete", json_string(comp_kind_name(c->args_comp)));
	json_object_set_new(j, "hidden", json_boolean(c->hidden));
	json_object_set_new(j, "shell_only", json_boolean(c->shell_only));
	json_object_set_new(j, "long_running", json_boolean(c->long_running));
	json_object_set_new(j, "options", opts_json(c, c->opts));
	return j;
}

static void help_json(struct ctx *ctx, const struct cmd *only)
{
	json_t *cmds;

	if (only) {
		out_json(&ctx->out, "command", cmd_json(only));
		return;
	}
	cmds = json_array();
	for (int i = 0; rdmactl_cmds[i]; i++)
		json_array_append_new(cmds, cmd_json(rdmactl_cmds[i]));
	out_json(&ctx->out, "commands", cmds);
	out_json(&ctx->out, "global_options", opts_json(NULL, rdmactl_global_opts));
	/* What this build can do beyond its options: GPU memory needs CUDA
	 * at build time (--mem cuda). */
	out_obj_begin(&ctx->out, "features");
	out_bool(&ctx->out, "gpu_memory", NULL, rc_mem_gpu_built());
	out_obj_end(&ctx->out);
}

void help_print(struct ctx *ctx, const struct cmd *c)
{
	FILE *fp = ctx->out.fp;

	if (out_is_json(&ctx->out)) {
		help_json(ctx, c);
		return;
	}
	if (c) {
		cmd_usage(c, fp);
		return;
	}
	if (ctx->session) {
		fprintf(fp,
			"Type a command with its options and arguments, as after 'rdmactl'.\n\n");
		cmds_list(fp, true);
		fprintf(fp, "  %-16s %s\n", "exit, quit", "leave the shell (or Ctrl-D)");
		fprintf(fp, "\nRun 'help COMMAND' for a command's options; see rdmactl-shell(8).\n");
		return;
	}
	fprintf(fp, "Usage: rdmactl [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]\n"
		    "       rdmactl [GLOBAL OPTIONS] -b FILE [--force]\n\n");
	cmds_list(fp, false);
	fprintf(fp, "\nGlobal options:\n");
	opts_print(rdmactl_global_opts, fp);
	fprintf(fp, "\n-j, -p, -d, -g, -t and -v may also follow the command.\n"
		    "Run 'rdmactl help COMMAND' for a command's options; see rdmactl(8).\n");
}
