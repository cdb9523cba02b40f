// SPDX-License-Identifier: MIT
/* A region's digest per block: see blksum.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ctrl.h>
#include <rdmactl/sha256_core.h>

#include "blksum.h"

#define STASH_MAX 1024 /* blocks aside at most (64 MiB): past it, digest now */

struct blk_stash {
	size_t len;
	unsigned char data[];
};

static void stash_drop(struct blk_sums *s, uint64_t b)
{
	if (!s->aside || !s->aside[b])
		return;
	free(s->aside[b]);
	s->aside[b] = NULL;
	s->nstash--;
}

void blk_sums_free(struct blk_sums *s)
{
	for (uint64_t b = 0; s->aside && b < s->nblocks; b++)
		free(s->aside[b]);
	free(s->aside);
	free(s->sum);
	free(s->have);
	memset(s, 0, sizeof(*s));
}

int blk_sums_reset(struct blk_sums *s, uint64_t len, uint32_t tag)
{
	uint64_t n = (len + RC_MIG_BLOCK - 1) / RC_MIG_BLOCK;

	blk_sums_free(s);
	s->sum = calloc(n ? n : 1, RC_SHA256_LEN);
	s->have = calloc(n ? n : 1, 1);
	s->aside = calloc(n ? n : 1, sizeof(*s->aside));
	if (!s->sum || !s->have || !s->aside) {
		blk_sums_free(s);
		return -ENOMEM;
	}
	s->len = len;
	s->nblocks = n;
	s->tag = tag;
	return 0;
}

static size_t block_len(const struct blk_sums *s, uint64_t b)
{
	uint64_t off = b * RC_MIG_BLOCK;

	return (size_t)(s->len - off < RC_MIG_BLOCK ? s->len - off : RC_MIG_BLOCK);
}

static void digest_block(struct blk_sums *s, uint64_t b, const unsigned char *data)
{
	struct rc_sha256 h;

	rc_sha256_init(&h);
	rc_sha256_update(&h, data, block_len(s, b));
	rc_sha256_final(&h, s->sum[b]);
	s->have[b] = 1;
}

/* The blocks [*b0, *b1) that [off, off+len) touches; false: none. */
static bool span(const struct blk_sums *s, uint64_t off, uint64_t len, uint64_t *b0, uint64_t *b1)
{
	if (!len || off >= s->len)
		return false;
	if (len > s->len - off)
		len = s->len - off;
	*b0 = off / RC_MIG_BLOCK;
	*b1 = (off + len - 1) / RC_MIG_BLOCK + 1;
	return true;
}

void blk_sums_update(struct blk_sums *s, const unsigned char *mem, uint64_t off, uint64_t len)
{
	uint64_t b0, b1;

	if (!span(s, off, len, &b0, &b1))
		return;
	for (uint64_t b = b0; b < b1; b++) {
		stash_drop(s, b); /* an older copy aside must not win over this */
		digest_block(s, b, mem + b * RC_MIG_BLOCK);
	}
}

void blk_sums_stash(struct blk_sums *s, const unsigned char *mem, uint64_t off, uint64_t len)
{
	uint64_t b0, b1;

	if (!span(s, off, len, &b0, &b1))
		return;
	for (uint64_t b = b0; b < b1; b++) {
		size_t n = block_len(s, b);
		struct blk_stash *x = s->aside[b];

		if (!x && s->nstash < STASH_MAX && (x = malloc(sizeof(*x) + n))) {
			x->len = n;
			s->aside[b] = x;
			s->nstash++;
		}
		if (x)
			memcpy(x->data, mem + b * RC_MIG_BLOCK, n); /* a newer copy over an older */
		else
			digest_block(s, b, mem + b * RC_MIG_BLOCK); /* no room: now */
	}
}

void blk_sums_settle(struct blk_sums *s)
{
	for (uint64_t b = 0; s->nstash && b < s->nblocks; b++) {
		if (!s->aside[b])
			continue;
		digest_block(s, b, s->aside[b]->data);
		stash_drop(s, b);
	}
}

void blk_sums_fill(struct blk_sums *s, const unsigned char *mem, uint64_t off, uint64_t len)
{
	uint64_t b0, b1;

	if (!span(s, off, len, &b0, &b1))
		return;
	for (uint64_t b = b0; b < b1; b++)
		if (!s->have[b])
			digest_block(s, b, mem + b * RC_MIG_BLOCK);
}

bool blk_sums_aligned(uint64_t region_len, uint64_t off, uint64_t len)
{
	return len && off < region_len && len <= region_len - off && off % RC_MIG_BLOCK == 0 &&
	       (len % RC_MIG_BLOCK == 0 || off + len == region_len);
}

void blk_sums_digest(const struct blk_sums *s, uint64_t off, uint64_t len,
		     unsigned char out[RC_SHA256_LEN])
{
	struct rc_sha256 h;
	uint64_t b0, b1;

	memset(out, 0, RC_SHA256_LEN);
	if (!span(s, off, len, &b0, &b1))
		return;
	if (b1 - b0 == 1) {
		memcpy(out, s->sum[b0], RC_SHA256_LEN);
		return;
	}
	rc_sha256_init(&h);
	rc_sha256_update(&h, s->sum[b0], (size_t)(b1 - b0) * RC_SHA256_LEN);
	rc_sha256_final(&h, out);
}
