// SPDX-License-Identifier: MIT
/* rdmactl migrate: move a served region's blocks to another server. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdmactl/migrate.h>

#include "client_cmds.h"
#include "cmds.h"

#define MIGRATE_OPTS(X) \
	X(MIG_BLOCKS, "blocks", 0, "FILE", "the blocks to move, from FILE or - (stdin)", \
	  COMP_FILE, OPT_STR(struct mig_plan, blocks, NULL)) \
	X(MIG_FORMAT, "format", 0, "FORMAT", "block list: auto, text or json", COMP_WORDS, \
	  "auto|text|json", OPT_WORD(struct mig_plan, format, "auto"), \
	  OPT_GIVEN(struct mig_plan, format_given)) \
	X(MIG_WHOLE, "whole", 0, NULL, "move the whole region as one block, no fence", \
	  OPT_FLAG(struct mig_plan, whole)) \
	X(MIG_MAX_ROUNDS, "max-rounds", 0, "N", "live: copy rounds at most", \
	  OPT_INT(struct mig_plan, lo.max_rounds, 2, RC_MIGRATE_MAX_ROUNDS - 1, "8"), \
	  OPT_GIVEN(struct mig_plan, max_rounds_given)) \
	X(MIG_DIRTY, "dirty", 0, "SIZE", "live: fence at SIZE left to copy", \
	  OPT_SIZE(struct mig_plan, lo.dirty_bytes, "256K"), \
	  OPT_GIVEN(struct mig_plan, dirty_given)) \
	X(MIG_NO_VERIFY, "no-verify", 0, NULL, "live: skip the check after the cutover", \
	  OPT_FLAG(struct mig_plan, no_verify)) \
	X(MIG_KEEP_SOURCE, "keep-source", 0, NULL, "live: keep the source's fenced copy", \
	  OPT_FLAG(struct mig_plan, lo.keep_source)) \
	X(MIG_TOKEN, "token", 'T', "TOKEN", "token, visible in /proc: use --token-file", \
	  OPT_STR(struct mig_plan, token_arg, NULL)) \
	X(MIG_TOKEN_FILE, "token-file", 0, "FILE", "the token, from FILE (mode 600)", COMP_FILE, \
	  OPT_STR(struct mig_plan, token_file, NULL)) \
	X(MIG_ADMIN_TOKEN_FILE, "admin-token-file", 0, "FILE", \
	  "admin token from FILE (or $RDMACTL_ADMIN_TOKEN)", COMP_FILE, \
	  OPT_STR(struct mig_plan, admin_token_file, NULL))

/* The command's plan, from the command line and the block list. */
struct mig_plan {
	struct rc_migrate_opts o;
	bool live;
	struct rc_migrate_live lo;
	struct rc_extent *ext;
	size_t n, cap;
	const char *blocks;       /* --blocks FILE or -, or NULL */
	const char *format_given; /* --format as given, or NULL */
	int format;               /* --format: auto, text, json */
	bool whole, no_verify;
	const char *max_rounds_given, *dirty_given; /* as given, or NULL */
	const char *token_arg, *token_file;         /* --token, --token-file as given */
	const char *admin_token_file;               /* --admin-token-file as given */
	const char *from;                           /* where the blocks came from, for messages */
	struct etcd_name en;                        /* a source named through etcd */
	char token_buf[RC_TOKEN_MAX + 1];           /* what --token-file held */
	char admin[RC_TOKEN_MAX + 1];               /* what --admin-token-file held */
};

enum { MIGRATE_OPTS(OPT_INDEX) MIGRATE_NOPTS };
static const struct cmd_opt migrate_opts[] = { MIGRATE_OPTS(OPT_ENTRY) OPT_END };
OPTS_BOUND(migrate_opts, MIGRATE_NOPTS);

#define MAX_BLOCKS (1u << 20)

/*
 * A test's hook, kept out of the help: with RDMACTL_TEST_PAUSE_BEFORE_FENCE
 * set to PATH, a live move creates PATH.paused right before its fence and
 * waits (at most 60 s) for PATH to exist, so that a test can put a write in
 * flight exactly there.
 */
