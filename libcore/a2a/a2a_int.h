/* SPDX-License-Identifier: MIT */
/* Inside the all-to-all: buffers and layouts shared by the algorithms. */
#ifndef RDMACTL_A2A_INT_H
#define RDMACTL_A2A_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <rdmactl/a2a.h>
#include <rdmactl/mem_core.h>

enum { PH_DISPATCH = 0, PH_COMBINE = 1 };
enum { CH_DISPATCH = 0, CH_COMBINE = 1 };

/* Where a peer's receive buffers are, as exchanged after connecting. */
struct a2a_remote {
	uint64_t drecv[2];
	uint64_t crecv[2];
	uint64_t stage;    /* ring: staging of forwarded blocks */
	uint64_t shm;      /* hierarchical: the node's shared segment ... */
	uint64_t rkey;     /* the token buffers' (64 bits over libfabric) */
	uint32_t shm_rkey; /* ... and its key */
};

struct a2a {
	struct rc_group *g;
	const struct rc_a2a_opts *o;
	int W;
	int me;
	size_t tb; /* token bytes */
	/* token offsets: dispatch send/combine receive by destination, dispatch
	 * receive/combine send by source */
	uint64_t *soff;      /* W + 1 */
	uint64_t *roff;      /* W + 1 */
	struct rc_mem m;     /* the token buffers */
	uint8_t *mem;        /* the CPU's view: m.buf, or for GPU memory its host copy */
	uint64_t wire_delta; /* added to a pointer into mem: the address the NIC uses */
	size_t mem_len;
	struct ibv_mr *mr; /* over verbs; over libfabric, fmr (rc_group_reg) */
	void *fmr;
	uint32_t lkey;   /* the token buffers', on either */
	uint64_t rdelta; /* added to a wire address: the address a peer writes to */
	uint8_t *dsend, *drecv[2], *csend, *crecv[2];
	uint8_t *stage;
	int L;        /* hierarchical: ranks per node */
	uint8_t *shm; /* the node's shared segment */
	size_t shm_len;
	size_t *shm_off; /* per rank, in its node's segment: drecv0, drecv1, crecv0, crecv1 */
	/* W each: the tokens every rank sends (its row of counts) and receives
	 * (its column), a2a_line_sums */
	uint64_t *sends, *recvs;
	struct ibv_mr *shm_mr;
	struct a2a_remote mine;    /* what the peers are told */
	struct a2a_remote *remote; /* W */
	uint8_t *scratch;          /* one token */
	int *wait_peers;           /* W: the peers a phase waits for ... */
	uint64_t *wait_target;     /* W: ... and the counts it waits for */
	/* One slice of several (o->counts is this slice's): every rank's whole
	 * counts, and which slice, for the tokens' indices in their blocks. */
	const uint64_t *whole;
	int slice, slices;
	struct a2a_sync *sync; /* the rails of this rank start each iteration together */
};

/* a2a_sync.c: the rails of one rank meet before each iteration's clock
 * starts, so that one rail's untimed work (filling, checking) never runs
 * inside another's timed exchange. A rail that fails releases the others:
 * 0, or -ECANCELED (err says which rail) once one has failed. Its wait
 * has no clock of its own: every rail it waits for is itself in a wait
 * bounded by the group's timeout, and one that fails releases it. */
struct a2a_sync {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int n;          /* rails */
	int arrived;    /* at this round */
	uint64_t round; /* rounds completed */
	int failed;     /* the first rail that failed, -1: none */
};
int a2a_sync_wait(struct a2a_sync *s, struct rc_err *err);
/* This rail failed: the others stop waiting for it. */
void a2a_sync_fail(struct a2a_sync *s, int rail);
/* One rail's exchange (a2a.c), with the rails' meeting point (NULL: one
 * rail alone); rc_a2a_run and rc_a2a_run_rails (a2a_rails.c) call it. */
