// SPDX-License-Identifier: MIT
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/parse.h>

#include "cmd.h"

int usage_err(struct ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	out_verr(&ctx->out, EINVAL, fmt, ap);
	va_end(ap);
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

int opt_index(const struct cmd *c, const char *name)
{
	for (int i = 0; c->opts && c->opts[i].name; i++)
		if (!strcmp(c->opts[i].name, name))
			return i;
	return -1;
}

void cmd_usage(const struct cmd *c, FILE *fp)
{
	fprintf(fp, "Usage: rdmactl %s%s%s%s\n", c->name, c->opts ? " [OPTIONS]" : "",
		c->args ? " " : "", c->args ? c->args : "");
	fprintf(fp, "%s\n", c->summary);
	if (!c->opts || !c->opts[0].name)
		return;
	fprintf(fp, "\nOptions:\n");
	opts_print(c->opts, fp);
}

void opts_print(const struct cmd_opt *opts, FILE *fp)
{
	for (int i = 0; opts[i].name; i++) {
		const struct cmd_opt *o = &opts[i];
		char left[64];

		if (o->short_name)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", o->short_name, o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		fprintf(fp, "  %-30s %s\n", left, o->help);
	}
	fprintf(fp, "  %-30s %s\n", "-h, --help", "show this help");
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
	struct option lopts[OPT_MAX + 2];
	char shorts[OPT_MAX * 2 + 4];
	int n = 0, s = 0, ch;

	memset(v, 0, sizeof(*v));
	if (opts_count(c->opts) > OPT_MAX) /* OPTS_FIT catches it at build time */
		return usage_err(ctx, "%s: %d options, more than the parser takes (%d)", c->name,
				 opts_count(c->opts), OPT_MAX);
	shorts[s++] = ':';
	for (; c->opts && c->opts[n].name; n++) {
		const struct cmd_opt *o = &c->opts[n];

		lopts[n] = (struct option){ o->name, o->arg ? required_argument : no_argument,
					    NULL, 256 + n };
		if (o->short_name) {
			shorts[s++] = o->short_name;
			if (o->arg)
				shorts[s++] = ':';
		}
	}
	lopts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	lopts[n] = (struct option){ 0 };
	shorts[s++] = 'h';
	shorts[s] = '\0';

	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, shorts, lopts, NULL)) != -1) {
		int idx = -1;

		if (ch == 'h') {
			cmd_usage(c, ctx->out.fp);
			return 1;
		}
		if (ch == '?') {
			if (optopt)
				return usage_err(ctx, "%s: unknown option '-%c' (see 'rdmactl %s --help')",
						 c->name, optopt, c->name);
			return usage_err(ctx, "%s: unknown option '%s' (see 'rdmactl %s --help')",
					 c->name, argv[optind - 1], c->name);
		}
		if (ch == ':')
			return usage_err(ctx, "%s: option '%s' needs an argument", c->name,
					 argv[optind - 1]);
		if (ch >= 256)
			idx = ch - 256;
		else
			for (int i = 0; c->opts[i].name; i++)
				if (c->opts[i].short_name == ch)
					idx = i;
		if (idx < 0)
			return usage_err(ctx, "%s: unexpected option", c->name);
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

int opt_size_at(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int i,
		uint64_t *out)
{
	const char *s = opt_arg(v, i);

	if (!s)
		return 0;
	if (rc_parse_size(s, out))
		return usage_err(ctx, "invalid --%s '%s': expected a size such as 4096, 4K, 1M or 1G",
				 c->opts[i].name, s);
	return 0;
}

int opt_u64_at(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int i,
	       uint64_t *out)
{
	const char *s = opt_arg(v, i);

	if (!s)
		return 0;
	if (rc_parse_u64(s, out))
		return usage_err(ctx, "invalid --%s '%s': expected a non-negative integer",
				 c->opts[i].name, s);
	return 0;
}

int opt_int_at(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int i, int min,
	       int max, int *out)
{
	const char *s = opt_arg(v, i);
	uint64_t u;

	if (!s)
		return 0;
	if (rc_parse_u64(s, &u) || u < (uint64_t)min || u > (uint64_t)max)
		return usage_err(ctx, "invalid --%s '%s': expected an integer from %d to %d",
				 c->opts[i].name, s, min, max);
	*out = (int)u;
	return 0;
}

int opt_word_at(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int i,
		const char *const *words, int *out)
{
	const char *s = opt_arg(v, i);
	char list[256] = "";

	if (!s)
		return 0;
	for (int k = 0; words[k]; k++) {
		if (!strcmp(words[k], s)) {
			*out = k;
			return 0;
		}
	}
	for (int k = 0; words[k]; k++) {
		strncat(list, k ? ", " : "", sizeof(list) - strlen(list) - 1);
		strncat(list, words[k], sizeof(list) - strlen(list) - 1);
	}
	return usage_err(ctx, "invalid --%s '%s': expected one of %s", c->opts[i].name, s, list);
}

const char *opt_token_at(const struct opt_vals *v, int i)
{
	const char *t = i >= 0 ? opt_arg(v, i) : NULL;

	if (!t)
		t = getenv("RDMACTL_TOKEN");
	return t && *t ? t : NULL;
}

int opt_mem(struct ctx *ctx, const char *arg, bool cuda_ok, const char *why_not_cuda,
	    enum rc_mem_kind *kind, int *gpu)
{
	*kind = RC_MEM_HOST;
	*gpu = 0;
	if (!arg)
		return 0;
	if (rc_mem_parse(arg, kind, gpu) || *kind == RC_MEM_FILE)
		return usage_err(ctx, "invalid --mem '%s': expected host, hugepage, cuda or cuda:N", arg);
	if (*kind == RC_MEM_CUDA && !rc_mem_gpu_built())
		return fail(ctx, -ENOTSUP,
			    "--mem %s: this rdmactl was built without CUDA (the CUDA toolkit was not found, or -DRDMACTL_CUDA=OFF): GPU memory is not available",
			    arg);
	if (*kind == RC_MEM_CUDA && !cuda_ok)
		return fail(ctx, -ENOTSUP, "--mem %s: %s", arg, why_not_cuda);
	return 0;
}

int opt_mem_ready(struct ctx *ctx, const char *arg, enum rc_mem_kind kind, int gpu)
{
	struct rc_err e;
	int rc;

	if (kind != RC_MEM_CUDA)
		return 0;
	rc = rc_mem_gpu_check(gpu, &e);
	return rc ? fail(ctx, rc, "--mem %s: %s", arg, e.msg) : 0;
}

int opt_admin_token_at(struct ctx *ctx, const struct opt_vals *v, int i,
		       char out[RC_TOKEN_MAX + 1])
{
	const char *path = i >= 0 ? opt_arg(v, i) : NULL, *env;
	char buf[RC_TOKEN_MAX + 3];
	size_t n;
	FILE *f;

	out[0] = 0;
	if (!path) {
		env = getenv("RDMACTL_ADMIN_TOKEN");
		if (!env || !*env)
			return 0;
		if (!rc_token_valid(env))
			return usage_err(ctx, "invalid $RDMACTL_ADMIN_TOKEN: 1 to %d printable characters without spaces",
					 RC_TOKEN_MAX);
		snprintf(out, RC_TOKEN_MAX + 1, "%s", env);
		return 0;
	}
	f = fopen(path, "r");
	if (!f)
		return usage_err(ctx, "--admin-token-file %s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* One line: its newline (and a CR before it) is not the token's. */
	if (n && buf[n - 1] == '\n')
		buf[--n] = 0;
	if (n && buf[n - 1] == '\r')
		buf[--n] = 0;
	if (!rc_token_valid(buf))
		return usage_err(ctx, "--admin-token-file %s: the file holds no token (one line of 1 to %d printable characters without spaces)",
				 path, RC_TOKEN_MAX);
	memcpy(out, buf, n + 1); /* valid: at most RC_TOKEN_MAX */
	return 0;
}