static void pause_before_fence(void *arg)
{
	test_hook_wait(arg, "paused");
}

/*
 * A test's hook, kept out of the help: RDMACTL_TEST_LOSE_DIRTY=OFFSET, a
 * broken record of written blocks: a live move never copies the block at
 * OFFSET again after its first round, so that the verification is seen to
 * catch a missed write (tests/rxe/migrate.bats).
 */
static int lose_dirty_hook(struct ctx *ctx, struct rc_migrate_live *lo)
{
	const char *at = getenv("RDMACTL_TEST_LOSE_DIRTY");
	uint64_t off;

	if (!at || !*at)
		return 0;
	if (rc_parse_u64(at, &off) || off == UINT64_MAX)
		return usage_err(ctx, "RDMACTL_TEST_LOSE_DIRTY='%s' is not a byte offset", at);
	lo->lose_block = off / RC_MIG_BLOCK * RC_MIG_BLOCK + 1;
	return 0;
}

static int add_block(struct ctx *ctx, struct mig_plan *p, uint64_t off, uint64_t len, uint64_t dst,
		     const char *where)
{
	if (p->n == MAX_BLOCKS)
		return usage_err(ctx, "migrate: %s: more than %u blocks", where, MAX_BLOCKS);
	if (len == 0)
		return usage_err(ctx, "migrate: %s: a block of length 0", where);
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		struct rc_extent *x = realloc(p->ext, cap * sizeof(*x));

		if (!x)
			return fail(ctx, -ENOMEM, "out of memory");
		p->ext = x;
		p->cap = cap;
	}
	p->ext[p->n++] = (struct rc_extent){ .src = off, .dst = dst, .len = len };
	return 0;
}

/* A JSON number or a size string ("64K"). */
static int json_size(const json_t *j, uint64_t *out)
{
	if (json_is_integer(j) && json_integer_value(j) >= 0) {
		*out = (uint64_t)json_integer_value(j);
		return 0;
	}
	return json_is_string(j) ? rc_parse_size(json_string_value(j), out) : -EINVAL;
}

/* [{"offset": N, "length": N, "dst_offset": N}, ...], [[OFF, LEN, DST?], ...],
 * or either under {"blocks": ...}. */
static int parse_json(struct ctx *ctx, struct mig_plan *p, const char *text)
{
	json_error_t je;
	json_t *root = json_loads(text, 0, &je), *list, *b;
	size_t i;
	int rc = 0;

	if (!root)
		return usage_err(ctx, "migrate: %s: not JSON (line %d: %s)", p->from, je.line,
				 je.text);
	list = json_is_object(root) ? json_object_get(root, "blocks") : root;
	if (!json_is_array(list)) {
		json_decref(root);
		return usage_err(ctx,
				 "migrate: %s: expected an array of blocks, or {\"blocks\": [...]}",
				 p->from);
	}
	json_array_foreach(list, i, b)
	{
		const json_t *off, *len, *dst;
		uint64_t o = 0, l = 0, d = 0;
		char where[64];

		snprintf(where, sizeof(where), "%s: block %zu", p->from, i + 1);
		if (json_is_array(b)) {
			off = json_array_get(b, 0), len = json_array_get(b, 1),
			dst = json_array_get(b, 2);
			if (json_array_size(b) < 2 || json_array_size(b) > 3)
				off = NULL;
		} else {
			off = json_object_get(b, "offset"), len = json_object_get(b, "length");
			dst = json_object_get(b, "dst_offset");
		}
		if (!off || !len || json_size(off, &o) || json_size(len, &l) ||
		    (dst && json_size(dst, &d))) {
			rc = usage_err(
				ctx,
				"migrate: %s: expected {\"offset\": N, \"length\": N[, \"dst_offset\": N]} or [OFFSET, LENGTH[, DST_OFFSET]]",
				where);
			break;
		}
		rc = add_block(ctx, p, o, l, dst ? d : o, where);
		if (rc)
			break;
	}
	json_decref(root);
	return rc;
}

/* Lines of OFFSET LENGTH [DST_OFFSET] (sizes may carry K, M, G), separated by
 * spaces or commas; blank lines and # comments are skipped. */
