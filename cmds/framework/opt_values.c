// SPDX-License-Identifier: MIT
/* The typed accessors by index (sizes, integers, words, rates, --mem) and the
 * check of an input file: each refusal a usage error naming the option. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdmactl/parse.h>

#include "cmd.h"

int input_file(struct ctx *ctx, const char *what, const char *path)
{
	struct stat st;

	if (!strcmp(path, "-"))
		return 0;
	if (stat(path, &st) < 0)
		return fail(ctx, -errno, "%s '%s': %s", what, path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return fail(ctx, -EISDIR, "%s '%s' is a directory: name a file", what, path);
	if (access(path, R_OK) < 0)
		return fail(ctx, -errno, "%s '%s': cannot read it: %s", what, path, strerror(errno));
	return 0;
}

int output_file(struct ctx *ctx, const char *what, const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (stat(path, &st) == 0)
		return S_ISDIR(st.st_mode) ? fail(ctx, -EISDIR,
						  "%s '%s' is a directory: name a file", what, path)
					   : 0;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) + (slash == path) : 1,
		 slash ? path : ".");
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return fail(ctx, -ENOENT, "%s '%s': no such directory '%s'", what, path, dir);
	if (access(dir, W_OK) < 0)
		return fail(ctx, -errno, "%s '%s': cannot create files in '%s': %s", what, path,
			    dir, strerror(errno));
	return 0;
}

int opt_size_parse(struct ctx *ctx, const char *name, const char *s, uint64_t *out)
{
	size_t n = strlen(s);
	int rc;

	/* 4MB reads as 4*10^6 in a rate (--link-bw 12.5GB): a size says its
	 * binary prefix plainly (4M, 4MiB), so the two never mix (rdmactl(8),
	 * UNITS). */
	if (n >= 2 && (s[n - 1] == 'B' || s[n - 1] == 'b') && strchr("kKmMgGtT", s[n - 2]) &&
	    isdigit((unsigned char)s[0]))
		return usage_err(ctx,
				 "invalid --%s '%s': a size is binary: say %.*s or %.*siB (%s and "
				 "such are a rate's decimal units)",
				 name, s, (int)(n - 1), s, (int)(n - 1), s, s + n - 2);
	rc = rc_parse_size(s, out);

	if (rc == -ERANGE)
		return usage_err(ctx, "invalid --%s '%s': too large (a size is below 16 EiB)", name,
				 s);
	if (rc)
		return usage_err(ctx,
				 "invalid --%s '%s': expected a size such as 4096, 4K, 1M or 1G",
				 name, s);
	return 0;
}

int opt_size_at(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int i, uint64_t *out)
{
	const char *s = opt_arg(v, i);

	return s ? opt_size_parse(ctx, c->opts[i].name, s, out) : 0;
}

int opt_u64_at(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int i, uint64_t *out)
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

int opt_mem(struct ctx *ctx, const char *arg, bool cuda_ok, const char *why_not_cuda,
	    enum rc_mem_kind *kind, int *gpu)
{
	*kind = RC_MEM_HOST;
	*gpu = 0;
	if (!arg)
		return 0;
	if (rc_mem_parse(arg, kind, gpu) || *kind == RC_MEM_FILE)
		return usage_err(ctx, "invalid --mem '%s': expected host, hugepage, cuda or cuda:N",
				 arg);
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

/* A rate: a number and its unit, decimal prefixes (k M G T) for bits
 * ("100Gbit", "100Gb", "100Gbit/s") and bytes ("12.5GB", "12.5GB/s"),
 * binary ones for bytes only ("1GiB"). A bare number is in bare_unit bytes/s;
 * a bare prefix ("100G") is refused: bits or bytes, a factor of 8. */
int opt_rate_parse(struct ctx *ctx, const char *name, const char *s, double bare_unit, double *out)
{
	static const struct {
		const char *u;
		double mult;
	} units[] = {
		{ "bit", 1.0 / 8 },   { "kbit", 1e3 / 8 },     { "Kbit", 1e3 / 8 },
		{ "Mbit", 1e6 / 8 },  { "Gbit", 1e9 / 8 },     { "Tbit", 1e12 / 8 },
		{ "kb", 1e3 / 8 },    { "Kb", 1e3 / 8 },       { "Mb", 1e6 / 8 },
		{ "Gb", 1e9 / 8 },    { "Tb", 1e12 / 8 },      { "B", 1 },
		{ "kB", 1e3 },        { "KB", 1e3 },           { "MB", 1e6 },
		{ "GB", 1e9 },        { "TB", 1e12 },          { "KiB", 1024.0 },
		{ "MiB", 1048576.0 }, { "GiB", 1073741824.0 }, { "TiB", 1099511627776.0 },
	};
	char unit[16];
	char *end;
	size_t n;
	double d;

	errno = 0;
	d = strtod(s, &end);
	if (errno || end == s || !isfinite(d) || d < 0 || !isdigit((unsigned char)*s))
		goto bad;
	if (!*end) {
		*out = d * bare_unit;
		return 0;
	}
	n = strlen(end);
	if (n >= 2 && !strcmp(end + n - 2, "/s"))
		n -= 2;
	else if (n >= 2 && !strcmp(end + n - 2, "ps"))
		n -= 2;
	if (!n || n >= sizeof(unit))
		goto bad;
	memcpy(unit, end, n);
	unit[n] = 0;
	for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++)
		if (!strcmp(unit, units[k].u)) {
			*out = d * units[k].mult;
			return 0;
		}
	if (n == 1 && strchr("kKMGT", unit[0]))
		return usage_err(ctx,
				 "invalid --%s '%s': bits or bytes? say %.*s%sbit (bits per second) or "
				 "%.*s%sB (bytes per second)",
				 name, s, (int)(end - s), s, unit, (int)(end - s), s, unit);
bad:
	return usage_err(ctx,
			 "invalid --%s '%s': expected a rate such as 100Gbit (Gbit/s), "
			 "12.5GB (GB/s) or a bare number",
			 name, s);
}
