/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/ops.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_OPS_CORE_H
#define RDMACTL_OPS_CORE_H

#include <rdmactl/ops.h>

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
	uint64_t rkey; /* a fabric's key (verbs: 32 bits) */
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
struct rc_transport;
struct rc_stream {
	enum rc_op op; /* WRITE, WRITE_IMM, READ, FAA or CAS */
	struct rc_conn *const *conns;
	int nconns;
	/* Another transport than verbs (pipe_core.h): its endpoints, nconns of
	 * them, stand for conns, and timeout_ms is set. NULL: verbs, conns. */
	const struct rc_transport *tp;
	void *const *eps;
	void *buf; /* staging: nconns * depth slots of chunk bytes */
	uint32_t lkey;
	size_t chunk; /* bytes per work request (8 for atomics) */
	int depth;
	int batch;
	int signal_every;
	uint64_t raddr; /* remote start */
	uint64_t rkey;  /* a fabric's key (verbs: 32 bits) */
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
	double *lat_us; /* per-work-request latency; needs signal_every 1 */
	/* per work request k (iters of them), or NULL: when it was posted, and when
	 * the completion that covered it came (rc_now; rc_peak_op_seconds) */
	double *posted_s;
	double *completed_s;
	enum rc_lat_clock lat_clock; /* what times lat_us */
	bool one_buffer;             /* benchmarks: every work request uses the first slot */
};

/* A list of extents copied between one local and one remote region: READ
 * pulls remote src into local dst, WRITE pushes local src to remote dst.
 * Each extent goes in pieces of at most `piece` bytes, `depth` of them
 * outstanding, posted in chains; every piece signalled. */
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

const char *rc_op_name(enum rc_op op);

void rc_wr_build(const struct rc_wr *d, struct ibv_send_wr *wr, struct ibv_sge *sge);

/* Append one work request; false when the chain is full (work requests, or
 * gather entries). */
bool rc_chain_add(struct rc_chain *ch, const struct rc_wr *d);
/* Post the chain on c and empty it: the count posted (0 for an empty chain)
 * or -errno, err naming the operation and the peer. */
int rc_chain_post(struct rc_conn *c, struct rc_chain *ch, struct rc_err *err);
/* The same on a QP made without rdma_cm (peer: how errors name the other end). */
int rc_chain_post_qp(struct ibv_qp *qp, const char *peer, struct rc_chain *ch, struct rc_err *err);

/* Count the next work request posted and say whether it is signalled: one in
 * signal_every, the last of a burst (last), and the one that fills the queue. */
bool rc_sq_next(struct rc_sq *q, bool last);

/* Single work requests (built and posted as above). */
int rc_post_rdma(struct rc_conn *c, enum rc_op op, void *laddr, uint32_t len, uint32_t lkey,
		 uint64_t raddr, uint32_t rkey, uint32_t imm, uint64_t user, bool signaled,
		 struct rc_err *err);
int rc_post_atomic(struct rc_conn *c, enum rc_op op, uint64_t *result, uint32_t lkey,
		   uint64_t raddr, uint32_t rkey, uint64_t compare_add, uint64_t swap,
		   uint64_t user, struct rc_err *err);
int rc_post_send(struct rc_conn *c, const void *buf, uint32_t len, uint32_t lkey, uint64_t user,
		 struct rc_err *err);
int rc_post_recv(struct rc_conn *c, void *buf, uint32_t len, uint32_t lkey, uint64_t user,
		 struct rc_err *err);

/* A write of len bytes as work requests of at most max bytes each (a
 * message larger than the port's max_msg_sz fails, and a 4 GiB one does not
 * fit rc_wr.len): calls piece for each, in order, with its offset into the
 * write, its length and whether it is the last (which carries the immediate
 * data, if any). A zero-length write is one piece of 0 bytes. Returns the
 * first non-zero value piece returns; -EINVAL when max is 0. */