static int parse_text(struct ctx *ctx, struct mig_plan *p, char *text)
{
	int line = 0, rc;

	for (char *s = text, *next; s && *s; s = next) {
		char *f[4] = { 0 }, *save = NULL, where[64];
		uint64_t v[3] = { 0 };
		int nf = 0;

		next = strchr(s, '\n');
		if (next)
			*next++ = '\0';
		line++;
		if (strchr(s, '#'))
			*strchr(s, '#') = '\0';
		for (char *t = strtok_r(s, " \t\r,", &save); t; t = strtok_r(NULL, " \t\r,", &save))
			if (nf < 4)
				f[nf++] = t;
			else
				nf = 5;
		if (nf == 0)
			continue;
		snprintf(where, sizeof(where), "%s: line %d", p->from, line);
		if (nf < 2 || nf > 3)
			return usage_err(ctx, "migrate: %s: expected OFFSET LENGTH [DST_OFFSET]",
					 where);
		for (int i = 0; i < nf; i++)
			if (rc_parse_size(f[i], &v[i]))
				return usage_err(ctx,
						 "migrate: %s: '%s' is not a size (4096, 64K, 1M...)",
						 where, f[i]);
		rc = add_block(ctx, p, v[0], v[1], nf == 3 ? v[2] : v[0], where);
		if (rc)
			return rc;
	}
	return 0;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *fp = strcmp(path, "-") ? fopen(path, "re") : stdin;
	size_t cap = 0, n = 0;
	char *buf = NULL;

	if (!fp)
		return NULL;
	for (;;) {
		if (cap - n < 4097) {
			char *b = realloc(buf, cap = cap ? cap * 2 : 16384);

			if (!b) {
				free(buf);
				buf = NULL;
				errno = ENOMEM;
				break;
			}
			buf = b;
		}
		size_t got = fread(buf + n, 1, cap - n - 1, fp);

		n += got;
		if (got == 0) {
			if (ferror(fp)) {
				free(buf);
				buf = NULL;
				errno = EIO;
			}
			break;
		}
	}
	if (buf)
		buf[n] = '\0';
	*len = n;
	if (fp != stdin)
		fclose(fp);
	return buf;
}

static int read_blocks(struct ctx *ctx, struct mig_plan *p, const char *path, const char *fmt)
{
	size_t len;
	char *text = NULL, *s;
	int rc;

	if ((rc = input_file(ctx, "--blocks", path)))
		return rc;
	text = slurp(path, &len);
	if (!text)
		return fail(ctx, -errno, "cannot read the block list '%s': %s", path,
			    strerror(errno));
	p->from = strcmp(path, "-") ? path : "stdin";
	if (strlen(text) != len) {
		free(text);
		return usage_err(ctx, "migrate: %s: the block list holds a NUL byte", p->from);
	}
	for (s = text; isspace((unsigned char)*s); s++)
		;
	if (!strcmp(fmt, "json") || (!strcmp(fmt, "auto") && (*s == '[' || *s == '{')))
		rc = parse_json(ctx, p, text);
	else
		rc = parse_text(ctx, p, text);
	free(text);
	if (!rc && p->n == 0)
		rc = usage_err(ctx, "migrate: %s: the block list names no block", p->from);
	return rc;
}

/* The two servers: SOURCE (HOST:PORT/REGION, or a name in etcd) and DEST. */
static int parse_servers(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
			 struct mig_plan *p)
{
	int rc;

