// SPDX-License-Identifier: MIT
/* The option parser (opts_parse), its "did you mean" for an unknown option,
 * the two ways a command reports an error (usage_err, fail), and the test
 * hooks' pause (test_hook_wait). */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"

int usage_err(struct ctx *ctx, const char *fmt, ...)
{
	char msg[1024], *p;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* In the shell a command is typed without the program's name: "see
	 * 'help'", not "see 'rdmactl help'". */
	while (ctx->session && (p = strstr(msg, "'rdmactl ")))
		memmove(p + 1, p + 9, strlen(p + 9) + 1);
	out_err(&ctx->out, EINVAL, "%s", msg);
	ctx->usage_error = true;
	return -EINVAL;
}

int fail(struct ctx *ctx, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	out_verr(&ctx->out, rc < 0 ? -rc : rc, fmt, ap);
	va_end(ap);
	return rc < 0 ? rc : -rc;
}

int global_take(struct ctx *ctx, const struct cmd_opt *g, const char *arg, const char **bad)
{
	uint64_t v;

	switch (g->short_name) {
	case 'j':
		if (ctx->out.mode != OUT_JSON_PRETTY)
			out_set_mode(&ctx->out, OUT_JSON);
		return 0;
	case 'p':
		out_set_mode(&ctx->out, OUT_JSON_PRETTY);
		return 0;
	case 'd':
		ctx->dev_name = arg;
		return 0;
	case 'g':
		if (rc_parse_u64(arg, &v) || v > 255) {
			*bad = "invalid --gid-index: expected 0..255";
			return -EINVAL;
		}
		ctx->gid_index = (int)v;
		return 0;
	case 't':
		if (rc_parse_u64(arg, &v) || v == 0 || v > 3600000) {
			*bad = "invalid --timeout: expected milliseconds, 1..3600000";
			return -EINVAL;
		}
		ctx->timeout_ms = (int)v;
		return 0;
	case 'v':
		ctx->verbose++;
		return 0;
	}
	*bad = "a global option that goes before the command";
	return -EINVAL;
}

void globals_default(struct ctx *ctx)
{
	const char *bad;

	for (const struct cmd_opt *g = rdmactl_global_opts; g->name; g++)
		if (g->anywhere && g->def)
			global_take(ctx, g, g->def, &bad);
}

int opt_index(const struct cmd *c, const char *name)
{
	for (int i = 0; c->opts && c->opts[i].name; i++)
		if (!strcmp(c->opts[i].name, name))
			return i;
	return -1;
}

/* The edit distance (insertions, deletions, substitutions) between a and b,
 * counted up to 8: enough to tell a typo from another word. */
static size_t word_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[33];

	if (la > 32 || lb > 32)
		return 8;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb] < 8 ? row[lb] : 8;
}

const char *word_suggest(const char *word, const char *const *words, size_t n)
{
	const char *best = NULL;
	size_t best_d = 8, len = strlen(word);

	for (size_t i = 0; i < n; i++) {
		size_t d = words[i] ? word_distance(word, words[i]) : 8;

		/* A word that starts the candidate (--siz, --size) counts as one
		 * edit: an abbreviation is a typo here, never a match. */
		if (words[i] && len >= 2 && !strncmp(word, words[i], len) && d > 1)
			d = 1;
		if (d < best_d) {
			best_d = d;
			best = words[i];
		}
	}
	/* A short word may be one edit off, a longer one two or three. */
	return best && best_d <= (len <= 3 ? 1 : len <= 6 ? 2 : 3) ? best : NULL;
}

/* The option of c whose name is closest to name, or NULL. */
static const char *opt_suggest(const struct cmd *c, const char *name)
{
	const char *names[OPT_MAX + 1];
	size_t n = 0;

	for (const struct cmd_opt *o = c->opts; o && o->name && n < OPT_MAX; o++)
		if (opt_for(c, o))
			names[n++] = o->name;
	names[n++] = "help";
	return word_suggest(name, names, n);
}

