/* SPDX-License-Identifier: MIT */
/* Inside the mcast layer: one rank's multicast state (mcast.c), its hello
 * (hello.c) and the reports (report.c). */
#ifndef RDMACTL_MCAST_INT_H
#define RDMACTL_MCAST_INT_H

#include <rdmactl/mcast.h>
#include <rdmactl/sha256_core.h>
#include <rdmactl/xxh64_core.h>
#include <rdmactl/mem_core.h>
#include <rdmactl/group_core.h>

#include <pthread.h>

#define CH_DATA 0
#define CH_CREDIT 1
#define CH_STOP 2
#define HELLO_MAGIC 0x6d637332u   /* "mcs2": the ring in a second exchange */
#define HELLO_MAGIC_1 0x6d636173u /* "mcas": an rdmactl before it */
#define POLL_MS 50
#define CALIBRATE_MAX (8u << 20)

struct hello {
	uint32_t magic;
	uint32_t algo;
	uint32_t fanout;
	uint32_t root;
	uint32_t chunk;
	uint32_t ring;
	uint64_t size;
	uint64_t addr; /* 0: the ring follows (ring_hello) */
	uint32_t rkey;
	uint32_t digest; /* enum rc_mcast_digest (an rdmactl before XXH64 sent 0) */
};

/* The second exchange: each rank's ring, registered once the root's hello
 * said the chunk (and so the ring's size). */
struct ring_hello {
	uint64_t addr;
	uint32_t rkey;
	uint32_t magic;
};

struct kid {
	int rank;
	uint64_t addr;
	uint32_t rkey;
	uint64_t base; /* writes to it before chunk 0 (calibration) */
	uint32_t sent;
	bool lost;
};

/* The root's feeder (feed.c): reads and hashes the blob into the ring. */
struct feed {
	pthread_t t;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool on, stop;
	uint32_t limit;  /* chunks it may fill: their slots are free */
	uint32_t filled; /* chunks read into the ring, in order */
	uint32_t hashed; /* of those, hashed */
	int rc;          /* a failed read: rc and err */
	struct rc_err err;
};

struct mc {
	struct rc_group *g;
	const struct rc_mcast_opts *o;
	struct rc_mcast_result *res;
	int me, parent, nkids;
	struct kid *kids; /* world of room */
	uint64_t paddr;
	uint32_t prkey;
	struct rc_mem mem;
	bool mem_on;
	struct ibv_mr *mr;
	uint64_t ring_addr; /* the ring as the NIC addresses it */
	uint8_t *stage;     /* a host copy of a chunk when the ring is GPU memory */
	uint8_t *flip;      /* the test hook's copy of the chunk it corrupts */
	uint64_t size;
	uint32_t chunk, n;
	int R;
	uint32_t have, consumed, credited;
	uint32_t hashed; /* the root: chunks its feeder hashed */
	struct feed feed;
	union {
		struct rc_sha256 sha;
		struct rc_xxh64 xxh;
	} dg; /* the digest of what this rank filled or consumed, as o->digest */
	double t0, last_progress;
	int blocks_done;
	bool stopped; /* this rank gave up: what is left is telling the children */
};

/* Chunk c's bytes, its ring slot's offset and the slot as the host reads it
 * (the root's ring is always host memory), and the digest of what this rank
 * filled or consumed, in order: mcast.c's and the feeder's (feed.c). */
static inline uint32_t mcast_chunk_len(const struct mc *m, uint32_t c)
{
	uint64_t off = (uint64_t)c * m->chunk;

	return (uint32_t)(m->size - off < m->chunk ? m->size - off : m->chunk);
}

static inline uint64_t mcast_slot_off(const struct mc *m, uint32_t c)
{
	return (uint64_t)(c % (uint32_t)m->R) * m->chunk;
}

static inline uint8_t *mcast_slot_host(const struct mc *m, uint32_t c)
{
	return (uint8_t *)m->mem.buf + mcast_slot_off(m, c);
}

static inline void mcast_digest_update(struct mc *m, const void *p, size_t len)
{
	if (m->o->digest == RC_MCAST_DIGEST_XXH64)
		rc_xxh64_update(&m->dg.xxh, p, len);
	else
		rc_sha256_update(&m->dg.sha, p, len);
}

/* feed.c: the root's feeder started, stopped (it may have failed: stop
 * joins it either way), told it may fill chunks below limit (their slots
 * free) and asked how far it got (have and hashed; its read's error, if
 * any; *moved when either grew), whether it is at work, and a wait of up
 * to ms for it. */
int mcast_feed_start(struct mc *m, struct rc_err *err);
void mcast_feed_stop(struct mc *m);
int mcast_feed_sync(struct mc *m, uint32_t limit, bool *moved, struct rc_err *err);
bool mcast_feed_busy(struct mc *m);
void mcast_feed_wait(struct mc *m, int ms);

/* hello.c: the root's options, chunk and blob size over every connection,
 * each rank checking that the hellos it got agree with the root's and
 * taking the root's chunk when it was given none (m->chunk 0) ... */
int mcast_say_hello(struct mc *m, struct rc_err *err);
/* ... then, once this rank's ring is registered, everyone's ring. */
int mcast_say_ring(struct mc *m, struct rc_err *err);

/* Gather every receiver's res->self at the root; the root fills res->recv,
 * ok_count and seconds, judging each against its own size and digest. */
int mcast_reports(struct rc_group *g, const struct rc_mcast_opts *o, struct rc_mcast_result *res,
		  uint64_t size, struct rc_err *err);

#endif