	if (v->npos != 2)
		return usage_err(
			ctx,
			"migrate: give the source and the destination, HOST:PORT/REGION HOST:PORT/REGION");
	/* A source named through etcd: its key says where it is now, and the
	 * cutover points it at the destination. */
	if (!strncmp(v->pos[0], "etcd://", 7)) {
		if (p->whole || p->blocks)
			return usage_err(
				ctx,
				"migrate: a source named through etcd is for a live move (its key changes at the cutover), not --blocks or --whole");
		if ((rc = etcd_name_parse(ctx, c->name, v->pos[0], &p->en)))
			return rc;
		if (rc_parse_target(v->pos[1], &p->o.dst))
			return usage_err(
				ctx,
				"migrate: invalid destination '%s': expected HOST:PORT/REGION, HOST/REGION or [IPV6]:PORT/REGION",
				v->pos[1]);
		if ((rc = etcd_name_resolve(ctx, &p->en, &p->o.src, NULL)))
			return rc;
		p->o.etcd = p->en.server;
		p->o.etcd_ns = p->en.ns;
	}
	for (int i = p->o.etcd ? 1 : 0; i < 2; i++)
		if (rc_parse_target(v->pos[i], i ? &p->o.dst : &p->o.src))
			return usage_err(
				ctx,
				"migrate: invalid %s '%s': expected HOST:PORT/REGION, HOST/REGION or [IPV6]:PORT/REGION",
				i ? "destination" : "source", v->pos[i]);
	if (p->o.src.region[0] && p->o.dst.region[0] && strcmp(p->o.src.region, p->o.dst.region))
		return usage_err(ctx, "migrate: the region keeps its name: '%s' cannot become '%s'",
				 p->o.src.region, p->o.dst.region);
	if (!strcmp(p->o.src.host, p->o.dst.host) && !strcmp(p->o.src.port, p->o.dst.port))
		return usage_err(ctx, "migrate: the source and the destination are the same server");
	return 0;
}

/* The first option given that only a live move takes, else -1. */
static int live_only(const struct mig_plan *p)
{
	return p->max_rounds_given ? MIG_MAX_ROUNDS
	       : p->dirty_given    ? MIG_DIRTY
	       : p->no_verify      ? MIG_NO_VERIFY
	       : p->lo.keep_source ? MIG_KEEP_SOURCE
				   : -1;
}

/* The mode: live, or --blocks FILE (in *format) or --whole, with the
 * options that go with each. */
static int parse_mode(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		      struct mig_plan *p)
{
	int live, rc;

	if (p->whole && p->blocks)
		return usage_err(ctx, "migrate: give --blocks FILE (or -) or --whole, not both");
	p->live = !p->whole && !p->blocks;
	opts_fill(ctx, c, v, MIG_NO_VERIFY, MIG_KEEP_SOURCE + 1, p); /* flags: cannot fail */
	if (!p->live && (live = live_only(p)) >= 0)
		return usage_err(ctx,
				 "migrate: --%s is for a live move (without --blocks or --whole)",
				 migrate_opts[live].name);
	if ((rc = opts_fill(ctx, c, v, MIG_MAX_ROUNDS, MIG_KEEP_SOURCE + 1, p)))
		return rc;
	p->lo.verify = !p->no_verify;
	if ((rc = opts_fill(ctx, c, v, MIG_FORMAT, MIG_FORMAT + 1, p)))
		return rc;
	if (p->format_given && !p->blocks)
		return usage_err(ctx, "migrate: --format goes with --blocks");
	if (p->blocks && !strcmp(p->blocks, "-") && ctx->session)
		return usage_err(ctx, "migrate: in the shell, give --blocks FILE");
	return 0;
}

/* The tokens, and the tests' hooks. */
static int parse_tokens(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
			struct mig_plan *p)
{
	int rc;

	opts_fill(ctx, c, v, MIG_TOKEN, MIG_ADMIN_TOKEN_FILE + 1, p); /* strings */
	if ((rc = token_take(ctx, p->token_arg, p->token_file, p->token_buf, &p->o.token)))
		return rc;
	if ((rc = admin_token_take(ctx, p->admin_token_file, p->admin)))
		return rc;
	p->o.admin_token = p->admin[0] ? p->admin : NULL;
	if (getenv("RDMACTL_TEST_PAUSE_BEFORE_FENCE")) {
		p->lo.before_fence = pause_before_fence;
		p->lo.arg = (void *)getenv("RDMACTL_TEST_PAUSE_BEFORE_FENCE");
	}
	return lose_dirty_hook(ctx, &p->lo);
}

