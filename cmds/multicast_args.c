// SPDX-License-Identifier: MIT
/* rdmactl multicast: its options, parsed and checked before any device. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/parse.h>

#include "multicast.h"

static int block_list(struct ctx *ctx, struct mc_cli *m, const char *s)
{
	char buf[4096], *save = NULL;
	uint64_t end = 0;
	int n = 0;

	if (strlen(s) >= sizeof(buf))
		return usage_err(ctx, "--block-sizes: the list is too long");
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		uint64_t b;

		if (rc_parse_size(t, &b) || !b)
			return usage_err(ctx, "--block-sizes: '%s' is not a size above 0", t);
		if (n == RC_MCAST_BLOCKS_MAX)
			return usage_err(ctx, "--block-sizes: at most %d blocks",
					 RC_MCAST_BLOCKS_MAX);
		end += b;
		m->block_ends[n++] = end;
	}
	if (!n)
		return usage_err(ctx, "--block-sizes: no block");
	m->run.block_ends = m->block_ends;
	m->run.nblocks = n;
	return 0;
}

/* --out with %r replaced by the rank. */
static int out_path(struct ctx *ctx, struct mc_cli *m, const char *tmpl)
{
	size_t o = 0;

	for (const char *p = tmpl; *p; p++) {
		int w;

		if (p[0] == '%' && p[1] == 'r') {
			w = snprintf(m->out_path + o, sizeof(m->out_path) - o, "%d",
				     m->grp.who.rank);
			p++;
		} else {
			w = snprintf(m->out_path + o, sizeof(m->out_path) - o, "%c", *p);
		}
		if (w < 0 || (size_t)w >= sizeof(m->out_path) - o)
			return usage_err(ctx, "--out: the path is too long");
		o += (size_t)w;
	}
	return 0;
}

/* A test hook, kept out of the help: RDMACTL_TEST_CORRUPT_BYTE=OFFSET on a
 * receiver flips that byte of its own copy, so that the digest checks are
 * seen to fail (tests/rxe/multicast.bats). */
static int test_hook(struct ctx *ctx, struct mc_cli *m)
{
	const char *at = getenv("RDMACTL_TEST_CORRUPT_BYTE");

	if (!at || !*at || m->grp.who.rank == m->run.shape.root)
		return 0;
	if (rc_parse_u64(at, &m->run.corrupt_at))
		return usage_err(ctx, "RDMACTL_TEST_CORRUPT_BYTE='%s' is not a byte offset", at);
	m->run.corrupt = true;
	return 0;
}

/* The group (or, with --plan, the job to size) and the numbers. */
static int read_values(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		       struct mc_cli *m)
{
	int rc;

	opts_fill(ctx, c, v, MC_RAILS_PER_RANK, MC_RAILS_PER_RANK + 1, m); /* a string */
	if ((rc = group_rails_per_rank(ctx, m->grp.rails_per_rank_arg, &m->grp)))
		return rc;
	if ((rc = m->plan ? group_plan_args(ctx, c, v, MC_RANK, "multicast", &m->grp)
			  : group_args_parse(ctx, c, v, MC_RANK, &m->grp)) ||
	    (m->plan && ((rc = opts_fill(ctx, c, v, MC_RANKS_PER_NODE, MC_RANKS_PER_NODE + 1, m)) ||
			 (rc = group_plan_rpn(ctx, m->ranks_per_node, m->grp.who.world)))) ||
	    (rc = opts_fill(ctx, c, v, MC_ROOT, MC_ROOT + 1, m)) ||
	    (rc = opts_fill(ctx, c, v, MC_ALGO, MC_FANOUT + 1, m)) ||
	    (rc = opts_fill(ctx, c, v, MC_RING, MC_MAX_RING + 1, m)) ||
	    (rc = opts_fill(ctx, c, v, MC_SIZE, MC_CHUNK + 1, m)) ||
	    (rc = opts_fill(ctx, c, v, MC_LINK_BW, MC_DIGEST + 1, m)))
		return rc;
	if (!strcmp(m->chunk, "auto"))
		m->num.chunk = 0;
	else if (rc_parse_size(m->chunk, &m->num.chunk) || !m->num.chunk ||
		 m->num.chunk > RC_MCAST_CHUNK_LIMIT)
		return usage_err(ctx, "--chunk '%s': expected auto or a size from 1 byte to 1G",
				 m->chunk);
	return 0;
}

/* A root among at least two ranks, --fanout for a tree, chunks and rings
 * of a size to register. */
