// SPDX-License-Identifier: MIT
/* Typed option rows: opts_fill stores each row's value (or its default) in
 * the command's argument struct; opt_help adds the default to the help. */
#include <errno.h>
#include <inttypes.h>
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

static int fill_one(struct ctx *ctx, const struct cmd_opt *o, const char *s, char *field)
{
	char list[256];
	uint64_t u;
	int k;

	switch (o->type) {
	case OPT_T_STR:
		memcpy(field, &s, sizeof(s));
		return 0;
	case OPT_T_SIZE:
		if (rc_parse_size(s, &u))
			return usage_err(
				ctx, "invalid --%s '%s': expected a size such as 4096, 4K, 1M or 1G",
				o->name, s);
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
	if (!o->def || o->type == OPT_NONE)
		return o->help;
	snprintf(buf, cap, "%s (default %s)", o->help, o->def);
	return buf;
}