static int parse(struct ctx *ctx, int argc, char **argv, struct mig_plan *p)
{
	static const char *const formats[] = { "auto", "text", "json", NULL };
	const struct cmd *c = &cmd_migrate;
	struct opt_vals v;
	int rc;

	rc = opts_parse(ctx, c, argc, argv, &v);
	if (rc)
		return rc < 0 ? rc : 1;
	opts_given(c, &v, p); /* what was given, for the checks before the values */
	/* --blocks and --whole, strings and flags that cannot fail, decide the mode */
	opts_fill(ctx, c, &v, MIG_BLOCKS, MIG_BLOCKS + 1, p);
	opts_fill(ctx, c, &v, MIG_WHOLE, MIG_WHOLE + 1, p);
	if ((rc = parse_servers(ctx, c, &v, p)) || (rc = parse_mode(ctx, c, &v, p)) ||
	    (rc = parse_tokens(ctx, c, &v, p)))
		return rc;
	p->o.dev_name = ctx->dev_name;
	p->o.timeout_ms = ctx->timeout_ms;
	if (p->blocks) {
		rc = read_blocks(ctx, p, p->blocks, formats[p->format]);
		if (rc)
			return rc;
		p->o.ext = p->ext;
		p->o.n = p->n;
	}
	return 0;
}

/* Live: the blocks that differ, each side's sha256 of each. */
static void print_bad(struct out *o, const struct rc_migrate_result *r)
{
	char src[2 * RC_SHA256_LEN + 1], dst[2 * RC_SHA256_LEN + 1];

	out_arr_begin(o, "mismatched_blocks");
	for (int i = 0; i < r->nbad; i++) {
		rc_sha256_hex(r->bad[i].sha_src, src);
		rc_sha256_hex(r->bad[i].sha_dst, dst);
		out_obj_begin(o, NULL);
		out_u64(o, "offset", "block at %llu", (unsigned long long)r->bad[i].offset);
		out_u64(o, "length", " (%llu bytes) differs:", (unsigned long long)r->bad[i].length);
		out_str(o, "sha256_src", " source %s", src);
		out_str(o, "sha256_dst", ", destination %s\n", dst);
		out_obj_end(o);
	}
	out_arr_end(o);
	out_bool(o, "mismatched_blocks_truncated", NULL, r->bad_more);
	if (r->bad_more)
		out_text(o, "(the first %d blocks that differ; there are more)\n",
			 RC_MIGRATE_MAX_BAD);
}

static void print(struct ctx *ctx, const struct rc_migrate_result *r, bool live, bool verify)
{
	struct out *o = &ctx->out;
	char src[2 * RC_SHA256_LEN + 1], dst[2 * RC_SHA256_LEN + 1];

	rc_sha256_hex(r->sha_src, src);
	rc_sha256_hex(r->sha_dst, dst);
	out_str(o, "region", "region %s", r->region);
	out_u64(o, "length", " (%llu bytes", (unsigned long long)r->length);
	out_str(o, "access", ", access %s)", rc_access_name(r->access));
	out_str(o, "source", ": %s", r->src_peer);
	out_str(o, "destination", " -> %s\n", r->dst_peer);
	if (r->etcd_key[0]) {
		out_str(o, "etcd_key", "etcd key %s", r->etcd_key);
		out_i64(o, "etcd_revision", " (mod revision %lld) names the destination now\n",
			(long long)r->etcd_revision);
	} else {
		out_null(o, "etcd_key");
		out_null(o, "etcd_revision");
	}
	out_str(o, "mode", "mode %s", live ? "live" : "blocks");
	out_u64(o, "rounds", ", %llu round", (unsigned long long)r->rounds);
	out_text(o, "%s:", r->rounds == 1 ? "" : "s");
	out_arr_begin(o, "bytes_per_round");
	for (int i = 0; i < r->rounds; i++)
		out_u64(o, NULL, " %llu", (unsigned long long)r->bytes_per_round[i]);
	out_arr_end(o);
	out_text(o, " bytes in");
	out_arr_begin(o, "blocks_per_round");
	for (int i = 0; i < r->rounds; i++)
		out_u64(o, NULL, " %llu", (unsigned long long)r->blocks_per_round[i]);
	out_arr_end(o);
	out_text(o, " blocks\n");
	out_u64(o, "bytes", "%llu bytes", (unsigned long long)r->bytes);
	out_f64(o, "seconds", " in %.3f s", r->seconds);
	if (r->blackout_ms >= 0)
		out_f64(o, "blackout_ms", ", blackout %.3f ms\n", r->blackout_ms);
	else {
		out_null(o, "blackout_ms");
		out_text(o, ", no fence (a copy without a cutover)\n");
	}
	if (!verify) {
		out_null(o, "sha256_src");
		out_null(o, "sha256_dst");
		out_null(o, "verified");
		out_null(o, "mismatched_blocks");
		out_null(o, "mismatched_blocks_truncated");
		out_text(o, "not verified (--no-verify)\n");
		return;
	}
	out_str(o, "sha256_src",
		live ? "sha256 of blocks, source      %s\n" : "sha256 source      %s\n", src);
	out_str(o, "sha256_dst",
		live ? "sha256 of blocks, destination %s\n" : "sha256 destination %s\n", dst);
	out_bool(o, "verified", NULL, r->verified);
	out_text(o, "%s\n",
		 r->verified ? "verified: the destination holds the same bytes"
			     : "NOT verified: the destination differs from the source");
	if (!live) {
		out_null(o, "mismatched_blocks");
		out_null(o, "mismatched_blocks_truncated");
		return;
	}
	print_bad(o, r);
}

