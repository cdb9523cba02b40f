/* SPDX-License-Identifier: MIT */
/*
 * Multicast: one root pushes a blob (model weights) to every other rank of a
 * group, flat (the root writes to each), as a chain or as a tree of relays,
 * pipelined chunk by chunk. Chunks travel as one-sided writes with immediate
 * data into each receiver's ring of registered buffers; the immediate-data
 * counters say what landed, credits (empty writes with immediate data) give
 * ring slots back. Each receiver hashes what it got (XXH64, or SHA-256 on
 * request: rc_mcast_digest) and reports to the root.
 */
#ifndef RDMACTL_MCAST_H
#define RDMACTL_MCAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmactl/err.h>
#include <rdmactl/export.h>
#include <rdmactl/group.h>
#include <rdmactl/mem.h>
#include <rdmactl/sha256.h>

enum rc_mcast_algo { RC_MCAST_FLAT, RC_MCAST_CHAIN, RC_MCAST_TREE };
RC_EXPORT const char *rc_mcast_algo_name(enum rc_mcast_algo a);

/* The digest each rank takes of its copy, for the root to compare: an
 * integrity check against a copy that went wrong, not against a receiver that
 * lies (one can report any digest). XXH64 is several times faster than SHA-256,
 * which held every rank to its hashing rate; SHA-256 gives what sha256sum
 * prints. The values are the hello's: an rdmactl from before XXH64 says 0. */
enum rc_mcast_digest { RC_MCAST_DIGEST_SHA256 = 0, RC_MCAST_DIGEST_XXH64 = 1 };
#define RC_MCAST_DIGEST_MAX 32 /* bytes: the longest digest (SHA-256) */
/* "sha256" or "xxh64". */
RC_EXPORT const char *rc_mcast_digest_name(enum rc_mcast_digest d);
/* Bytes of its digest: 32 or 8. */
RC_EXPORT int rc_mcast_digest_len(enum rc_mcast_digest d);
/* The digest as lowercase hex (64 or 16 digits, as sha256sum and xxhsum
 * print it) and a NUL. */
RC_EXPORT void rc_mcast_digest_hex(enum rc_mcast_digest d, const uint8_t *digest,
				   char hex[2 * RC_MCAST_DIGEST_MAX + 1]);

#define RC_MCAST_BLOCKS_MAX 100 /* blocks whose usable times a receiver reports */
#define RC_MCAST_WHY_MAX 440

/* The relay tree. Ranks are placed from the root on (position p of rank r
 * is (r - root) mod world); position p > 0 hangs below (p - 1) / k, where k
 * is world - 1 for flat, 1 for a chain and the fanout for a tree. */
struct rc_mcast_shape {
	enum rc_mcast_algo algo;
	int world;
	int root;
	int fanout; /* tree only */
};
/* Hops from the root to its farthest receiver (0 for a world of one). */
RC_EXPORT int rc_mcast_depth(const struct rc_mcast_shape *s);
/* The most children any rank writes to. */
RC_EXPORT int rc_mcast_width(const struct rc_mcast_shape *s);
/* Which ranks connect: the tree's edges, and the root to everyone (the
 * reports go straight to the root, past a relay that died). */
RC_EXPORT void rc_mcast_need(const struct rc_mcast_shape *s, uint8_t *need);
/* Bytes of a ring of ring chunks: what every rank registers, the root's
 * (host memory) as each receiver's (--mem). */
RC_EXPORT uint64_t rc_mcast_ring_bytes(int ring, uint32_t chunk);
/* The group's receives per connection (rc_group_join's recv_depth) for
 * rings of ring chunks. */
RC_EXPORT int rc_mcast_recv_depth(int ring);
/* The chunk the root picks when none was given (opts.chunk 0): a power of
 * two from RC_MCAST_CHUNK_MIN to RC_MCAST_CHUNK_MAX, the blob cut into 16
 * chunks and 8 more for each hop below the first, so that the reading and
 * hashing at either end of the pipeline are a sixteenth of the blob and
 * filling a deep tree's pipeline costs about an eighth. The ring's depth is
 * left as given: 16 chunks of the smallest are 4 MiB in flight, more than
 * any link's bandwidth-delay product. */
#define RC_MCAST_CHUNK_MIN (256u << 10)
#define RC_MCAST_CHUNK_MAX (2u << 20)
/* The largest chunk a rank takes (--chunk's limit; a root's hello past it
 * is refused). */
#define RC_MCAST_CHUNK_LIMIT (1u << 30)
#define RC_MCAST_RING_LIMIT (64ull << 30)        /* bytes of one ring, likewise */
#define RC_MCAST_MAX_RING_DEFAULT (256ull << 20) /* rc_mcast_opts.max_ring's */
RC_EXPORT uint32_t rc_mcast_auto_chunk(const struct rc_mcast_shape *s, uint64_t size);

