// SPDX-License-Identifier: MIT
/*
 * Typed option rows (opts_fill): each type parses into its field, a range
 * takes its bounds and refuses one past them, an absent option takes its
 * default, a bad value is the accessors' usage error naming the option, and
 * help shows the default from the row. Every typed row of every command has
 * a default its own parser takes.
 */
#include <errno.h>
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
	X(T_UNTYPED, "untyped", 0, "N", "read by an accessor (default 5)")

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
	/* The first bad one in table order is the one named. */
	BAD("invalid --size", "--int", "0", "--size", "x");
}

static void check_help(void)
{
	char buf[256], *text = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&text, &len);

	CHECK_STR(opt_help(&t_opts[T_SIZE], buf, sizeof(buf)), "a size (default 1M)");
	CHECK_STR(opt_help(&t_opts[T_U64], buf, sizeof(buf)), "a count");
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
		args = calloc(1, o->off + 16);
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
	check_help();
	for (int i = 0; rdmactl_cmds[i]; i++) {
		check_table_defaults(rdmactl_cmds[i]);
		for (int j = 0; rdmactl_cmds[i]->subs && rdmactl_cmds[i]->subs[j]; j++)
			check_table_defaults(rdmactl_cmds[i]->subs[j]);
	}
	CHECK_DONE();
}
