// SPDX-License-Identifier: MIT
/*
 * Typed option rows (opts_fill): each type parses into its field, a range
 * takes its bounds and refuses one past them, an absent option takes its
 * default, a bad value is the accessors' usage error naming the option, and
 * help shows the default from the row. Decimals, rates and durations take
 * their syntax and bounds and refuse one past them; OPT_GIVEN and opts_given
 * say what was given. Every typed row of every command has a default its own
 * parser takes.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cmd.h"
#include "cmds.h"

struct targs {
	bool flag;
	const char *str;
	uint64_t size, u64;
	uint32_t u32;
	int num, word;
	uint64_t untyped;
	double dbl, above, nonneg, rate;
	const char *rate_given, *dur_given;
	int dur;
};

#define T_OPTS(X) \
	X(T_FLAG, "flag", 0, NULL, "a flag", OPT_FLAG(struct targs, flag)) \
	X(T_STR, "str", 0, "S", "a string", OPT_STR(struct targs, str, "dflt")) \
	X(T_SIZE, "size", 0, "SIZE", "a size", OPT_SIZE(struct targs, size, "1M")) \
	X(T_U64, "u64", 0, "N", "a count", OPT_U64(struct targs, u64, NULL)) \
	X(T_U32, "u32", 0, "N", "a port", OPT_U32(struct targs, u32, 1, 65535, "4791")) \
	X(T_INT, "int", 0, "N", "a depth", OPT_INT(struct targs, num, 1, 64, "8")) \
	X(T_WORD, "word", 0, "W", "a word", COMP_WORDS, "zero|seq|random", \
	  OPT_WORD(struct targs, word, "seq")) \
	X(T_UNTYPED, "untyped", 0, "N", "read by an accessor (default 5)") \
	X(T_DBL, "dbl", 0, "F", "a fraction", OPT_DOUBLE(struct targs, dbl, 0, 1, "0.5")) \
	X(T_ABOVE, "above", 0, "S", "a time", OPT_DOUBLE_ABOVE(struct targs, above, 0, 3600, NULL)) \
	X(T_NONNEG, "nonneg", 0, "X", "a pace", \
	  OPT_DOUBLE(struct targs, nonneg, 0, INFINITY, NULL)) \
	X(T_RATE, "rate", 0, "RATE", "a rate", OPT_RATE(struct targs, rate, 1e9 / 8, NULL), \
	  OPT_GIVEN(struct targs, rate_given)) \
	X(T_DUR, "dur", 0, "TIME", "an interval", \
	  OPT_DUR(struct targs, dur, 100, 86400000, "30s"), OPT_GIVEN(struct targs, dur_given))

enum { T_OPTS(OPT_INDEX) T_NOPTS };
static const struct cmd_opt t_opts[] = { T_OPTS(OPT_ENTRY) OPT_END };
OPTS_BOUND(t_opts, T_NOPTS);
static const struct cmd t_cmd = { .name = "typed", .opts = t_opts };

static char err[1024];

/* Parse the words (NULL-terminated after the command) and fill a. */
static int fill(struct targs *a, const char *const *words)
{
	char *argv[16] = { "typed" };
	FILE *fp = fmemopen(err, sizeof(err), "w");
	struct opt_vals v;
	struct ctx ctx = { .gid_index = -1, .timeout_ms = 1000 };
	int argc = 1, rc;

	memset(err, 0, sizeof(err));
	for (; words[argc - 1]; argc++)
		argv[argc] = (char *)words[argc - 1];
	out_init(&ctx.out, OUT_TEXT, fp, fp);
	memset(a, 0, sizeof(*a));
	a->untyped = 77;
	rc = opts_parse(&ctx, &t_cmd, argc, argv, &v);
	if (!rc)
		rc = opts_fill_all(&ctx, &t_cmd, &v, a);
	out_free(&ctx.out);
	fclose(fp);
	return rc;
}

#define FILL(a, ...) fill(a, (const char *const[]){ __VA_ARGS__, NULL })

static void check_defaults(void)
{
	struct targs a;

	CHECK(fill(&a, (const char *const[]){ NULL }) == 0);
	CHECK(!a.flag);
	CHECK_STR(a.str, "dflt");
	CHECK_EQ_U64(a.size, 1 << 20);
	CHECK_EQ_U64(a.u64, 0); /* no default: left as the command set it */
	CHECK_EQ_U64(a.u32, 4791);
	CHECK_EQ_U64(a.num, 8);
	CHECK_EQ_U64(a.word, 1);
	CHECK_EQ_U64(a.untyped, 77); /* an untyped row is not touched */
	CHECK(a.dbl == 0.5);
	CHECK(a.above == 0); /* no default: left as the command set it */
	CHECK(a.rate == 0);
	CHECK(!a.rate_given); /* absent */
	CHECK_EQ_U64(a.dur, 30000);
	CHECK(!a.dur_given); /* absent, though filled with its default */
}

