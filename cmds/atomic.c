// SPDX-License-Identifier: MIT
/* rdmactl atomic: 8-byte fetch-and-add or compare-and-swap on a served region. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/parse.h>

#include "cmds.h"
#include "client_cmds.h"

#define ATOMIC_OPTS(X) \
	X(AT_FAA, "faa", 0, "DELTA", "fetch-and-add DELTA (may be negative)", \
	  OPT_STR(struct atomic_args, faa, NULL)) \
	X(AT_CAS, "cas", 0, "EXPECTED,SWAP", "compare-and-swap: EXPECTED becomes SWAP", \
	  OPT_STR(struct atomic_args, cas, NULL)) \
	CLIENT_OPTS(X, AT) \
	BENCH_OPTS(X, AT)

/* What `atomic` was asked, parsed and checked. */
struct atomic_args {
	struct client_args cl;
	struct bench_args bench;
	const char *faa, *cas; /* as given */
	bool is_cas;
	uint64_t add, expected, swap;
};

enum { ATOMIC_OPTS(OPT_INDEX) ATOMIC_NOPTS };
static const struct cmd_opt atomic_opts[] = { ATOMIC_OPTS(OPT_ENTRY) OPT_END };
OPTS_BOUND(atomic_opts, ATOMIC_NOPTS);

static int parse_cas(const char *s, uint64_t *expected, uint64_t *swap)
{
	char a[32], *comma = strchr(s, ',');
	int64_t x, y;

	if (!comma || (size_t)(comma - s) >= sizeof(a))
		return -EINVAL;
	memcpy(a, s, (size_t)(comma - s));
	a[comma - s] = '\0';
	if (rc_parse_i64(a, &x) || rc_parse_i64(comma + 1, &y))
		return -EINVAL;
	*expected = (uint64_t)x;
	*swap = (uint64_t)y;
	return 0;
}

static void put_u64(struct ctx *ctx, const char *key, const char *fmt, uint64_t v)
{
	char hex[24];

	out_u64(&ctx->out, key, fmt, v);
	snprintf(hex, sizeof(hex), "0x%016" PRIx64, v);
	char hkey[32];

	snprintf(hkey, sizeof(hkey), "%s_hex", key);
	out_str(&ctx->out, hkey, NULL, hex);
}

static int atomic_parse(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
			struct atomic_args *a)
{
	int64_t delta;
	int rc;

	memset(a, 0, sizeof(*a));
	opts_fill(ctx, c, v, AT_FAA, AT_CAS + 1, a);
	if (!a->faa == !a->cas)
		return usage_err(ctx,
				 "atomic: give exactly one of --faa DELTA or --cas EXPECTED,SWAP");
	a->is_cas = a->cas != NULL;
	if (a->is_cas && parse_cas(a->cas, &a->expected, &a->swap))
		return usage_err(ctx, "invalid --cas '%s': expected two integers, EXPECTED,SWAP",
				 a->cas);
	if (!a->is_cas) {
		if (rc_parse_i64(a->faa, &delta))
			return usage_err(ctx, "invalid --faa '%s': expected a 64-bit integer",
					 a->faa);
		a->add = (uint64_t)delta;
	}
	if ((rc = client_args_parse(ctx, c, v, AT_TOKEN, &a->cl)))
		return rc;
	if (a->cl.off % 8)
		return usage_err(ctx, "atomic: --offset %llu is not 8-byte aligned",
				 (unsigned long long)a->cl.off);
	if ((rc = bench_args_parse(ctx, c, v, AT_BENCH, a->is_cas ? RC_OP_CAS : RC_OP_FAA,
				   &a->bench)))
		return rc;
	if (a->bench.on)
		return 0;
	return client_target(ctx, c, v, NULL);
}

static int atomic_run(struct ctx *ctx, const struct atomic_args *a, struct rc_client *cl,
		      uint64_t *old)
{
	struct rc_err e;
	int rc;

	if ((rc = rc_client_check(cl, a->cl.off, 8, true, true, &e)))
		return fail(ctx, rc, "%s", ERR_TEXT(e));
	rc = rc_client_atomic(cl, a->is_cas ? RC_OP_CAS : RC_OP_FAA, a->cl.off,
			      a->is_cas ? a->expected : a->add, a->swap, ctx->timeout_ms, old, &e);
	return rc ? fail(ctx, rc, "%s", ERR_TEXT(e)) : 0;
}

