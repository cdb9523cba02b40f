/* SPDX-License-Identifier: MIT */
/* A region's digest per block (RC_MIG_BLOCK): what a live move verifies
 * with, outside its blackout (rdmactl-migrate(8)). The destination records
 * the sha256 of each block as its pulls land (the final copy's blocks are
 * copied aside and digested after the cutover); the source digests its
 * frozen copy when asked. Each side answers the digest of a range of
 * blocks, and the orchestrator compares. Used by srv_mig.c; no locking
 * (one worker thread runs every request). */
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
	struct blk_stash *head, *tail;       /* copied aside, to digest later, in order */
	uint64_t nstash;
};

/* Empty sums of a region of len bytes for tag; 0 or -ENOMEM. */
int blk_sums_reset(struct blk_sums *s, uint64_t len, uint32_t tag);
void blk_sums_free(struct blk_sums *s);
/* Digest, from mem (the region's memory), every block [off, off+len) touches. */
void blk_sums_update(struct blk_sums *s, const unsigned char *mem, uint64_t off, uint64_t len);
/* The same blocks copied aside now and digested at blk_sums_settle (or, past
 * 1024 blocks aside, digested now). 0 or -ENOMEM (then nothing changed). */
int blk_sums_stash(struct blk_sums *s, const unsigned char *mem, uint64_t off, uint64_t len);
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