/* Right after getopt_long returned the long option o: the word of argv that
 * named it (before its argument when that came as the next word). */
static const char *long_token(char **argv, const struct option *o)
{
	const char *last = argv[optind - 1], *eq = strchr(last, '=');

	if (o->has_arg != required_argument || optind < 2)
		return last;
	if (!strncmp(last, "--", 2) && eq && !strncmp(o->name, last + 2, (size_t)(eq - last - 2)))
		return last;
	return argv[optind - 2];
}

const char *opt_abbrev(char **argv, const struct option *o)
{
	const char *tok = long_token(argv, o);
	size_t n = strcspn(tok + 2, "=");

	if (!strncmp(tok, "--", 2) && n == strlen(o->name) && !strncmp(tok + 2, o->name, n))
		return NULL;
	return tok;
}

/* An option c does not have: a global one that goes before the command
 * (-V, -b, --force), or a typo, with the closest name. */
static int unknown_opt(struct ctx *ctx, const struct cmd *c, const char *tok)
{
	char name[64];
	const char *near;
	bool is_long = !strncmp(tok, "--", 2);

	snprintf(name, sizeof(name), "%.*s", (int)strcspn(tok + (is_long ? 2 : 1), "="),
		 tok + (is_long ? 2 : 1));
	for (const struct cmd_opt *g = rdmactl_global_opts; g->name; g++)
		if ((is_long && !strcmp(g->name, name)) ||
		    (!is_long && g->short_name && name[0] == g->short_name && !name[1]))
			return usage_err(ctx,
					 "%s: '%s' is a global option that goes before the command "
					 "(only -j, -p, -d, -g, -t and -v may follow it; see rdmactl(8), "
					 "GLOBAL OPTIONS)",
					 c->name, tok);
	near = is_long ? opt_suggest(c, name) : NULL;
	if (near)
		return usage_err(ctx, "%s: unknown option '%s' (did you mean '--%s'?)", c->name,
				 tok, near);
	return usage_err(ctx, "%s: unknown option '%s' (see 'rdmactl %s --help')", c->name, tok,
			 c->name);
}

/* The global options that may follow the command, after c's own in lopts
 * and shorts, answering with 512 + their index; none that c's table already
 * names. Returns the new count of lopts. */
static int add_globals(const struct cmd *c, struct option *lopts, int n, char *shorts, int *s)
{
	for (int g = 0; rdmactl_global_opts[g].name; g++) {
		const struct cmd_opt *o = &rdmactl_global_opts[g];
		bool taken = opt_index(c, o->name) >= 0;

		for (int i = 0; c->opts && c->opts[i].name && !taken; i++)
			taken = c->opts[i].short_name == o->short_name;
		if (!o->anywhere || taken)
			continue;
		lopts[n++] = (struct option){ o->name, o->arg ? required_argument : no_argument,
					      NULL, 512 + g };
		shorts[(*s)++] = o->short_name;
		if (o->arg)
			shorts[(*s)++] = ':';
	}
	return n;
}

/* getopt's answer ch, when it is a global option (its letter, or 512 + its
 * index), taken into ctx: 1; 0 for one of c's own; -EINVAL after a usage
 * error. */
static int take_global(struct ctx *ctx, const struct cmd *c, int ch)
{
	const char *bad = NULL;

	for (int i = 0; ch < 256 && c->opts && c->opts[i].name; i++)
		if (c->opts[i].short_name == ch)
			return 0; /* c's own letter (add_globals left it to c) */
	for (int g = 0; ch < 256 && rdmactl_global_opts[g].name; g++)
		if (rdmactl_global_opts[g].anywhere && rdmactl_global_opts[g].short_name == ch)
			ch = 512 + g;
	if (ch < 512)
		return 0;
	if (global_take(ctx, &rdmactl_global_opts[ch - 512], optarg, &bad))
		return usage_err(ctx, "%s: %s", c->name, bad);
	return 1;
}

