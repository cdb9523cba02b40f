/* SPDX-License-Identifier: MIT */
/*
 * MoE all-to-all over a group: a routing model says how many tokens each
 * rank sends each rank (dispatch); the same tokens come back (combine).
 * Token content is deterministic, so every received token is checked.
 */
#ifndef RDMACTL_A2A_H
#define RDMACTL_A2A_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmactl/dev.h>
#include <rdmactl/err.h>
#include <rdmactl/export.h>
#include <rdmactl/group.h>
#include <rdmactl/mem.h>

enum rc_a2a_algo { RC_A2A_FLAT, RC_A2A_RING, RC_A2A_HIER };
enum rc_a2a_dtype { RC_A2A_BF16, RC_A2A_FP8 };
enum rc_a2a_skew { RC_A2A_UNIFORM, RC_A2A_ZIPF, RC_A2A_MATRIX };

RC_EXPORT const char *rc_a2a_algo_name(enum rc_a2a_algo a);

/* Background traffic beside the exchange (--background): none, or pairs:
 * rank r writes bulk into rank r + world / 2 and that rank into r (an odd
 * world's last rank stays quiet). */
enum rc_a2a_bg_mode { RC_A2A_BG_NONE, RC_A2A_BG_PAIRS };
/* "none", "pairs"; NULL for another mode. */
RC_EXPORT const char *rc_a2a_bg_name(int mode);
/* The rank that rank writes its bulk into under mode, -1 for none. */
RC_EXPORT int rc_a2a_bg_peer(int mode, int world, int rank);

/* Bytes of one token on the wire: bf16 2 per element; fp8 1 per element
 * plus one float scale per 128 elements, as DeepEP's fp8 dispatch sends. */
RC_EXPORT size_t rc_a2a_token_bytes(uint32_t hidden, enum rc_a2a_dtype dt);

struct rc_a2a_route {
	int world;
	uint32_t tokens;  /* per rank */
	uint32_t experts; /* spread over the ranks in equal contiguous blocks */
	uint32_t topk;
	enum rc_a2a_skew skew;
	double zipf_s;      /* expert popularity ~ 1 / (e + 1)^s */
	const char *matrix; /* RC_A2A_MATRIX: CSV of world x world token counts */
	uint64_t seed;
};

/* Parse "uniform", "zipf:S" or "matrix:FILE" into r. */
RC_EXPORT int rc_a2a_skew_parse(const char *s, struct rc_a2a_route *r, struct rc_err *err);
/* counts[src * world + dst]: the tokens src dispatches to dst. A token goes
 * once to each rank holding at least one of its top-k experts. -EINVAL for
 * inconsistent parameters or a bad matrix file. */
RC_EXPORT int rc_a2a_counts(const struct rc_a2a_route *r, uint64_t *counts, struct rc_err *err);
/* The most bytes one rank sends or receives in one phase (1 TiB): every
 * buffer size below it is computed without overflow. */
#define RC_A2A_RANK_BYTES_MAX (1ULL << 40)
/* Whether each row (what a rank sends) and each column (what it receives)
 * of counts, in tokens of token_bytes, stays within RC_A2A_RANK_BYTES_MAX;
 * -EINVAL naming the first row or column that does not. */
RC_EXPORT int rc_a2a_counts_fit(const uint64_t *counts, int world, size_t token_bytes,
				struct rc_err *err);

/* Figures of one iteration from the counts. */
struct rc_a2a_stats {
	double size;        /* mean bytes a rank sends per iteration (dispatch + combine) */
	uint64_t peer_mean; /* mean bytes from one rank to another, dispatch */
	uint64_t peer_max;
	double imbalance; /* max / mean of the dispatch bytes a rank receives */
	uint64_t my_send; /* this rank's dispatch bytes to others */
	uint64_t my_recv; /* ... from others */
};
RC_EXPORT void rc_a2a_stats(const uint64_t *counts, int world, int rank, size_t token_bytes,
			    struct rc_a2a_stats *st);

/* Which ranks talk over RDMA: need[i * world + j]. ranks_per_node groups
 * ranks for the hierarchical algorithm (node = rank / ranks_per_node). */
RC_EXPORT void rc_a2a_need(enum rc_a2a_algo a, int world, int ranks_per_node, uint8_t *need);

