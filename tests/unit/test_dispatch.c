// SPDX-License-Identifier: MIT
/* The dispatcher, option parsing and the output layer, without a device. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "cmd.h"
#include "cmds.h"
#include "check.h"

struct cap {
	char *buf;
	size_t len;
	FILE *fp;
};

static void ctx_open(struct ctx *ctx, struct cap *o, struct cap *e, enum out_mode mode)
{
	o->fp = open_memstream(&o->buf, &o->len);
	e->fp = open_memstream(&e->buf, &e->len);
	*ctx = (struct ctx){ .gid_index = -1, .timeout_ms = 1000 };
	out_init(&ctx->out, mode, o->fp, e->fp);
}

static void ctx_close(struct ctx *ctx, struct cap *o, struct cap *e)
{
	out_finish(&ctx->out);
	out_free(&ctx->out);
	fclose(o->fp);
	fclose(e->fp);
}

static json_t *run_json(char **argv, int argc, int *rc, bool *usage)
{
	struct cap o, e;
	struct ctx ctx;
	json_t *doc;

	ctx_open(&ctx, &o, &e, OUT_JSON);
	*rc = cmd_dispatch(&ctx, argc, argv);
	*usage = ctx.usage_error;
	ctx_close(&ctx, &o, &e);
	doc = json_loads(o.buf, 0, NULL);
	CHECK(e.len == 0); /* JSON mode: nothing on stderr */
	free(o.buf);
	free(e.buf);
	return doc;
}