static int check_shape(struct ctx *ctx, const struct opt_vals *v, const struct mc_cli *m,
		       const struct mc_nums *n)
{
	if (m->grp.who.world < 2)
		return usage_err(
			ctx,
			"multicast needs a root and at least one receiver (the world size is %d)",
			m->grp.who.world);
	if (n->root >= m->grp.who.world)
		return usage_err(ctx, "--root %d is not a rank of the group (ranks 0 to %d)",
				 n->root, m->grp.who.world - 1);
	if (m->fanout_given && n->algo != RC_MCAST_TREE)
		return usage_err(ctx, "--fanout applies to --algo tree only");
	if ((uint64_t)n->ring * n->chunk > RC_MCAST_RING_LIMIT)
		return usage_err(ctx, "--ring %d of --chunk %llu is more than 64G of buffers",
				 n->ring, (unsigned long long)n->chunk);
	return 0;
}

/* What the root sends: --file, or --pattern with --size. */
static int check_blob(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		      struct mc_cli *m, int root)
{
	opts_fill(ctx, c, v, MC_FILE, MC_PATTERN + 1, m);
	if (m->rpn_given && !m->plan)
		return usage_err(ctx, "--ranks-per-node applies to --plan only");
	if (m->grp.who.rank != root || m->plan)
		return 0;
	if (!m->file == !m->pattern)
		return usage_err(ctx, "the root sends --file FILE or --pattern P --size SIZE");
	if (m->file && m->size_given)
		return usage_err(ctx, "--size goes with --pattern; a --file sends all of itself");
	if (m->pattern && !rc_pattern_valid(m->pattern))
		return usage_err(ctx, "--pattern '%s': expected zero, seq or random:SEED",
				 m->pattern);
	if (m->pattern && !m->size_given)
		return usage_err(ctx, "--pattern needs --size SIZE");
	return 0;
}

/* The receive ring's memory (--mem). */
static int check_mem(struct ctx *ctx, struct mc_cli *m, const char *mem)
{
	m->run.mem.kind = RC_MEM_HOST;
	if (mem && rc_mem_parse(mem, &m->run.mem.kind, &m->run.mem.gpu))
		return usage_err(ctx, "--mem '%s': expected host, hugepage or cuda:N", mem);
	if (m->run.mem.kind == RC_MEM_FILE)
		return usage_err(ctx, "--mem file is not a ring memory; give --out FILE instead");
	if (m->run.mem.kind == RC_MEM_CUDA && !rc_mem_gpu_built())
		return fail(ctx, -ENOTSUP, "--mem %s: this rdmactl was built without CUDA", mem);
	/* No driver or no such GPU: said before the group is joined. */
	return m->plan ? 0 : opt_mem_ready(ctx, mem, m->run.mem.kind, m->run.mem.gpu);
}

int multicast_parse(struct ctx *ctx, const struct opt_vals *v, struct mc_cli *m)
{
	const struct cmd *c = &cmd_multicast;
	const struct mc_nums *n = &m->num;
	int rc;

	opts_given(c, v, m); /* what was given, for the checks before the values */
	opts_fill(ctx, c, v, MC_PLAN, MC_PLAN + 1, m);
	if ((rc = read_values(ctx, c, v, m)) || (rc = check_shape(ctx, v, m, n)) ||
	    (rc = check_blob(ctx, c, v, m, n->root)) ||
	    (rc = opts_fill(ctx, c, v, MC_MEM, MC_MEM + 1, m)) || (rc = check_mem(ctx, m, m->mem)))
		return rc;
	opts_fill(ctx, c, v, MC_OUT, MC_BLOCK_SIZES + 1, m);
	opts_fill(ctx, c, v, MC_SVG, MC_BUSY_POLL + 1, m);
	if (m->blocks && (rc = block_list(ctx, m, m->blocks)))
		return rc;
	if (m->grp.rails_per_rank_given && !m->grp.rails && !m->plan)
		return usage_err(ctx, "--rails-per-rank takes the rails of --rails PLAN: give it "
				      "too (or -d DEV1,DEV2 with --listen ADDR1,ADDR2)");
	if (m->blocks && m->grp.nrails > 1)
		return usage_err(ctx,
				 "--block-sizes: the times blocks are usable are told on one "
				 "rail a rank; this rank runs on %d",
				 m->grp.nrails);
	if (m->out && (rc = out_path(ctx, m, m->out)))
		return rc;
	if (!m->grp.rendezvous && !m->plan)
		return usage_err(ctx,
				 "multicast needs --rendezvous etcd://HOST:PORT/JOB or file:PATH");
	m->run.shape.algo = (enum rc_mcast_algo)n->algo;
	m->run.shape.world = m->grp.who.world;
	m->run.shape.root = n->root;
	m->run.shape.fanout = n->fanout;
	m->run.size = n->size;
	m->run.chunk = (uint32_t)n->chunk;
	m->run.ring = n->ring;
	m->run.max_ring = n->max_ring;
	m->run.link_bw = n->bw;
	m->run.digest = n->digest ? RC_MCAST_DIGEST_SHA256 : RC_MCAST_DIGEST_XXH64;
	m->run.timeout_ms = ctx->timeout_ms;
	if (m->plan)
		return 0;
	if ((rc = group_rendezvous_ready(ctx, "multicast", &m->grp)))
		return rc;
	return test_hook(ctx, m);
}