int a2a_run_sync(struct rc_group *g, const struct rc_a2a_opts *o, struct a2a_sync *sync,
		 struct rc_a2a_result *res, struct rc_err *err);

/* Index in the whole block src sends dst of this slice's first token. */
static inline uint64_t a2a_token_base(const struct a2a *a, int src, int dst)
{
	return a->whole ? a->whole[(size_t)src * (size_t)a->W + (size_t)dst] * (uint64_t)a->slice /
				  (uint64_t)a->slices
			: 0;
}

/* The token buffers are GPU memory. */
static inline bool a2a_gpu(const struct a2a *a)
{
	return a->m.kind == RC_MEM_CUDA;
}

/* What the NIC is given for p, a pointer into the CPU's view (mem). */
static inline void *a2a_wire(const struct a2a *a, const void *p)
{
	return (void *)((uintptr_t)p + a->wire_delta);
}

/* a2a_buf.c: the token buffers, their copies and offsets. */
/* len bytes of host memory from into the token buffers at to (the CPU's
 * view): a copy, or for GPU memory a copy to the GPU (rc_mem_write). */
int a2a_copy_in(struct a2a *a, uint8_t *to, const void *from, size_t len, struct rc_err *err);
/* len bytes of the token buffers at from (the CPU's view) into host memory
 * at to: a copy, or for GPU memory a copy from the GPU (rc_mem_read). */
int a2a_copy_out(struct a2a *a, void *to, const uint8_t *from, size_t len, struct rc_err *err);

/* Offset (tokens) of src's block in dst's receive layout. */
uint64_t a2a_recv_off(const struct a2a *a, int dst, int src);
uint64_t a2a_send_off(const struct a2a *a, int src, int dst);

/* One phase (PH_DISPATCH, PH_COMBINE) of iteration iter, by algorithm. */
int a2a_flat_phase(struct a2a *a, uint32_t iter, int ph, struct rc_err *err);
int a2a_ring_phase(struct a2a *a, uint32_t iter, int ph, struct rc_err *err);
/* Tokens of every rank's ring staging, both phases and parities, into
 * st[W]: 0 or -ENOMEM. */
int a2a_stage_tokens_all(const struct a2a *a, uint64_t *st);
/* a->sends and a->recvs, in one pass over counts in memory order (a
 * column at a time strides W * 8 bytes a step); 0 or -ENOMEM. */
int a2a_line_sums(struct a2a *a);
/* Hierarchical: bytes of rank x's node's shared segment (each of its
 * ranks registers it; needs a2a_line_sums); the segment. */
size_t a2a_hier_shm_bytes(const struct a2a *a, int x);
int a2a_hier_setup(struct a2a *a, struct rc_err *err);
void a2a_hier_teardown(struct a2a *a);
int a2a_hier_phase(struct a2a *a, uint32_t iter, int ph, struct rc_err *err);

/* a2a_bg.c: the background (rc_a2a_opts.bg): its buffer registered on the
 * background's group and the peer's learnt (every rank of that group
 * calls setup), the thread that writes into the peer from start to stop
 * (a rank without a peer starts none), what it wrote. */
struct a2a_bg {
	struct rc_group *g;
	const struct rc_a2a_opts *o;
	int peer;
	void *buf;
	struct ibv_mr *mr;
	uint64_t raddr;
	uint32_t rkey;
	pthread_t thread;
	bool running;
	atomic_bool stop;
	int rc; /* the thread's, with err */
	struct rc_err err;
	uint64_t bytes;
	double seconds;
};
int a2a_bg_setup(struct a2a_bg *b, const struct rc_a2a_opts *o, struct rc_err *err);
int a2a_bg_start(struct a2a_bg *b, struct rc_err *err);
/* The thread stopped; its failure, if it failed. */
int a2a_bg_stop(struct a2a_bg *b, struct rc_err *err);
void a2a_bg_free(struct a2a_bg *b);

#endif