int main(void)
{
	char *unknown[] = { "frobnicate" };
	char *version[] = { "version" };
	char *noarg[] = { "write" };
	char *badsize[] = { "write", "--size", "12Q", "h:1/r" };
	char *badopt[] = { "read", "--bogus", "h:1/r" };
	char *atom[] = { "atomic", "--faa", "1", "--offset", "4", "h:1/r" };
	bool usage;
	json_t *doc;
	int rc;

	/* Exact names and explicit aliases only. */
	CHECK(cmd_find("register") == &cmd_register);
	CHECK(cmd_find("serve") == &cmd_register);
	CHECK(cmd_find("reg") == NULL);
	CHECK(cmd_find("writ") == NULL);

	doc = run_json(unknown, 1, &rc, &usage);
	CHECK(rc == -EINVAL && usage);
	CHECK(doc && json_integer_value(json_object_get(doc, "schema_version")) == 2);
	CHECK(json_is_string(json_object_get(json_object_get(doc, "error"), "message")));
	CHECK_STR(json_string_value(json_object_get(json_object_get(doc, "error"), "code")),
		  "EINVAL");
	json_decref(doc);

	doc = run_json(version, 1, &rc, &usage);
	CHECK(rc == 0 && !usage);
	CHECK(json_is_string(json_object_get(doc, "version")));
	CHECK(json_object_get(doc, "error") == NULL);
	json_decref(doc);

	doc = run_json(noarg, 1, &rc, &usage);
	CHECK(rc == -EINVAL && usage);
	json_decref(doc);

	doc = run_json(badsize, 4, &rc, &usage);
	CHECK(rc == -EINVAL && usage);
	CHECK(strstr(json_string_value(json_object_get(json_object_get(doc, "error"), "message")),
		     "--size") != NULL);
	json_decref(doc);

	doc = run_json(badopt, 3, &rc, &usage);
	CHECK(rc == -EINVAL && usage);
	json_decref(doc);

	/* An unaligned atomic is refused before any connection is tried. */
	doc = run_json(atom, 6, &rc, &usage);
	CHECK(rc == -EINVAL && usage);
	CHECK(strstr(json_string_value(json_object_get(json_object_get(doc, "error"), "message")),
		     "aligned") != NULL);
	json_decref(doc);

	/* Repeated options keep their order; one-shot options refuse a repeat. */
	{
		struct cap o, e;
		struct ctx ctx;
		struct opt_vals v;
		char *reg[] = { "register", "--name", "a",  "--size",   "1M", "--name",
				"b",        "--size", "2M", "--listen", "x" };
		char *twice[] = { "write", "--size", "1", "--size", "2", "h:1/r" };

		ctx_open(&ctx, &o, &e, OUT_TEXT);
		CHECK(opts_parse(&ctx, &cmd_register, 11, reg, &v) == 0);
		CHECK(v.nmulti == 4);
		CHECK_STR(v.multi[2], "b");
		CHECK_STR(opt_arg(&v, opt_index(&cmd_register, "listen")), "x");
		CHECK(opts_parse(&ctx, &cmd_write, 6, twice, &v) == -EINVAL);
		ctx_close(&ctx, &o, &e);
		CHECK(strstr(e.buf, "given twice") != NULL);
		CHECK(o.len == 0);
		free(o.buf);
		free(e.buf);
	}

	/* Text and JSON from the same calls. */
	{
		struct cap o, e;
		struct ctx ctx;

		ctx_open(&ctx, &o, &e, OUT_TEXT);
		out_u64(&ctx.out, "bytes", "%llu bytes\n", 42);
		out_obj_begin(&ctx.out, "lat");
		out_f64(&ctx.out, "p50", "p50 %.1f\n", 1.5);
		out_obj_end(&ctx.out);
		ctx_close(&ctx, &o, &e);
		CHECK_STR(o.buf, "42 bytes\np50 1.5\n");
		free(o.buf);
		free(e.buf);

		ctx_open(&ctx, &o, &e, OUT_JSON);
		out_u64(&ctx.out, "bytes", "%llu bytes\n", 42);
		out_obj_begin(&ctx.out, "lat");
		out_f64(&ctx.out, "p50", "p50 %.1f\n", 1.5);
		out_obj_end(&ctx.out);
		out_arr_begin(&ctx.out, "list");
		out_str(&ctx.out, NULL, NULL, "x");
		out_arr_end(&ctx.out);
		ctx_close(&ctx, &o, &e);
		CHECK_STR(o.buf,
			  "{\"schema_version\":2,\"bytes\":42,\"lat\":{\"p50\":1.5},\"list\":[\"x\"]}\n");
		free(o.buf);
		free(e.buf);

		/* JSON has no NaN or infinity: the key stays, with null */
		ctx_open(&ctx, &o, &e, OUT_JSON);
		out_f64(&ctx.out, "ratio", NULL, NAN);
		out_f64(&ctx.out, "rate", NULL, INFINITY);
		ctx_close(&ctx, &o, &e);
		CHECK_STR(o.buf, "{\"schema_version\":2,\"ratio\":null,\"rate\":null}\n");
		free(o.buf);
		free(e.buf);

		/* an unsigned value past INT64_MAX keeps its size, never turns negative */
		ctx_open(&ctx, &o, &e, OUT_JSON);
		out_u64(&ctx.out, "max", NULL, (uint64_t)INT64_MAX);
		out_u64(&ctx.out, "old", NULL, UINT64_MAX);
		out_u64(&ctx.out, "top", NULL, 1ULL << 63);
		ctx_close(&ctx, &o, &e);
		CHECK_STR(o.buf, "{\"schema_version\":2,\"max\":9223372036854775807,"
				 "\"old\":1.8446744073709552e19,\"top\":9.2233720368547758e18}\n");
		free(o.buf);
		free(e.buf);
	}

	/* A peer's string with control bytes and invalid UTF-8: shown escaped
	 * on a terminal, kept (with U+FFFD) in JSON, in values and errors. */
	{
		struct cap o, e;
		struct ctx ctx;

		ctx_open(&ctx, &o, &e, OUT_TEXT);
		out_str(&ctx.out, "region", "region %s\n", "kv\x1b[2J\x07");
		out_err(&ctx.out, ENOENT, "no region '%s'", "a\rb");
		ctx_close(&ctx, &o, &e);
		CHECK_STR(o.buf, "region kv\\x1b[2J\\x07\n");
		CHECK_STR(e.buf, "rdmactl: no region 'a\\x0db'\n");
		free(o.buf);
		free(e.buf);

		ctx_open(&ctx, &o, &e, OUT_JSON);
		out_str(&ctx.out, "region", NULL, "k\xffv\xc3\xa9");
		out_err(&ctx.out, ENOENT, "no region '%s'", "\xc3");
		ctx_close(&ctx, &o, &e);
		CHECK_STR(o.buf, "{\"schema_version\":2,\"region\":\"k\xef\xbf\xbdv\xc3\xa9\","
				 "\"error\":{\"message\":\"no region '\xef\xbf\xbd'\",\"errno\":2,"
				 "\"code\":\"ENOENT\"}}\n");
		free(o.buf);
		free(e.buf);
	}
	CHECK_DONE();
}
