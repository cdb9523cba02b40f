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

static const struct cmd_opt atomic_opts[] = {
	{ "faa", 'a', "DELTA", "fetch-and-add DELTA (may be negative)" },
	{ "cas", 'c', "EXPECTED,SWAP", "compare-and-swap: store SWAP where the value is EXPECTED" },
	CLIENT_OPTS,
	BENCH_OPTS,
	OPT_END,
};
OPTS_FIT(atomic_opts);

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

static int do_atomic(struct ctx *ctx, int argc, char **argv)
{
	const struct cmd *c = &cmd_atomic;
	struct rc_client *cl = NULL;
	struct opt_vals v;
	struct rc_err e;
	uint64_t off = 0, add = 0, expected = 0, swap = 0, old = 0;
	bool is_cas;
	int64_t delta;
	int rc;

	rc = opts_parse(ctx, c, argc, argv, &v);
	if (rc)
		return rc < 0 ? rc : 0;
	if (opt_has(c, &v, "faa") == opt_has(c, &v, "cas"))
		return usage_err(ctx, "atomic: give exactly one of --faa DELTA or --cas EXPECTED,SWAP");
	is_cas = opt_has(c, &v, "cas");
	if (is_cas && parse_cas(opt_get(c, &v, "cas"), &expected, &swap))
		return usage_err(ctx, "invalid --cas '%s': expected two integers, EXPECTED,SWAP",
				 opt_get(c, &v, "cas"));
	if (!is_cas) {
		if (rc_parse_i64(opt_get(c, &v, "faa"), &delta))
			return usage_err(ctx, "invalid --faa '%s': expected a 64-bit integer",
					 opt_get(c, &v, "faa"));
		add = (uint64_t)delta;
	}
	if ((rc = opt_size(ctx, c, &v, "offset", &off)))
		return rc;
	if (off % 8)
		return usage_err(ctx, "atomic: --offset %llu is not 8-byte aligned", (unsigned long long)off);
	if (bench_wanted(c, &v))
		return bench_run(ctx, c, &v, is_cas ? RC_OP_CAS : RC_OP_FAA, is_cas ? expected : add, swap);
	if ((rc = client_target(ctx, c, &v, &(struct rc_target){ 0 })))
		return rc;
	rc = client_open(ctx, c, &v, 1, false, 4, &cl);
	if (rc)
		return rc;
	if ((rc = rc_client_check(cl, off, 8, true, true, &e))) {
		rc = fail(ctx, rc, "%s", e.msg);
		goto out;
	}
	rc = rc_client_atomic(cl, is_cas ? RC_OP_CAS : RC_OP_FAA, off, is_cas ? expected : add, swap,
			      ctx->timeout_ms, &old, &e);
	if (rc) {
		rc = fail(ctx, rc, "%s", e.msg);
		goto out;
	}
	out_str(&ctx->out, "operation", NULL, is_cas ? "cas" : "faa");
	out_str(&ctx->out, "peer", NULL, rc_client_peer(cl));
	out_str(&ctx->out, "region", NULL, cl->region.name);
	out_u64(&ctx->out, "offset", NULL, off);
	put_u64(ctx, "old", "old %" PRIu64, old);
	if (is_cas) {
		out_bool(&ctx->out, "swapped", ", swapped: %s", old == expected);
		put_u64(ctx, "new", ", now %" PRIu64 "\n", old == expected ? swap : old);
	} else {
		put_u64(ctx, "new", ", now %" PRIu64 "\n", old + add);
	}
out:
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
