/* SPDX-License-Identifier: MIT */
/* Inside the region server's migration side: each region's migration state,
 * the writes announced, the PULL and HASH jobs and their worker, between
 * srv_mig.c (the entry, the state's life), srv_mig_step.c (the steps of a
 * move, checked against the region's state) and srv_mig_job.c (PULL and
 * HASH on the worker thread). */
#ifndef RDMACTL_SRV_MIG_INT_H
#define RDMACTL_SRV_MIG_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdmactl/client.h>
#include <rdmactl/sha256.h>
#include <rdmactl/ctrl_core.h>
#include <rdmactl/sha256_core.h>

#include "blksum.h"
#include "srv_mig.h"

#define MAX_OPEN 256
#define MAX_JOBS 32 /* PULL and HASH requests queued for the worker */

enum mig_state { MS_SERVING, MS_TRACKING, MS_FENCED, MS_CUT_OVER, MS_DROPPED };

/* What each state is called in a refusal. */
extern const char *const mig_state_name[];

/* A region's migration: what was written since the last TAKE. */
struct mig_region {
	enum mig_state state;
	uint32_t move;     /* the move that owns it (tracking to cut over), else 0 */
	const void *owner; /* that move's connection */
	struct ibv_mr *ro; /* registered at TRACK, read-only: the fence's */
	uint64_t nblocks;
	uint8_t *dirty; /* one byte a block: simple, and regions are few */
	int busy;       /* PULL and HASH requests queued or running on it */
	/* Digests per block, for a verification outside the blackout (the
	 * worker's only): of what was pulled into it here (a destination),
	 * and of its frozen copy (a source, fenced or cut over). */
	struct blk_sums pulled, frozen;
	char moved_to[RC_MIG_MSG_LEN];
};

/* A write or atomics a client announced and has not completed yet. */
struct open_write {
	const void *conn;
	int region;
	uint64_t off, len;
};

/* A PULL or HASH for the worker: everything it needs, taken on the event
 * loop when the request was checked. */
struct job {
	const void *conn; /* NULL: its connection is gone, no answer */
	int slot;
	uint32_t seq;
	uint32_t type; /* RC_CTRL_PULL_REQ or RC_CTRL_HASH_REQ */
	int region;
	uint32_t flags;
	uint32_t n;
	struct rc_extent ext[RC_PULL_MAX_EXT > RC_HASH_MAX_EXT ? RC_PULL_MAX_EXT : RC_HASH_MAX_EXT];
	/* PULL */
	struct rc_target src;
	char token[RC_MIG_TOKEN_LEN];
	uint32_t rkey;
	uint64_t local;
	uint32_t lkey;
	uint64_t dst_len;
	unsigned char *mbuf; /* the destination's memory (NULL: not host memory) */
	/* HASH */
	const unsigned char *buf;
	uint32_t move; /* RC_HASH_BLOCKS at the source: the move frozen */
	/* The answer */
	struct rc_mig_resp resp;
};

struct srv_mig {
	struct mig_region reg[RC_MAX_REGIONS];
	struct open_write open[MAX_OPEN];
	int nopen;
	/* The pull connection (FIRST to LAST) and the hash (FIRST to LAST):
	 * one of each per server, owned by the connection that started it;
	 * the worker uses them, the loop only while no job runs. */
	struct rc_client *src;
	const void *pull_owner;
	int pull_region;
	bool src_close; /* its owner went while a job ran: close it after */
	struct rc_sha256 sha;
	uint64_t hashed;
	const void *hash_owner;
	int hash_region;
	bool hash_at_dst;
	/* The queue: jobs[head..head+njobs), jobs[head] runs when running. */
	struct job *jobs[MAX_JOBS];
	int head, njobs;
	bool running;
	/* The worker */
	struct ibv_pd *pd;
	const char *bind_addr, *dev_name;
	const char *admin_token; /* the server's own, for the pull (NULL: none) */
	pthread_t th;
	bool th_up, quit;
	struct job *todo, *done;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int efd;
};

static inline bool moving(const struct mig_region *m)
{
	return m->state == MS_TRACKING || m->state == MS_FENCED;
}

static inline bool gone(const struct mig_region *m)
{
	return m->state == MS_CUT_OVER || m->state == MS_DROPPED;
}

/* The states of a mask (owned). */
#define IN(s) (1u << (s))

/* srv_mig_step.c: the region's state and the steps of a move. */

/* Not moving any more: the read-only registration made for a fence goes. */
void mig_unready(struct mig_region *m);
/* Record [off, off+len) written, while the region is being moved. */
void mig_mark(struct mig_region *m, uint64_t off, uint64_t len);
/* Served here again, as before the move. */
void mig_serve_again(struct mig_region *m);
/* The index of the region named name, or -1. */
int mig_region_index(const struct srv_mig_host *h, const char *name);
/* Swap the region's MR for one that allows access acc (a new rkey). */
int mig_reregister(const struct srv_mig_host *h, struct rc_region *r, enum rc_access acc,
		   struct rc_err *err);
/* A cut over or dropped region is a destination again: memory (when it
 * was released) and a registration of its access. */
int mig_revive(const struct srv_mig_host *h, struct mig_region *m, struct rc_region *r,
	       struct rc_err *err);
/* The state a step of move c->move needs: the move owns the region, and it
 * is in one of the states of mask. */
int mig_owned(const struct mig_region *m, const struct rc_mig_cmd *c, unsigned mask,
	      struct rc_err *err);
/* TAKE's answer into out: the blocks written since the last TAKE, as
 * extents (RC_MIG_LAST when they all fit), and they count as clean again. */
int mig_take(struct mig_region *m, void *out, size_t cap, uint32_t seq);
/* Run step c (not TAKE) into resp: 0 or -errno with err set. */
int mig_run_step(struct srv_mig *st, const struct srv_mig_host *h, const void *conn, bool admin,
		 const struct rc_mig_cmd *c, struct rc_mig_resp *resp, struct rc_err *err);

/* srv_mig_job.c: PULL and HASH, checked here and run on the worker. */

/* The worker thread's body (arg: the state). */
void *mig_worker(void *arg);
/* The PULL or HASH request msg (header hdr) that came in slot of conn:
 * checked and queued for the worker (SRV_MIG_LATER), or -errno with err
 * set. */
int mig_job_request(struct srv_mig *st, const struct srv_mig_host *h, const void *conn, bool admin,
		    int slot, const struct rc_ctrl_hdr *hdr, const void *msg, size_t len,
		    struct rc_err *err);

#endif
