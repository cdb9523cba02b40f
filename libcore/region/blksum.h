/* SPDX-License-Identifier: MIT */
/* A region's digest per block (RC_MIG_BLOCK): what a live move verifies
 * with, outside its blackout (rdmactl-migrate(8)). The destination copies
 * each block aside as its pulls land (a later pull of the block copies over
 * the older copy) and digests the copies after the cutover; the source
 * digests its frozen copy when asked. Each side answers the digest of a
 * range of blocks, and the orchestrator compares. Used by srv_mig.c; no
 * locking (one worker thread runs every request). */
#ifndef RDMACTL_BLKSUM_H
#define RDMACTL_BLKSUM_H

#include <stdbool.h>
#include <stdint.h>

#include <rdmactl/sha256.h>

struct blk_stash;

struct blk_sums {
	uint64_t len; /* the region's bytes */
	uint64_t nblocks;
	unsigned char (*sum)[RC_SHA256_LEN]; /* zero: never digested */
	uint8_t *have;                       /* sum[b] is set */
	uint32_t tag;                        /* whose sums these are (a move), 0: none */
	struct blk_stash **aside;            /* per block: its latest copy aside, or NULL */
	uint64_t nstash;                     /* blocks aside */
};

/* Empty sums of a region of len bytes for tag; 0 or -ENOMEM. */
int blk_sums_reset(struct blk_sums *s, uint64_t len, uint32_t tag);
void blk_sums_free(struct blk_sums *s);
/* Digest, from mem (the region's memory), every block [off, off+len) touches. */
void blk_sums_update(struct blk_sums *s, const unsigned char *mem, uint64_t off, uint64_t len);
/* The same blocks copied aside now (over an older copy of the block) and
 * digested at blk_sums_settle; past 1024 blocks aside, or out of memory,
 * a block is digested now. */
void blk_sums_stash(struct blk_sums *s, const unsigned char *mem, uint64_t off, uint64_t len);
/* Digest every block aside, and let the copies go. */
void blk_sums_settle(struct blk_sums *s);
/* Digest from mem the blocks of [off, off+len) that have none yet. */
void blk_sums_fill(struct blk_sums *s, const unsigned char *mem, uint64_t off, uint64_t len);
/* Whether [off, off+len) is whole blocks of the region (the last may be short). */
bool blk_sums_aligned(uint64_t region_len, uint64_t off, uint64_t len);
/* The digest of the blocks of [off, off+len) (aligned): the sha256 of
 * their digests in order, or the one block's own digest when it is one. */
void blk_sums_digest(const struct blk_sums *s, uint64_t off, uint64_t len,
		     unsigned char out[RC_SHA256_LEN]);

#endif