static void check_values(void)
{
	struct targs a;

	CHECK(FILL(&a, "--flag", "--str", "x", "--size", "4K", "--u64", "123", "--u32", "65535",
		   "--int", "1", "--word", "random", "--untyped", "9") == 0);
	CHECK(a.flag);
	CHECK_STR(a.str, "x");
	CHECK_EQ_U64(a.size, 4096);
	CHECK_EQ_U64(a.u64, 123);
	CHECK_EQ_U64(a.u32, 65535);
	CHECK_EQ_U64(a.num, 1);
	CHECK_EQ_U64(a.word, 2);
	CHECK_EQ_U64(a.untyped, 77);
	CHECK(FILL(&a, "--u32", "1", "--int", "64") == 0);
	CHECK_EQ_U64(a.u32, 1);
	CHECK_EQ_U64(a.num, 64);
	CHECK(FILL(&a, "--dbl", "0", "--above", "3600", "--nonneg", "1e12", "--rate", "100Gbit",
		   "--dur", "500ms") == 0);
	CHECK(a.dbl == 0);
	CHECK(a.above == 3600);
	CHECK(a.nonneg == 1e12);
	CHECK(a.rate == 100e9 / 8);
	CHECK_STR(a.rate_given, "100Gbit");
	CHECK_EQ_U64(a.dur, 500);
	CHECK_STR(a.dur_given, "500ms");
	CHECK(FILL(&a, "--dbl", "1", "--above", "0.001", "--rate", "12.5", "--dur", "24h") != 0);
	CHECK(FILL(&a, "--dbl", "1", "--above", "0.001", "--rate", "12.5", "--dur", "1440m") == 0);
	CHECK(a.dbl == 1);
	CHECK(a.above == 0.001);
	CHECK(a.rate == 12.5e9 / 8); /* bare: in the row's unit, Gbit/s */
	CHECK_EQ_U64(a.dur, 86400000);
	CHECK(FILL(&a, "--rate", "12.5GB/s", "--dur", "100ms") == 0);
	CHECK(a.rate == 12.5e9);
	CHECK_EQ_U64(a.dur, 100);
	CHECK(FILL(&a, "--dur", "7") == 0);
	CHECK_EQ_U64(a.dur, 7000); /* bare: seconds */
	CHECK(FILL(&a, "--dur", "2s") == 0);
	CHECK_EQ_U64(a.dur, 2000);
}

/* words refused with a usage error whose text holds msg. */
static void check_bad(const char *msg, const char *const *words)
{
	struct targs a;

	CHECK(fill(&a, words) == -EINVAL);
	if (!strstr(err, msg))
		fprintf(stderr, "expected \"%s\" in \"%s\"\n", msg, err);
	CHECK(strstr(err, msg) != NULL);
}

#define BAD(msg, ...) check_bad(msg, (const char *const[]){ __VA_ARGS__, NULL })

static void check_refused(void)
{
	BAD("invalid --size '1Q': expected a size such as 4096, 4K, 1M or 1G", "--size", "1Q");
	BAD("invalid --u64 '-1': expected a non-negative integer", "--u64", "-1");
	BAD("invalid --u32 '0': expected an integer from 1 to 65535", "--u32", "0");
	BAD("invalid --u32 '65536': expected an integer from 1 to 65535", "--u32", "65536");
	BAD("invalid --int '0': expected an integer from 1 to 64", "--int", "0");
	BAD("invalid --int '65': expected an integer from 1 to 64", "--int", "65");
	BAD("invalid --int 'x': expected an integer from 1 to 64", "--int", "x");
	BAD("invalid --word 'se': expected one of zero, seq, random", "--word", "se");
	BAD("invalid --dbl '1.01': expected a number from 0 to 1", "--dbl", "1.01");
	BAD("invalid --dbl '-0.1': expected a number from 0 to 1", "--dbl", "-0.1");
	BAD("invalid --dbl '0.5x': expected a number from 0 to 1", "--dbl", "0.5x");
	BAD("invalid --dbl 'nan': expected a number from 0 to 1", "--dbl", "nan");
	BAD("invalid --above '0': expected a number above 0 to 3600", "--above", "0");
	BAD("invalid --above '3600.5': expected a number above 0 to 3600", "--above", "3600.5");
	BAD("invalid --above '': expected a number above 0 to 3600", "--above", "");
	BAD("invalid --nonneg '-1': expected a non-negative number", "--nonneg", "-1");
	BAD("invalid --nonneg 'inf': expected a non-negative number", "--nonneg", "inf");
	BAD("invalid --nonneg '1e999': expected a non-negative number", "--nonneg", "1e999");
	BAD("invalid --rate '100G': bits or bytes? say 100Gbit (bits per second) or 100GB (bytes per second)",
	    "--rate", "100G");
	BAD("invalid --rate 'fast': expected a rate such as 100Gbit (Gbit/s), 12.5GB (GB/s) or a bare number",
	    "--rate", "fast");
	BAD("invalid --rate '-1Gbit': expected a rate", "--rate", "-1Gbit");
	BAD("invalid --dur '99ms': expected 100ms to 24h, such as 500ms, 30s or 5m", "--dur",
	    "99ms");
	BAD("invalid --dur '86400001ms': expected 100ms to 24h", "--dur", "86400001ms");
	BAD("invalid --dur '1441m': expected 100ms to 24h", "--dur", "1441m");
	BAD("invalid --dur '0': expected 100ms to 24h", "--dur", "0");
	BAD("invalid --dur '1.5s': expected 100ms to 24h", "--dur", "1.5s");
	BAD("invalid --dur '5h': expected 100ms to 24h", "--dur", "5h");
	BAD("invalid --dur '-5s': expected 100ms to 24h", "--dur", "-5s");
	BAD("invalid --dur '99999999999999999999999': expected 100ms to 24h", "--dur",
	    "99999999999999999999999");
	/* The first bad one in table order is the one named. */
	BAD("invalid --size", "--int", "0", "--size", "x");
}

