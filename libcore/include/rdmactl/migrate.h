/* SPDX-License-Identifier: MIT */
/* Moving a served region's bytes to another region server: the destination
 * pulls them with RDMA READ, each side hashes what it holds. */
#ifndef RDMACTL_MIGRATE_H
#define RDMACTL_MIGRATE_H

#include <rdmactl/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmactl/client.h>
#include <rdmactl/ctrl.h>
#include <rdmactl/err.h>
#include <rdmactl/etcd.h>
#include <rdmactl/ops.h>
#include <rdmactl/parse.h>
#include <rdmactl/sha256.h>

#define RC_MIGRATE_MAX_ROUNDS 64

struct rc_migrate_opts {
	struct rc_target src; /* the region's server now (A) */
	struct rc_target dst; /* where it goes (B): same name, size, access */
	const char *token;    /* both servers' (B passes it on to A), or NULL */
	/* Both servers' admin token (register --admin-token-file): presented
	 * instead of token when connecting to them, for the migration steps. */
	const char *admin_token;
	const char *dev_name;        /* connect through this device only, or NULL */
	int timeout_ms;              /* connecting, and each answer but a pull's */
	const struct rc_extent *ext; /* the blocks: src offset, dst offset, length */
	size_t n;                    /* 0: the whole region, one extent */
	/* Live: the etcd (HOST:PORT) where `register --publish` put the region
	 * under rdmactl/etcd_ns/region/REGION, or NULL. Its record must name
	 * the source and the destination must publish there too (its lease),
	 * or nothing moves. Right after the source took the cutover, one
	 * transaction on the key's mod revision as read at the start points it
	 * at the destination, under the destination's lease; if that fails the
	 * move stands (the source sends its clients on) and the error says so. */
	const char *etcd;
	const char *etcd_ns;
	/* Told how the move goes (NULL: not told), on the caller's thread: step
	 * "copy" with its round (from 1) and the bytes pulled of the round's
	 * bytes, after each answer of the destination; "hash", "fence" and
	 * "cutover" (round and bytes 0) as each begins. */
	void (*progress)(void *arg, const char *step, int round, uint64_t done, uint64_t total);
	void *progress_arg;
};

#define RC_MIGRATE_MAX_BAD 16

struct rc_migrate_result {
	char region[RC_NAME_MAX];
	uint64_t length; /* the region's */
	enum rc_access access;
	char src_peer[RC_HOST_MAX + 8];
	char dst_peer[RC_HOST_MAX + 8];
	int rounds;
	uint64_t bytes_per_round[RC_MIGRATE_MAX_ROUNDS];
	uint64_t blocks_per_round[RC_MIGRATE_MAX_ROUNDS];
	double blackout_ms; /* fence to the destination serving; < 0: no fence */
	double seconds;     /* the whole move, checks included */
	uint64_t bytes;     /* all rounds */
	unsigned char sha_src[RC_SHA256_LEN];
	unsigned char sha_dst[RC_SHA256_LEN];
	bool verified; /* the two digests are equal */
	/* Live, verified: the blocks whose digests differ (nbad of them, the
	 * first RC_MIGRATE_MAX_BAD named), each side's sha256 of the block. */
	int nbad;
	bool bad_more; /* the search stopped at RC_MIGRATE_MAX_BAD */
	struct rc_migrate_bad {
		uint64_t offset, length;
		unsigned char sha_src[RC_SHA256_LEN];
		unsigned char sha_dst[RC_SHA256_LEN];
	} bad[RC_MIGRATE_MAX_BAD];
	char etcd_key[RC_ETCD_KEY_MAX]; /* the key updated at the cutover, or "" */
	int64_t etcd_revision;          /* its mod revision before the cutover */
};

/* Check both ends (the region on each, same size and access, every extent
 * inside it) before anything moves, then have the destination pull the
 * extents and each side hash its own copy of them. A mismatch of the
 * digests is not an error: r->verified says it. The source is only read. */
RC_EXPORT int rc_migrate_blocks(const struct rc_migrate_opts *o, struct rc_migrate_result *r,
				struct rc_err *err);

/* A live move (rdmactl-migrate(8)): the source records the blocks its
 * rdmactl clients announce as written; the destination pulls the whole
 * region, then what was written meanwhile, round after round, until it is
 * at most dirty_bytes or max_rounds is reached; then the source fences the
 * region (writes and atomics fail with a remote access error, so they are
 * known not to have happened), the destination pulls the rest, the source
 * answers its clients with the new home (the cutover) and, unless
 * keep_source, releases its copy. Before the cutover any failure calls the
 * move off: the source serves the region again. verify: the destination
 * copies each block aside as it lands and digests the copies after the
 * cutover, the source its frozen copy; the two lists are compared, the
 * blocks that differ named (r->verified false, r->bad, the source keeps its
 * copy: no DROP), outside the blackout. */
struct rc_migrate_live {
	int max_rounds;       /* copy rounds, the final one included (default 8) */
	uint64_t dirty_bytes; /* fence once at most this much is left to copy */
	bool verify;
	bool keep_source;
	/* A test's hook: called right before the fence (NULL: none). */
	void (*before_fence)(void *arg);
	void *arg;
	/* A test's hook, a broken record of written blocks: the block at
	 * lose_block - 1 (a byte offset) is never copied again after the first
	 * round (0: none). */
	uint64_t lose_block;
};

RC_EXPORT int rc_migrate_live(const struct rc_migrate_opts *o, const struct rc_migrate_live *lo,
			      struct rc_migrate_result *r, struct rc_err *err);

#endif
