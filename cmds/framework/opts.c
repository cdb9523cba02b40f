// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdmactl/parse.h>

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

int opt_index(const struct cmd *c, const char *name)
{
	for (int i = 0; c->opts && c->opts[i].name; i++)
		if (!strcmp(c->opts[i].name, name))
			return i;
	return -1;
}

/* The width help wraps to: the terminal's when fp is one ($COLUMNS when
 * set, else the window's), else 80. At least 60. */
static int help_width(FILE *fp)
{
	struct winsize ws;
	const char *env = getenv("COLUMNS");
	int w = 80;

	if (isatty(fileno(fp))) {
		if (env && atoi(env) > 0)
			w = atoi(env);
		else if (ioctl(fileno(fp), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
			w = ws.ws_col;
	}
	return w < 60 ? 60 : w;
}

void help_line(FILE *fp, int indent, const char *left, int col, const char *text)
{
	int width = help_width(fp), pos;

	pos = fprintf(fp, "%*s%s", indent, "", left);
	if (pos >= col) { /* a long left column: the text starts below it */
		fputc('\n', fp);
		pos = 0;
	}
	fprintf(fp, "%*s", col - pos, "");
	pos = col;
	while (*text) {
		size_t n = strcspn(text, " ");

		if (pos > col && pos + 1 + (int)n > width) {
			fprintf(fp, "\n%*s", col, "");
			pos = col;
		} else if (pos > col) {
			fputc(' ', fp);
			pos++;
		}
		fprintf(fp, "%.*s", (int)n, text);
		pos += (int)n;
		text += n;
		text += strspn(text, " ");
	}
	fputc('\n', fp);
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

		if (o->hidden)
			continue;
		if (o->short_name)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", o->short_name, o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		help_line(fp, 2, left, 33, o->help);
	}
	help_line(fp, 2, "-h, --help", 33, "show this help");
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

/* The option of opts whose name is closest to name, or NULL. */
static const char *opt_suggest(const struct cmd_opt *opts, const char *name)
{
	const char *names[OPT_MAX + 1];
	size_t n = 0;

	for (; opts && opts->name && n < OPT_MAX; opts++)
		names[n++] = opts->name;
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

/* An option c does not have: a global one given after the command, or a
 * typo, with the closest name. */
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
			return usage_err(
				ctx,
				"%s: '%s' is a global option: it goes before the command ('rdmactl %s %s ...')",
				c->name, tok, tok, c->name);
	near = is_long ? opt_suggest(c->opts, name) : NULL;
	if (near)
		return usage_err(ctx, "%s: unknown option '%s' (did you mean '--%s'?)", c->name,
				 tok, near);
	return usage_err(ctx, "%s: unknown option '%s' (see 'rdmactl %s --help')", c->name, tok,
			 c->name);
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

		lopts[n] = (struct option){ o->name, o->arg ? required_argument : no_argument, NULL,
					    256 + n };
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
	for (int li = -1; (ch = getopt_long(argc, argv, shorts, lopts, &li)) != -1; li = -1) {
		int idx = -1;

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

int opt_size_at(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int i, uint64_t *out)
{
	const char *s = opt_arg(v, i);

	if (!s)
		return 0;
	if (rc_parse_size(s, out))
		return usage_err(ctx,
				 "invalid --%s '%s': expected a size such as 4096, 4K, 1M or 1G",
				 c->opts[i].name, s);
	return 0;
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

int opt_secret_file(struct ctx *ctx, const char *opt, const char *path, char *buf, size_t cap)
{
	char line[512];
	struct stat st;
	ssize_t n;
	size_t len;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return fail(ctx, -errno, "--%s %s: cannot read it: %s", opt, path, strerror(errno));
	if (fstat(fd, &st)) {
		int e = errno;

		close(fd);
		return fail(ctx, -e, "--%s %s: %s", opt, path, strerror(e));
	}
	/* As ssh does with its keys: a secret others may read is no secret. A
	 * pipe (--token-file <(...)) or a device is taken as it is. */
	if (S_ISREG(st.st_mode) && (st.st_mode & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH))) {
		close(fd);
		return usage_err(
			ctx,
			"--%s %s: group or others may read or write it (mode %04o): make it private (chmod 600 %s)",
			opt, path, (unsigned)(st.st_mode & 07777), path);
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return fail(ctx, -EISDIR, "--%s %s: a directory, not a file", opt, path);
	}
	len = 0;
	while (len < sizeof(line) - 1 && (n = read(fd, line + len, sizeof(line) - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			close(fd);
			return fail(ctx, -e, "--%s %s: cannot read it: %s", opt, path, strerror(e));
		}
		len += (size_t)n;
		if (memchr(line, '\n', len))
			break;
	}
	close(fd);
	line[len] = '\0';
	/* The first line, without its line end. */
	len = strcspn(line, "\n");
	line[len] = '\0';
	if (len && line[len - 1] == '\r')
		line[--len] = '\0';
	if (!len) {
		explicit_bzero(line, sizeof(line));
		return usage_err(ctx, "--%s %s: its first line is empty", opt, path);
	}
	if (len >= cap) {
		explicit_bzero(line, sizeof(line));
		return usage_err(ctx, "--%s %s: its first line is longer than %zu characters", opt,
				 path, cap - 1);
	}
	memcpy(buf, line, len + 1);
	explicit_bzero(line, sizeof(line));
	return 0;
}

int opt_token(struct ctx *ctx, const struct opt_vals *v, int i_token, int i_file,
	      char buf[RC_TOKEN_MAX + 1], const char **out)
{
	const char *t = i_token >= 0 ? opt_arg(v, i_token) : NULL;
	const char *path = i_file >= 0 ? opt_arg(v, i_file) : NULL;
	const char *from = "--token";
	int rc;

	*out = NULL;
	if (t && path)
		return usage_err(ctx, "give --token or --token-file, not both");
	if (path) {
		if ((rc = opt_secret_file(ctx, "token-file", path, buf, RC_TOKEN_MAX + 1)))
			return rc;
		if (!rc_token_valid(buf))
			return usage_err(
				ctx,
				"--token-file %s: a token is 1 to %d printable characters without spaces",
				path, RC_TOKEN_MAX);
		*out = buf;
		return 0;
	}
	if (!t) {
		t = getenv("RDMACTL_TOKEN");
		from = "$RDMACTL_TOKEN";
		if (t && !*t)
			t = NULL;
	}
	if (t && !rc_token_valid(t))
		return usage_err(ctx, "invalid %s: 1 to %d printable characters without spaces",
				 from, RC_TOKEN_MAX);
	*out = t;
	return 0;
}

int opt_admin_token_at(struct ctx *ctx, const struct opt_vals *v, int i, char out[RC_TOKEN_MAX + 1])
{
	const char *path = i >= 0 ? opt_arg(v, i) : NULL, *env;
	int rc;

	out[0] = 0;
	if (path) {
		if ((rc = opt_secret_file(ctx, "admin-token-file", path, out, RC_TOKEN_MAX + 1)))
			return rc;
		if (rc_token_valid(out))
			return 0;
		out[0] = 0;
		return usage_err(
			ctx,
			"--admin-token-file %s: the file holds no token (one line of 1 to %d printable characters without spaces)",
			path, RC_TOKEN_MAX);
	}
	env = getenv("RDMACTL_ADMIN_TOKEN");
	if (!env || !*env)
		return 0;
	if (!rc_token_valid(env))
		return usage_err(
			ctx,
			"invalid $RDMACTL_ADMIN_TOKEN: 1 to %d printable characters without spaces",
			RC_TOKEN_MAX);
	snprintf(out, RC_TOKEN_MAX + 1, "%s", env);
	return 0;
}

/* A rate: a number and its unit, decimal prefixes (k M G T) for bits
 * ("100Gbit", "100Gb", "100Gbit/s") and bytes ("12.5GB", "12.5GB/s"),
 * binary ones for bytes only ("1GiB"). A bare number is in bare_unit bytes/s;
 * a bare prefix ("100G") is refused: bits or bytes, a factor of 8. */
int opt_rate_at(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int i,
		double bare_unit, double *out)
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
	const char *s = opt_arg(v, i);
	char unit[16];
	char *end;
	size_t n;
	double d;

	if (!s)
		return 0;
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
				 c->opts[i].name, s, (int)(end - s), s, unit, (int)(end - s), s,
				 unit);
bad:
	return usage_err(ctx,
			 "invalid --%s '%s': expected a rate such as 100Gbit (Gbit/s), "
			 "12.5GB (GB/s) or a bare number",
			 c->opts[i].name, s);
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
