// SPDX-License-Identifier: MIT
/* Typed option rows: opts_fill stores each row's value (or its default) in
 * the command's argument struct; opt_help adds the default to the help. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <rdmactl/parse.h>

#include "cmd.h"

/* The index of s among the '|'-separated words, else -1; list gets them
 * as "a, b, c" for the message. */
static int word_index(const char *words, const char *s, char *list, size_t cap)
{
	const char *p = words ? words : "";
	int k = 0;

	list[0] = '\0';
	while (*p) {
		size_t n = strcspn(p, "|");

		if (strlen(s) == n && !strncmp(p, s, n))
			return k;
		snprintf(list + strlen(list), cap - strlen(list), "%s%.*s", k ? ", " : "", (int)n,
			 p);
		p += n + (p[n] == '|');
		k++;
	}
	return -1;
}

/* A bound of a duration as its message shows it: 100ms, 30s, 5m, 24h. */
static void dur_text(int64_t ms, char *buf, size_t cap)
{
	if (ms && ms % 3600000 == 0)
		snprintf(buf, cap, "%" PRId64 "h", ms / 3600000);
	else if (ms && ms % 60000 == 0)
		snprintf(buf, cap, "%" PRId64 "m", ms / 60000);
	else if (ms && ms % 1000 == 0)
		snprintf(buf, cap, "%" PRId64 "s", ms / 1000);
	else
		snprintf(buf, cap, "%" PRId64 "ms", ms);
}

int opt_dur_parse(struct ctx *ctx, const struct cmd_opt *o, const char *s, int *ms)
{
	unsigned long long n, unit = 1000;
	char lo[32], hi[32];
	char *end;

	if (*s < '0' || *s > '9')
		goto bad;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno)
		goto bad;
	if (!strcmp(end, "ms"))
		unit = 1;
	else if (!strcmp(end, "m"))
		unit = 60000;
	else if (*end && strcmp(end, "s"))
		goto bad;
	if (n > (unsigned long long)o->max / unit || n * unit < (unsigned long long)o->min)
		goto bad;
	*ms = (int)(n * unit);
	return 0;
bad:
	dur_text(o->min, lo, sizeof(lo));
	dur_text(o->max, hi, sizeof(hi));
	return usage_err(ctx, "invalid --%s '%s': expected %s to %s, such as 500ms, 30s or 5m",
			 o->name, s, lo, hi);
}

int opt_double_parse(const struct cmd_opt *o, const char *s, double *out)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(x) || x < o->dlo || (o->open && x == o->dlo) ||
	    x > o->dhi)
		return -EINVAL;
	*out = x;
	return 0;
}

/* A decimal in the row's bounds, or a usage error that names them. */
static int double_parse(struct ctx *ctx, const struct cmd_opt *o, const char *s, double *out)
{
	if (!opt_double_parse(o, s, out))
		return 0;
	if (isinf(o->dhi) && o->dlo == 0 && !o->open)
		return usage_err(ctx, "invalid --%s '%s': expected a non-negative number", o->name,
				 s);
	if (isinf(o->dhi))
		return usage_err(ctx, "invalid --%s '%s': expected a number %s %g", o->name, s,
				 o->open ? "above" : "from", o->dlo);
	return usage_err(ctx, "invalid --%s '%s': expected a number %s %g to %g", o->name, s,
			 o->open ? "above" : "from", o->dlo, o->dhi);
}

static int fill_one(struct ctx *ctx, const struct cmd_opt *o, const char *s, char *field)
{
	char list[256];
	uint64_t u;
	int k;
	double d;
	int ms;

	switch (o->type) {
	case OPT_T_STR:
		memcpy(field, &s, sizeof(s));
		return 0;
	case OPT_T_SIZE:
		if (opt_size_parse(ctx, o->name, s, &u))
			return -EINVAL;
		memcpy(field, &u, sizeof(u));
		return 0;
	case OPT_T_U64:
		if (rc_parse_u64(s, &u))
			return usage_err(ctx, "invalid --%s '%s': expected a non-negative integer",
					 o->name, s);
		memcpy(field, &u, sizeof(u));
		return 0;
	case OPT_T_U32:
	case OPT_T_INT:
		if (rc_parse_u64(s, &u) || (o->min >= 0 && u < (uint64_t)o->min) ||
		    u > (uint64_t)o->max)
			return usage_err(ctx,
					 "invalid --%s '%s': expected an integer from %" PRId64
					 " to %" PRId64,
					 o->name, s, o->min, o->max);
		if (o->type == OPT_T_U32) {
			uint32_t x = (uint32_t)u;

			memcpy(field, &x, sizeof(x));
		} else {
			int x = (int)u;

			memcpy(field, &x, sizeof(x));
		}
		return 0;
	case OPT_T_WORD:
		k = word_index(o->values, s, list, sizeof(list));
		if (k < 0)
			return usage_err(ctx, "invalid --%s '%s': expected one of %s", o->name, s,
					 list);
		memcpy(field, &k, sizeof(k));
		return 0;
	case OPT_T_DOUBLE:
		if (double_parse(ctx, o, s, &d))
			return -EINVAL;
		memcpy(field, &d, sizeof(d));
		return 0;
	case OPT_T_RATE:
		if (opt_rate_parse(ctx, o->name, s, o->unit, &d))
			return -EINVAL;
		memcpy(field, &d, sizeof(d));
		return 0;
	case OPT_T_DUR:
		if (opt_dur_parse(ctx, o, s, &ms))
			return -EINVAL;
		memcpy(field, &ms, sizeof(ms));
		return 0;
	default:
		return 0;
	}
}

int opts_fill(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int first, int last,
	      void *args)
{
	for (int i = first; i < last; i++) {
		const struct cmd_opt *o = &c->opts[i];
		char *field = (char *)args + o->off;
		const char *s = opt_arg(v, i) ? opt_arg(v, i) : o->def;
		int rc;

		if (o->type == OPT_NONE)
			continue;
		if (o->given_off) {
			const char *given = opt_arg(v, i);

			memcpy((char *)args + o->given_off - 1, &given, sizeof(given));
		}
		if (o->type == OPT_T_FLAG) {
			bool on = opt_on(v, i);

			memcpy(field, &on, sizeof(on));
			continue;
		}
		if (s && (rc = fill_one(ctx, o, s, field)))
			return rc;
	}
	return 0;
}

const char *opt_help(const struct cmd_opt *o, char *buf, size_t cap)
{
	if (!o->def)
		return o->help;
	snprintf(buf, cap, "%s (default %s)", o->help, o->def);
	return buf;
}

void opts_given(const struct cmd *c, const struct opt_vals *v, void *args)
{
	opts_given_at(c, v, 0, opts_count(c->opts), args);
}

void opts_given_at(const struct cmd *c, const struct opt_vals *v, int first, int last, void *args)
{
	for (int i = first; i < last; i++) {
		const char *given = opt_arg(v, i);

		if (c->opts[i].given_off)
			memcpy((char *)args + c->opts[i].given_off - 1, &given, sizeof(given));
	}
}