/* opts_given marks what was given without parsing a value: a bad one is
 * left to the fill that comes later. */
static void check_given(void)
{
	char *argv[] = { "typed", "--dur", "soon", NULL };
	char buf[256];
	FILE *fp = fmemopen(buf, sizeof(buf), "w");
	struct ctx ctx = { .gid_index = -1, .timeout_ms = 1000 };
	struct opt_vals v;
	struct targs a;

	out_init(&ctx.out, OUT_TEXT, fp, fp);
	memset(&a, 0, sizeof(a));
	CHECK(opts_parse(&ctx, &t_cmd, 3, argv, &v) == 0);
	opts_given(&t_cmd, &v, &a);
	CHECK_STR(a.dur_given, "soon");
	CHECK(a.rate_given == NULL);
	CHECK_EQ_U64(a.dur, 0); /* not parsed */
	CHECK(opts_fill(&ctx, &t_cmd, &v, T_DUR, T_DUR + 1, &a) == -EINVAL);
	out_free(&ctx.out);
	fclose(fp);
}

static void check_help(void)
{
	char buf[256], *text = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&text, &len);

	CHECK_STR(opt_help(&t_opts[T_SIZE], buf, sizeof(buf)), "a size (default 1M)");
	CHECK_STR(opt_help(&t_opts[T_U64], buf, sizeof(buf)), "a count");
	CHECK_STR(opt_help(&t_opts[T_DBL], buf, sizeof(buf)), "a fraction (default 0.5)");
	CHECK_STR(opt_help(&t_opts[T_DUR], buf, sizeof(buf)), "an interval (default 30s)");
	CHECK_STR(opt_help(&t_opts[T_RATE], buf, sizeof(buf)), "a rate");
	CHECK_STR(opt_help(&t_opts[T_UNTYPED], buf, sizeof(buf)), "read by an accessor (default 5)");
	opts_print(t_opts, fp);
	fclose(fp);
	CHECK(strstr(text, "a port (default 4791)") != NULL);
	CHECK(strstr(text, "a word (default seq)") != NULL);
	CHECK(strstr(text, "a flag\n") != NULL);
	free(text);
}

/* Each typed row of c with a default: the default parses. */
static void check_table_defaults(const struct cmd *c)
{
	char buf[4096];
	FILE *fp = fmemopen(buf, sizeof(buf), "w");
	struct ctx ctx = { .gid_index = -1, .timeout_ms = 1000 };
	struct opt_vals v;
	int n = opts_count(c->opts);

	out_init(&ctx.out, OUT_TEXT, fp, fp);
	memset(&v, 0, sizeof(v));
	for (int i = 0; i < n; i++) {
		const struct cmd_opt *o = &c->opts[i];
		char *args;

		if (o->type == OPT_NONE || !o->def)
			continue;
		/* Filled alone into a zeroed scratch struct as large as needed. */
		args = calloc(1, (o->off > o->given_off ? o->off : o->given_off) + 16);
		CHECK(args != NULL);
		if (args && opts_fill(&ctx, c, &v, i, i + 1, args))
			fprintf(stderr, "%s --%s: default '%s' refused\n", c->name, o->name, o->def);
		CHECK(args && opts_fill(&ctx, c, &v, i, i + 1, args) == 0);
		free(args);
	}
	out_free(&ctx.out);
	fclose(fp);
}

int main(void)
{
	check_defaults();
	check_values();
	check_refused();
	check_given();
	check_help();
	for (int i = 0; rdmactl_cmds[i]; i++) {
		check_table_defaults(rdmactl_cmds[i]);
		for (int j = 0; rdmactl_cmds[i]->subs && rdmactl_cmds[i]->subs[j]; j++)
			check_table_defaults(rdmactl_cmds[i]->subs[j]);
	}
	CHECK_DONE();
}