/* The progress line on a terminal: the copy round and its bytes, or the step. */
static void mig_progress(void *arg, const char *step, int round, uint64_t done, uint64_t total)
{
	char d[32], t[32];

	if (strcmp(step, "copy")) {
		progress_say(arg, true, "migrate: %s",
			     !strcmp(step, "hash")    ? "hashing both sides"
			     : !strcmp(step, "fence") ? "fencing the source"
						      : "cutover");
		return;
	}
	rc_format_size(done, d, sizeof(d));
	rc_format_size(total, t, sizeof(t));
	progress_say(arg, done == 0, "migrate: round %d: %s of %s pulled", round, d, t);
}

static int do_migrate(struct ctx *ctx, int argc, char **argv)
{
	struct mig_plan p = { 0 };
	struct rc_migrate_result r;
	struct progress prog;
	struct rc_err e;
	int rc = parse(ctx, argc, argv, &p);

	if (rc) {
		free(p.ext);
		return rc < 0 ? rc : 0;
	}
	progress_init(&prog, ctx);
	p.o.progress = mig_progress;
	p.o.progress_arg = &prog;
	rc = p.live ? rc_migrate_live(&p.o, &p.lo, &r, &e) : rc_migrate_blocks(&p.o, &r, &e);
	progress_end(&prog);
	free(p.ext);
	if (rc == -EKEYREJECTED && p.o.etcd) /* a server that did not prove the token */
		return fail(ctx, rc, "%s (the source is etcd record %s)", ERR_TEXT(e), p.en.key);
	if (rc)
		return fail(ctx, rc, "%s", ERR_TEXT(e));
	print(ctx, &r, p.live, !p.live || p.lo.verify);
	if (p.live && p.lo.verify && !r.verified)
		return fail(ctx, -EIO,
			    "region '%s' moved, but %d%s block%s differ%s between the source and the destination (the first at %llu): the source keeps its copy",
			    r.region, r.nbad, r.bad_more ? " or more" : "", r.nbad == 1 ? "" : "s",
			    r.nbad == 1 && !r.bad_more ? "s" : "",
			    r.nbad ? (unsigned long long)r.bad[0].offset : 0ull);
	if ((!p.live || p.lo.verify) && !r.verified)
		return fail(ctx, -EIO,
			    "region '%s': the sha256 of the moved blocks differs between the source and the destination",
			    r.region);
	return 0;
}

const struct cmd cmd_migrate = {
	.name = "migrate",
	.run = do_migrate,
	.opts = migrate_opts,
	.args = "SOURCE DEST",
	.args_comp = COMP_TARGET,
	.summary = "move a served region, live or a block list, to another server",
};