struct rc_a2a_opts {
	enum rc_a2a_algo algo;
	uint32_t hidden;
	enum rc_a2a_dtype dtype;
	const uint64_t *counts; /* world x world */
	int ranks_per_node;     /* hierarchical */
	const char *job;        /* hierarchical: names the shared memory */
	int timeout_ms;         /* waits on shared memory (the group has its own) */
	int iters;
	int warmup;
	/* Token buffers: host (default), hugepage or GPU memory (.len and .path
	 * unused). The CPU fills and checks them; GPU memory through a host copy
	 * of the same size (rc_mem_write before each iteration, rc_mem_read of
	 * the receive buffers after it), and a rank's block to itself is
	 * written from that host copy. Hierarchical: the receive buffers are
	 * the node's host shared memory whatever the kind: blocks for the own
	 * node reach it from GPU memory through the host (rc_mem_read), staged,
	 * not direct; the rails write into it from GPU memory. */
	struct rc_mem_spec mem;
	bool check;
	/* Test hook (rdmactl reads it from RDMACTL_TEST_A2A_CORRUPT; no option):
	 * in iteration 0, rank corrupt.rank flips one byte of token corrupt.token
	 * of its send buffer of phase corrupt.phase (0 dispatch, by destination;
	 * 1 combine, by source) after filling it, so that one token arrives
	 * wrong. -EINVAL when that rank sends fewer tokens. */
	struct {
		bool on;
		int phase;
		int rank;
		uint64_t token;
	} corrupt;
	void (*progress)(void *arg, int done, int total);
	void *progress_arg;
	/* A rank on several rails (rc_a2a_run_rails): this run carries slice
	 * slice of slices of every block, tokens [n * slice / slices, n * (slice
	 * + 1) / slices) of a block of n (rc_a2a_slice_counts), with the same
	 * content as in a run of one slice. slices 0 or 1: the whole blocks.
	 * The corrupt hook counts tokens in this slice's buffers
	 * (rc_a2a_run_rails: rail 0's slice alone). */
	int slice;
	int slices;
	/* Background (one rail: rc_a2a_run): after the iterations idle, the
	 * same iterations again (warmup and iters) while a thread of this rank
	 * writes bulk into rc_a2a_bg_peer over bg, a group of its own (its own
	 * QPs on the same ports, each rank connected to its peer there),
	 * WRITEs of bg_size bytes, bg_depth outstanding; NULL: none. */
	struct rc_group *bg;
	int bg_mode;
	uint32_t bg_size;
	int bg_depth;
};

struct rc_a2a_result {
	double *lat_us;   /* caller's array of iters entries */
	uint64_t wrong;   /* tokens that differed, all iterations, this rank */
	uint64_t checked; /* tokens checked */
	uint64_t checked_bytes;
	double seconds;      /* timed iterations together */
	enum rc_mem_reg reg; /* how the token buffers were registered (GPU: the path that ran) */
	char reg_notes[384]; /* GPU: the paths tried before it, and why they failed */
	/* NULL, or the caller's: each timed iteration's dispatch and combine
	 * apart, iters entries, twice that with a background (the loaded
	 * iterations after the idle ones); lat_us and seconds: the idle ones. */
	double *disp_us, *comb_us;
	uint64_t bg_bytes; /* the background's bulk written by this rank ... */
	double bg_seconds; /* ... in this time */
	/* With a background: this rank's port (bg_dev, bg_port: the exchange's)
	 * and its congestion counters' moves over the idle pass and over the
	 * loaded one (rc_cong_moved: present, the kinds it has) */
	char bg_dev[64];
	int bg_port;
	struct rc_cong bg_cong_idle, bg_cong_loaded;
};

RC_EXPORT int rc_a2a_run(struct rc_group *g, const struct rc_a2a_opts *o, struct rc_a2a_result *res,
			 struct rc_err *err);

/* The token counts of slice of slices (counts of world x world, into out):
 * what one rail carries of each block when a rank stripes over slices
 * rails. The slices of a block differ by at most one token. */
RC_EXPORT void rc_a2a_slice_counts(const uint64_t *counts, int world, int slice, int slices,
				   uint64_t *out);
/* A rank on n rails: slice i of every block over g[i] (groups joined on
 * each rail, the same ranks in each), the slices at once, one thread each,
 * every iteration's clock started once all of them are ready (so one
 * rail's filling and checking never falls in another's timed exchange);
 * res[i] gets rail i's figures (res[i].lat_us: the caller's, iters
 * entries). o's slice and slices are set here; o->progress hears rail 0.
 * The first rail that fails fails the call, its error prefixed "rail I
 * (DEV): ", and stops the others at their next iteration. n 1:
 * rc_a2a_run. */
RC_EXPORT int rc_a2a_run_rails(struct rc_group *const *g, int n, const struct rc_a2a_opts *o,
			       struct rc_a2a_result *res, struct rc_err *err);

/* Sizing before a run (--plan): the bytes rc_a2a_run registers for token
 * buffers on each rank of world, into bytes[world] (its send and receive
 * buffers of both parities, the ring's staging; hierarchical, and the
 * node's shared segment, which each of its ranks registers), from o's
 * algo, counts, hidden, dtype and ranks_per_node by the code the run sizes
 * them with. -EINVAL as rc_a2a_run would refuse o, -ENOMEM. */
RC_EXPORT int rc_a2a_reg_bytes(const struct rc_a2a_opts *o, int world, uint64_t *bytes,
			       struct rc_err *err);

#endif
