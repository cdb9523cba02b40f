// SPDX-License-Identifier: MIT
/*
 * Every command's option table fits its parser: no more options than
 * opts_parse takes, no name or short letter twice (or taken by --help), and
 * each option parses into its own slot with its argument.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cmd.h"
#include "cmds.h"

static int quiet_ctx(struct ctx *ctx, FILE *sink)
{
	*ctx = (struct ctx){ .gid_index = -1, .timeout_ms = 1000 };
	out_init(&ctx->out, OUT_TEXT, sink, sink);
	return 0;
}

static void check_table(const struct cmd *c, FILE *sink)
{
	const struct cmd_opt *o = c->opts;
	int n = opts_count(o);

	if (n > OPT_MAX)
		fprintf(stderr, "%s: %d options, the parser takes %d\n", c->name, n, OPT_MAX);
	CHECK(n <= OPT_MAX);
	for (int i = 0; i < n; i++) {
		CHECK(strcmp(o[i].name, "help") && o[i].short_name != 'h');
		CHECK(!o[i].short_name || isalnum((unsigned char)o[i].short_name));
		for (int j = i + 1; j < n; j++) {
			if (!strcmp(o[i].name, o[j].name) ||
			    (o[i].short_name && o[i].short_name == o[j].short_name))
				fprintf(stderr, "%s: --%s and --%s clash\n", c->name, o[i].name,
					o[j].name);
			CHECK(strcmp(o[i].name, o[j].name));
			CHECK(!o[i].short_name || o[i].short_name != o[j].short_name);
		}
	}
	/* Each option on its own lands in its own slot, long and short. */
	for (int i = 0; i < n; i++) {
		char lname[80], sname[3] = { '-', o[i].short_name, 0 }, val[] = "42";
		char *argv[] = { (char *)c->name, lname, o[i].arg ? val : NULL, NULL };
		int argc = o[i].arg ? 3 : 2;
		struct opt_vals v;
		struct ctx ctx;

		snprintf(lname, sizeof(lname), "--%s", o[i].name);
		for (int form = 0; form < (o[i].short_name ? 2 : 1); form++) {
			quiet_ctx(&ctx, sink);
			if (form)
				argv[1] = sname;
			/* A sub-command refuses the rows of its parent's table that
			 * are not its own, as a usage error. */
			if (!opt_for(c, &o[i])) {
				CHECK(opts_parse(&ctx, c, argc, argv, &v) == -EINVAL);
				CHECK(ctx.usage_error);
				out_free(&ctx.out);
				continue;
			}
			CHECK(opts_parse(&ctx, c, argc, argv, &v) == 0);
			CHECK(v.count[i] == 1);
			CHECK(!strcmp(v.vals[i], o[i].arg ? "42" : ""));
			for (int j = 0; j < n; j++)
				CHECK(j == i || v.count[j] == 0);
			out_free(&ctx.out);
		}
	}
}

/* Nested sub-commands parse with their parent's table, which they name;
 * each row of it names only sub-commands there are, and each of these
 * takes some row. */
static void check_subs(const struct cmd *c, FILE *sink)
{
	int nsubs = 0;

	for (; c->subs && c->subs[nsubs]; nsubs++) {
		const struct cmd *sub = c->subs[nsubs];
		int mine = 0;

		CHECK(sub->parent == c && sub->opts == c->opts && sub->run_opts);
		for (int i = 0; c->opts && c->opts[i].name; i++)
			mine += opt_for(sub, &c->opts[i]);
		CHECK(mine > 0);
		check_table(sub, sink);
	}
	for (int i = 0; c->opts && c->opts[i].name; i++)
		CHECK(nsubs ? c->opts[i].in >> nsubs == 0 : c->opts[i].in == 0);
}

int main(void)
{
	FILE *sink = fopen("/dev/null", "w");
	struct cmd_opt big[OPT_MAX + 2];
	char names[OPT_MAX + 1][16];
	struct cmd global = { .name = "rdmactl", .opts = rdmactl_global_opts };
	struct cmd huge = { .name = "huge", .opts = big };
	struct opt_vals v;
	struct ctx ctx;
	int tables = 0;

	CHECK(sink != NULL);
	for (int i = 0; rdmactl_cmds[i]; i++, tables++) {
		check_table(rdmactl_cmds[i], sink);
		check_subs(rdmactl_cmds[i], sink);
	}
	check_table(&global, sink);
	CHECK(tables >= 10);
	/* A table past the limit is refused, not written past the stack. */
	memset(big, 0, sizeof(big));
	for (int i = 0; i <= OPT_MAX; i++) {
		snprintf(names[i], sizeof(names[i]), "opt%d", i);
		big[i] = (struct cmd_opt){ .name = names[i], .help = "" };
	}
	quiet_ctx(&ctx, sink);
	CHECK(opts_parse(&ctx, &huge, 1, (char *[]){ "huge", NULL }, &v) == -EINVAL);
	out_free(&ctx.out);
	fclose(sink);
	CHECK_DONE();
}