int rc_split_len(uint64_t len, uint32_t max,
		 int (*piece)(void *arg, uint64_t off, uint32_t len, bool last), void *arg);
/* The largest message the connection's port takes (its max_msg_sz), at most
 * 1 GiB; 1 GiB when the port cannot be asked. */
uint32_t rc_conn_max_msg(const struct rc_conn *c);

/* Completion queues. A timeout argument means the same everywhere: < 0 the
 * connection's own timeout, 0 do not wait, > 0 at most that many ms. */

/* Reap up to max completions of c without sleeping. When it returns 0 the CQ
 * is empty and armed: the caller may sleep on c->cch->fd. -EIO when the CQ
 * cannot be polled or armed. Error completions are returned as they are. */
int rc_cq_take(struct rc_conn *c, struct ibv_wc *wc, int max);
/* Request a notification unless one is pending: 1 armed now, 0 already, -EIO. */
int rc_cq_arm(struct rc_conn *c);
/* Consume the completion channel's event, if any (after poll() said so). */
void rc_cq_ack(struct rc_conn *c);

/* Connections on at most this many shared CQs are polled and slept on by
 * their CQs (rc_poll_any); more, or any with a CQ of its own, one by one. */
#define RC_SHARED_SET_MAX 16

/* Reap up to max completions from any of conns, waiting at most timeout_ms
 * (busy polling or sleeping on the completion channels, as each connection
 * is set; on the shared CQs' channels when conns are on a few). Returns the count (> 0) with *which the connection's index,
 * -ETIMEDOUT, or -EIO for an error completion (err names the operation, the
 * peer and ibv_wc_status_str; *which is then the failed connection's index).
 * Successful completions polled together with an error one are returned
 * first; the error comes from the next call. */
int rc_poll_any(struct rc_conn *const *conns, int n, struct ibv_wc *wc, int max, int timeout_ms,
		int *which, struct rc_err *err);
int rc_poll(struct rc_conn *c, struct ibv_wc *wc, int max, int timeout_ms, struct rc_err *err);
int rc_wc_error(const struct rc_conn *c, const struct ibv_wc *wc, struct rc_err *err);

int rc_stream_run(const struct rc_stream *s, struct rc_stream_result *res, struct rc_err *err);

/* Bytes moved in *bytes (also on failure: what completed). */
int rc_copy_run(const struct rc_copy *c, uint64_t *bytes, struct rc_err *err);

/* A latency clock (rc_lat_clk_init) and its readings: ticks and, for the
 * TSC, the CPU read on (RC_STAMP_NOCPU: it changed during the read). */
struct rc_lat_clk {
	enum rc_lat_clock kind; /* TSC or MONOTONIC */
	double hz;
	double cost; /* seconds: the median gap between back-to-back stamps */
	bool rdtscp; /* the TSC and the CPU in one instruction */
};

#define RC_STAMP_NOCPU UINT32_MAX

struct rc_stamp {
	uint64_t t;
	uint32_t cpu;
};

/* Pick the clock `want` names; AUTO takes the TSC when its rate, measured
 * twice against CLOCK_MONOTONIC, holds steady. -errno only for TSC. */
int rc_lat_clk_init(struct rc_lat_clk *c, enum rc_lat_clock want, struct rc_err *err);
struct rc_stamp rc_lat_stamp(const struct rc_lat_clk *c);
/* Seconds from a to b less a stamp's cost (at least 0); NaN when the two
 * TSC readings came from different CPUs. */
double rc_lat_span(const struct rc_lat_clk *c, struct rc_stamp a, struct rc_stamp b);
/* A TSC stamp and the monotonic time it was taken at (the middle of two
 * readings close around it): 0, or -1 when the thread was held up or moved
 * each time, or off x86-64. */
int rc_lat_stamp_at(const struct rc_lat_clk *c, struct rc_stamp *s, double *at);

#endif