struct rc_mcast_opts {
	struct rc_mcast_shape shape;
	uint64_t size;  /* the root's: bytes of the blob (receivers learn it) */
	uint32_t chunk; /* bytes per write; 0: the root's rc_mcast_auto_chunk */
	int ring;       /* chunks in each receive ring */
	/* Receivers: the most bytes of one ring (ring chunks of the root's
	 * chunk) this rank lets a root ask for; a hello past it is refused.
	 * 0: RC_MCAST_MAX_RING_DEFAULT. */
	uint64_t max_ring;
	struct rc_mem_spec mem; /* receivers' ring memory (len is set here) */
	/* Root: the blob's bytes at off (len of them); 0 or -errno. Called in
	 * order, from a reader thread of the run's own (one a rail). */
	int (*read)(void *arg, uint64_t off, void *buf, size_t len, struct rc_err *err);
	/* Receivers: each chunk in order once it landed (e.g. into --out). */
	int (*consume)(void *arg, uint64_t off, const void *buf, size_t len, struct rc_err *err);
	void *arg;
	const uint64_t *block_ends; /* cumulative ends of the blocks, ascending */
	int nblocks;
	double link_bw;              /* bytes/s for the ideal; 0: the root measures it */
	int timeout_ms;              /* the longest any wait sees no progress */
	enum rc_mcast_digest digest; /* every rank the root's (the hello checks it) */
	/* A test hook (rdmactl's hidden RDMACTL_TEST_CORRUPT_BYTE): a receiver
	 * flips the byte at corrupt_at in its own copy (hashed and consumed),
	 * not in what it forwards. */
	bool corrupt;
	uint64_t corrupt_at;
};

/* What one receiver reports (the root's array: one per rank). */
struct rc_mcast_recv {
	int rank;
	bool reported; /* its report reached the root */
	bool ok;       /* whole blob, and its digest equals the root's (the
	                           * root's verdict; in self, the receiver's own once
	                           * the root's digest came) */
	bool complete; /* it says it got every chunk */
	uint64_t bytes;
	double first_ms; /* since the start barrier, on its own clock */
	double last_ms;
	uint8_t digest[RC_MCAST_DIGEST_MAX]; /* of its copy, as opts.digest (zeros past its length) */
	int nblocks;
	double block_ms[RC_MCAST_BLOCKS_MAX];
	int children_lost;          /* children it had to drop */
	char device[32];            /* the RDMA device it received on */
	char why[RC_MCAST_WHY_MAX]; /* what went wrong, when not ok */
};

struct rc_mcast_result {
	uint64_t size;
	uint32_t chunk; /* bytes per write, as the root gave or picked it */
	uint32_t chunks;
	uint8_t digest[RC_MCAST_DIGEST_MAX]; /* the root's: of what it sent */
	double link_bw;                      /* bytes/s, given or measured */
	int depth;
	int width;
	double ideal_s;             /* width * size / bw + (depth - 1) * width * chunk / bw */
	double seconds;             /* the last receiver's last chunk */
	int ok_count;               /* receivers with the whole blob */
	struct rc_mcast_recv *recv; /* caller's array of world entries (root fills it) */
	struct rc_mcast_recv self;  /* this rank's own (receivers) */
};

/* Run the multicast on a joined group whose plan was rc_mcast_need and
 * which keeps going past a failed peer (keep_going). Every rank calls it.
 * Returns 0 once the root has every report (look at ok_count), or -errno
 * when this rank could not take part; a receiver's own failure is in
 * res->self and does not fail the call. After the reports the root sends
 * its digest to every receiver, which judges its own copy: res->self.ok,
 * and when not, res->self.why (a digest that differs, or one that never
 * came). */
RC_EXPORT int rc_mcast_run(struct rc_group *g, const struct rc_mcast_opts *o,
			   struct rc_mcast_result *res, struct rc_err *err);

/* A rank on n rails: over g[i] (a group joined on each rail, the same ranks
 * and shape in each), slice i of the blob, bytes [size * i / n, size * (i +
 * 1) / n) (the root's size, told to the receivers over g[0] first), the
 * rails at once, one thread each. Each rail's res[i] is as rc_mcast_run
 * gives it for its slice (res[i].recv: the caller's, world entries, on the
 * root): its size, digest of its slice, reports. The callbacks get the
 * blob's own offsets (o->read and o->consume are called from every rail's
 * thread, at offsets that never overlap). No blocks (nblocks 0: EINVAL).
 * The first rail that fails this rank fails the call, its error prefixed
 * "rail I (DEV): ". n 1: rc_mcast_run. */
RC_EXPORT int rc_mcast_run_rails(struct rc_group *const *g, int n, const struct rc_mcast_opts *o,
				 struct rc_mcast_result *res, struct rc_err *err);

#endif
