// SPDX-License-Identifier: MIT
/* The per-block digests a live move verifies with (libcore/region/blksum.c):
 * a block's digest is its sha256, a range's the sha256 of its blocks'; a
 * block never digested differs from any real one; a block copied aside
 * keeps the bytes of that moment (a later write to the memory does not
 * change it), a later copy of it replaces the older one, and past 1024
 * blocks aside a block is digested at once; a missed write shows in
 * exactly its block. */
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ctrl.h>
#include <rdmactl/sha256_core.h>

#include "blksum.h"
#include "check.h"

#define B RC_MIG_BLOCK
#define LEN (4 * B + 100) /* five blocks, the last short */

static void sha(const void *p, size_t n, unsigned char out[RC_SHA256_LEN])
{
	struct rc_sha256 h;

	rc_sha256_init(&h);
	rc_sha256_update(&h, p, n);
	rc_sha256_final(&h, out);
}

/* 1024 blocks aside at most: the next ones are digested as they come, and
 * a block aside already takes a newer copy without a new place. */
static void stash_cap(void)
{
	uint64_t len = 1026ull * B;
	unsigned char *m = calloc(1, len), d[32], want[32];
	struct blk_sums s = { 0 };

	CHECK(m && blk_sums_reset(&s, len, 1) == 0);
	m[1025ull * B] = 1;
	blk_sums_stash(&s, m, 0, len);
	CHECK(s.nstash == 1024 && !s.have[1023] && s.have[1024] && s.have[1025]);
	blk_sums_digest(&s, 1025ull * B, B, d);
	sha(m + 1025ull * B, B, want);
	CHECK(!memcmp(d, want, 32));
	blk_sums_stash(&s, m, 0, B);
	CHECK(s.nstash == 1024);
	blk_sums_settle(&s);
	CHECK(s.nstash == 0 && s.have[0] && s.have[1023]);
	blk_sums_free(&s);
	free(m);
}

int main(void)
{
	unsigned char *a = malloc(LEN), *b = malloc(LEN), d1[32], d2[32], want[32], cat[5][32];
	struct blk_sums src = { 0 }, dst = { 0 };

	CHECK(a && b);
	for (size_t i = 0; i < LEN; i++)
		a[i] = (unsigned char)(i * 7 + 3);
	memcpy(b, a, LEN);
	CHECK(blk_sums_aligned(LEN, 0, LEN) && blk_sums_aligned(LEN, 4 * B, 100));
	CHECK(!blk_sums_aligned(LEN, 1, B) && !blk_sums_aligned(LEN, 0, B + 1) &&
	      !blk_sums_aligned(LEN, 0, 0) && !blk_sums_aligned(LEN, 0, LEN + 1));
	CHECK(blk_sums_reset(&src, LEN, 7) == 0 && src.nblocks == 5 && src.tag == 7);
	CHECK(blk_sums_reset(&dst, LEN, 1) == 0);
	/* One block: its own sha256 (the short last one too). */
	blk_sums_fill(&src, a, 0, LEN);
	blk_sums_digest(&src, B, B, d1);
	sha(a + B, B, want);
	CHECK(!memcmp(d1, want, 32));
	blk_sums_digest(&src, 4 * B, 100, d1);
	sha(a + 4 * B, 100, want);
	CHECK(!memcmp(d1, want, 32));
	/* A range: the sha256 of its blocks' digests in order. */
	for (int i = 0; i < 5; i++)
		sha(a + i * B, i == 4 ? 100 : B, cat[i]);
	sha(cat, sizeof(cat), want);
	blk_sums_digest(&src, 0, LEN, d1);
	CHECK(!memcmp(d1, want, 32));
	/* Nothing pulled yet: it differs. */
	blk_sums_digest(&dst, 0, LEN, d2);
	CHECK(memcmp(d1, d2, 32) != 0);
	/* Pulled whole, then block 2 again aside (the final copy), after which
	 * the memory changes (a client of the new home writes): the stash
	 * still holds what landed, so the digests agree. */
	blk_sums_update(&dst, b, 0, LEN);
	blk_sums_stash(&dst, b, 2 * B + 10, 20);
	CHECK(dst.nstash == 1);
	memset(b + 2 * B, 0xee, B);
	blk_sums_settle(&dst);
	CHECK(dst.nstash == 0);
	blk_sums_digest(&dst, 0, LEN, d2);
	CHECK(!memcmp(d1, d2, 32));
	/* A write the source took after block 3 was pulled, never re-pulled:
	 * the whole range differs, and of the blocks only block 3. */
	a[3 * B + 5] ^= 1;
	CHECK(blk_sums_reset(&src, LEN, 8) == 0);
	blk_sums_fill(&src, a, 0, LEN);
	blk_sums_digest(&src, 0, LEN, d1);
	CHECK(memcmp(d1, d2, 32) != 0);
	for (uint64_t i = 0; i < 5; i++) {
		blk_sums_digest(&src, i * B, i == 4 ? 100 : B, d1);
		blk_sums_digest(&dst, i * B, i == 4 ? 100 : B, d2);
		CHECK((memcmp(d1, d2, 32) != 0) == (i == 3));
	}
	/* A later copy of a block aside replaces the older one. */
	blk_sums_stash(&dst, b, 0, 1);
	b[1] ^= 0x33;
	blk_sums_stash(&dst, b, 0, B);
	CHECK(dst.nstash == 1);
	blk_sums_settle(&dst);
	blk_sums_digest(&dst, 0, B, d2);
	sha(b, B, want);
	CHECK(!memcmp(d2, want, 32));
	/* A later pull of a block wins over an older copy aside. */
	blk_sums_stash(&dst, b, 0, 1);
	b[0] ^= 0x55;
	blk_sums_update(&dst, b, 0, 1);
	blk_sums_settle(&dst);
	blk_sums_digest(&dst, 0, B, d2);
	sha(b, B, want);
	CHECK(!memcmp(d2, want, 32));
	blk_sums_free(&src);
	blk_sums_free(&dst);
	free(a);
	free(b);
	stash_cap();
	CHECK_DONE();
}
