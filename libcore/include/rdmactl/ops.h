/* SPDX-License-Identifier: MIT */
/* Posting work requests and reaping completions, and the pipelined stream
 * engine that moves bytes with many work requests outstanding. */
#ifndef RDMACTL_OPS_H
#define RDMACTL_OPS_H

#include <rdmactl/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <rdmactl/conn.h>

enum rc_op {
	RC_OP_NONE = 0,
	RC_OP_WRITE,
	RC_OP_WRITE_IMM,
	RC_OP_READ,
	RC_OP_FAA,
	RC_OP_CAS,
	RC_OP_SEND,
	RC_OP_RECV,
};

/* wr_id layout: the operation in the top 8 bits, the caller's value below,
 * so that an error completion (whose opcode is undefined) is still named. */
#define RC_WRID_MASK ((1ULL << 56) - 1)
static inline uint64_t rc_wrid(enum rc_op op, uint64_t v)
{
	return ((uint64_t)op << 56) | (v & RC_WRID_MASK);
}
static inline enum rc_op rc_wrid_op(uint64_t wr_id)
{
	return (enum rc_op)(wr_id >> 56);
}

/* One work request, described: rc_wr_build turns it into the verbs one. laddr,
 * len and lkey: the local buffer (8 bytes for atomics); raddr and rkey: the
 * remote one (unused by SEND); imm: WRITE_IMM only; compare_add and swap:
 * atomics only; user: the caller's value in the wr_id below the operation.
 * A gathering WRITE or WRITE_IMM names its pieces in sg (nsg of them, all
 * under lkey, read in order) instead of laddr; len is then their total. */
struct rc_sg {
	uint64_t addr;
	uint32_t len;
};

struct rc_wr {
	enum rc_op op; /* WRITE, WRITE_IMM, READ, FAA, CAS or SEND */
	uint64_t laddr;
	uint32_t len;
	uint32_t lkey;
	uint64_t raddr;
	uint32_t rkey;
	uint32_t imm;
	uint64_t compare_add;
	uint64_t swap;
	uint64_t user;
	bool signaled;
	const struct rc_sg *sg; /* gather list, or NULL: laddr and len */
	uint32_t nsg;
};

/* Work requests chained for one QP and posted with one ibv_post_send (a post
 * list). Start with n = 0. Gather lists are copied into gather (ng used). */
#define RC_CHAIN_MAX 64
#define RC_CHAIN_GATHER 512
struct rc_chain {
	struct ibv_send_wr wr[RC_CHAIN_MAX];
	struct ibv_sge sge[RC_CHAIN_MAX];
	struct ibv_sge gather[RC_CHAIN_GATHER];
	int n, ng;
};

/* Whether one more work request of nsg gather entries (0: none) fits. */
static inline bool rc_chain_room(const struct rc_chain *ch, uint32_t nsg)
{
	return ch->n < RC_CHAIN_MAX && (!ch->n || nsg <= (uint32_t)(RC_CHAIN_GATHER - ch->ng));
}

/* A QP's send-queue accounting, for selective signalling: work requests
 * posted, completed (advanced by the owner from its signalled completions),
 * and the posted count at the last signalled one. */
struct rc_sq {
	uint64_t posted;
	uint64_t done;
	uint64_t signaled;
	int depth;        /* the queue's depth (0: unbounded) */
	int signal_every; /* one signalled per this many (0: only forced ones) */
};

/* A pipelined transfer. Pieces of `chunk` bytes go round-robin over the
 * connections, each keeping up to `depth` work requests outstanding, posted
 * in chains of up to `batch`, one in `signal_every` signalled. */
struct rc_stream {
	enum rc_op op; /* WRITE, WRITE_IMM, READ, FAA or CAS */
	struct rc_conn *const *conns;
	int nconns;
	void *buf; /* staging: nconns * depth slots of chunk bytes */
	uint32_t lkey;
	size_t chunk; /* bytes per work request (8 for atomics) */
	int depth;
	int batch;
	int signal_every;
	uint64_t raddr; /* remote start */
	uint32_t rkey;
	uint64_t total; /* bytes to move (a cap when fill may end early) */
	uint64_t iters; /* when non-zero: this many work requests of chunk
				   * bytes, cycling over [raddr, raddr + total) */
	uint32_t imm;
	uint64_t compare_add; /* atomics */
	uint64_t swap;
	/* Writes: fill the slot before posting; return bytes (< len only at the
	 * end of the input) or -errno. NULL: send the slot as it is. */
	ssize_t (*fill)(void *arg, uint64_t off, void *buf, size_t len);
	/* Reads: consume a completed slot, in offset order (one connection). */
	int (*drain)(void *arg, uint64_t off, const void *buf, size_t len);
	void *arg; /* for fill and drain */
	void (*progress)(void *arg, uint64_t done, uint64_t total);
	void *progress_arg;
	int timeout_ms;
	double *lat_us;  /* per-work-request latency; needs signal_every 1 */
	bool one_buffer; /* benchmarks: every work request uses the first slot */
};

struct rc_stream_result {
	uint64_t bytes;
	uint64_t ops;
	double seconds;
};

/* A list of extents copied between one local and one remote region: READ
 * pulls remote src into local dst, WRITE pushes local src to remote dst.
 * Each extent goes in pieces of at most `piece` bytes, `depth` of them
 * outstanding, posted in chains; every piece signalled. */
struct rc_extent {
	uint64_t src; /* offset in the source region */
	uint64_t dst; /* offset in the destination region */
	uint64_t len;
};

struct rc_copy {
	enum rc_op op; /* READ or WRITE */
	struct rc_conn *conn;
	uint64_t local; /* the local region: address and key */
	uint32_t lkey;
	uint64_t remote; /* the remote region */
	uint32_t rkey;
	const struct rc_extent *ext;
	size_t n;
	uint32_t piece; /* default 1 MiB */
	int depth;      /* default 16, at most the send queue */
	int timeout_ms; /* per completion, as rc_poll */
};

/* Monotonic time in seconds. */
RC_EXPORT double rc_now(void);
/* A time of rc_now's as Unix time (seconds since the epoch, wall clock):
 * for reports that other processes, or hosts, line up. */
RC_EXPORT double rc_wall(double mono);

#endif