static void atomic_values(struct ctx *ctx, const struct atomic_args *a, uint64_t old);

static void atomic_print(struct ctx *ctx, const struct atomic_args *a, const struct rc_client *cl,
			 uint64_t old)
{
	out_str(&ctx->out, "operation", NULL, a->is_cas ? "cas" : "faa");
	out_str(&ctx->out, "peer", NULL, rc_client_peer(cl));
	out_str(&ctx->out, "region", NULL, rc_client_region(cl)->name);
	out_u64(&ctx->out, "offset", NULL, a->cl.off);
	fabric_verbs_keys(ctx, rc_client_device(cl));
	atomic_values(ctx, a, old);
}

/* The old value and the new, text and JSON. */
static void atomic_values(struct ctx *ctx, const struct atomic_args *a, uint64_t old)
{
	put_u64(ctx, "old", "old %" PRIu64, old);
	if (a->is_cas) {
		out_bool(&ctx->out, "swapped", ", swapped: %s", old == a->expected);
		put_u64(ctx, "new", ", now %" PRIu64 "\n", old == a->expected ? a->swap : old);
	} else {
		put_u64(ctx, "new", ", now %" PRIu64 "\n", old + a->add);
	}
}

/* Over libfabric: the same operation and report, the transport named. */
static int atomic_ofi(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		      const struct atomic_args *a)
{
	struct rc_fcli *fc = NULL;
	struct rc_err e;
	uint64_t old = 0;
	int rc = fabric_client_open(ctx, c, v, &a->cl, &fc);
	const char *slash = strrchr(v->pos[0], '/');
	char peer[RC_HOST_MAX + 16];

	if (rc)
		return rc;
	rc = rc_fcli_atomic(fc, a->is_cas, a->cl.off, a->is_cas ? a->expected : a->add, a->swap,
			    &old, &e);
	if (rc) {
		rc = fail(ctx, rc, "%s", ERR_TEXT(e));
	} else {
		snprintf(peer, sizeof(peer), "%.*s", slash ? (int)(slash - v->pos[0]) : 0,
			 v->pos[0]);
		out_str(&ctx->out, "operation", NULL, a->is_cas ? "cas" : "faa");
		out_str(&ctx->out, "peer", NULL, peer);
		out_str(&ctx->out, "region", NULL, rc_fcli_region(fc)->name);
		out_u64(&ctx->out, "offset", NULL, a->cl.off);
		out_str(&ctx->out, "transport", NULL, "ofi");
		out_str(&ctx->out, "provider", NULL, rc_fcli_info(fc)->provider);
		out_str(&ctx->out, "domain", NULL, rc_fcli_info(fc)->domain);
		atomic_values(ctx, a, old);
	}
	rc_fcli_close(fc);
	return rc;
}

static int do_atomic(struct ctx *ctx, int argc, char **argv)
{
	const struct cmd *c = &cmd_atomic;
	struct rc_client *cl = NULL;
	struct atomic_args a;
	struct opt_vals v;
	uint64_t old = 0;
	int rc;

	rc = opts_parse(ctx, c, argc, argv, &v);
	if (rc)
		return rc < 0 ? rc : 0;
	if ((rc = atomic_parse(ctx, c, &v, &a)))
		return rc;
	if (a.bench.on)
		return bench_run(ctx, c, &v, &a.cl, &a.bench, a.is_cas ? RC_OP_CAS : RC_OP_FAA,
				 a.is_cas ? a.expected : a.add, a.swap);
	if (a.cl.fab.kind == RC_FABRIC_OFI)
		return atomic_ofi(ctx, c, &v, &a);
	rc = client_open(ctx, c, &v, &a.cl, 1, false, 4, &cl);
	if (rc)
		return rc;
	rc = atomic_run(ctx, &a, cl, &old);
	if (!rc)
		atomic_print(ctx, &a, cl, old);
	client_close(ctx, cl, rc);
	return rc;
}

const struct cmd cmd_atomic = {
	.name = "atomic",
	.run = do_atomic,
	.opts = atomic_opts,
	.args = "TARGET",
	.args_comp = COMP_TARGET,
	.summary = "fetch-and-add or compare-and-swap 8 bytes of a served region",
};