int opts_count(const struct cmd_opt *opts)
{
	int n = 0;

	while (opts && opts[n].name)
		n++;
	return n;
}

int opts_parse(struct ctx *ctx, const struct cmd *c, int argc, char **argv, struct opt_vals *v)
{
	struct option lopts[2 * OPT_MAX + 2];
	char shorts[OPT_MAX * 4 + 4];
	int n = 0, s = 0, ch;

	memset(v, 0, sizeof(*v));
	if (opts_count(c->opts) > OPT_MAX) /* OPTS_FIT catches it at build time */
		return usage_err(ctx, "%s: %d options, more than the parser takes (%d)", c->name,
				 opts_count(c->opts), OPT_MAX);
	shorts[s++] = ':';
	for (; c->opts && c->opts[n].name; n++) {
		const struct cmd_opt *o = &c->opts[n];

		lopts[n] = (struct option){ o->name, o->arg ? required_argument : no_argument, NULL,
					    256 + n };
		if (o->short_name) {
			shorts[s++] = o->short_name;
			if (o->arg)
				shorts[s++] = ':';
		}
	}
	n = add_globals(c, lopts, n, shorts, &s);
	lopts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	lopts[n] = (struct option){ 0 };
	shorts[s++] = 'h';
	shorts[s] = '\0';

	optind = 0;
	opterr = 0;
	for (int li = -1; (ch = getopt_long(argc, argv, shorts, lopts, &li)) != -1; li = -1) {
		int idx = -1, g;

		/* getopt_long takes a unique prefix (--siz for --size): here a
		 * long option is only ever its whole name. */
		if (li >= 0 && ch != '?' && ch != ':' && opt_abbrev(argv, &lopts[li]))
			return unknown_opt(ctx, c, opt_abbrev(argv, &lopts[li]));
		if (ch == 'h') {
			help_print(ctx, c);
			return 1;
		}
		if (ch == '?') {
			char one[3] = { '-', (char)optopt, 0 };

			return unknown_opt(ctx, c, optopt ? one : argv[optind - 1]);
		}
		if (ch == ':')
			return usage_err(ctx, "%s: option '%s' needs an argument", c->name,
					 argv[optind - 1]);
		if ((g = take_global(ctx, c, ch)) < 0)
			return g;
		if (g)
			continue;
		if (ch >= 256)
			idx = ch - 256;
		else
			for (int i = 0; c->opts[i].name; i++)
				if (c->opts[i].short_name == ch)
					idx = i;
		if (idx < 0)
			return usage_err(ctx, "%s: unexpected option", c->name);
		if (!opt_for(c, &c->opts[idx]))
			return opt_not_for(ctx, c, &c->opts[idx]);
		if (v->count[idx] && !c->opts[idx].repeat && c->opts[idx].arg)
			return usage_err(ctx, "%s: option '--%s' given twice", c->name,
					 c->opts[idx].name);
		v->count[idx]++;
		v->vals[idx] = c->opts[idx].arg ? optarg : "";
		if (c->opts[idx].repeat) {
			if (v->nmulti >= REPEAT_MAX)
				return usage_err(ctx, "%s: too many '--%s' options", c->name,
						 c->opts[idx].name);
			v->multi[v->nmulti] = optarg;
			v->multi_idx[v->nmulti++] = idx;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (v->npos >= POS_MAX)
			return usage_err(ctx, "%s: too many arguments", c->name);
		v->pos[v->npos++] = argv[i];
	}
	return 0;
}

void test_hook_wait(const char *path, const char *mark)
{
	char name[4096];
	FILE *f;

	snprintf(name, sizeof(name), "%s.%s", path, mark);
	f = fopen(name, "w");
	if (f)
		fclose(f);
	for (int i = 0; i < 6000 && access(path, F_OK); i++)
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
}

int opt_not_for(struct ctx *ctx, const struct cmd *c, const struct cmd_opt *o)
{
	char msg[512];

	opt_not_for_text(c, o, msg, sizeof(msg));
	return usage_err(ctx, "%s", msg);
}
