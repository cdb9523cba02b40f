/* SPDX-License-Identifier: MIT */
/* The transport seam and the one pipelining engine (libcore/README.md, "The
 * transport seam" and "The engine"). Inside face only: not installed, not
 * exported. */
#ifndef RDMACTL_PIPE_CORE_H
#define RDMACTL_PIPE_CORE_H

#include <rdmactl/ops_core.h>

/* A completion in the engine's own terms: what a transport's poll returns. */
struct rc_cqe {
	uint64_t user; /* the work request's rc_wr.user */
	enum rc_op op; /* its operation, known for a failed one too */
	uint32_t len;  /* bytes received (receives) */
	uint32_t imm;  /* immediate data, when has_imm */
	bool has_imm;
};

/* An opaque address (rdma_cm: the text "host:port"; an RDM transport: its
 * address-vector name) and the private data a connection request carries. */
#define RC_TP_ADDR_MAX 64
struct rc_tp_addr {
	uint32_t len;
	unsigned char data[RC_TP_ADDR_MAX];
};

/* A connection request as a listener received it: who (an opaque address),
 * what it offered (private data), and the transport's handle for the
 * answer (accept or refuse). */
struct rc_tp_request {
	struct rc_tp_addr peer;
	unsigned char pd[256];
	size_t pd_len;
	void *handle;
};

/* The transport seam: every call the engine makes into a fabric. An endpoint
 * (ep) and a device (dev) are the transport's own objects (the verbs
 * transport's are struct rc_conn and struct ibv_context); memory keys are
 * opaque 64-bit values; work requests and completions are the engine's
 * struct rc_wr and struct rc_cqe. Each call returns 0 (or a count) or -errno
 * with err filled, and never prints. */
struct rc_transport {
	const char *name;
	/* A device by name (NULL: the first). */
	int (*dev_open)(const char *name, void **dev, struct rc_err *err);
	void (*dev_close)(void *dev);
	/* Memory registered for the endpoint's domain: lkey for local use in
	 * rc_wr.lkey, rkey for the peer. */
	int (*mem_reg)(void *ep, void *addr, size_t len, int access, void **mr, uint64_t *lkey,
		       uint64_t *rkey, struct rc_err *err);
	int (*mem_dereg)(void *mr);
	/* Reach the peer at addr, offering private data (pd, pd_len); on
	 * success *ep is usable and the peer's answer is kept on it. */
	int (*connect)(const struct rc_tp_addr *addr, const void *pd, size_t pd_len,
		       const struct rc_conn_opts *o, void **ep, struct rc_err *err);
	int (*close)(void *ep);
	/* Listen at addr (on device dev, NULL: the one the address routes to). */
	int (*listen)(const struct rc_tp_addr *addr, const char *dev, void **listener,
		      struct rc_err *err);
	int (*listener_close)(void *listener);
	/* The next connection request within timeout_ms: 1 with *req filled,
	 * 0 none came; the request is then answered by accept or refuse. */
	int (*request)(void *listener, int timeout_ms, struct rc_tp_request *req,
		       struct rc_err *err);
	/* Accept req, answering with private data (pd, pd_len): *ep usable. On
	 * failure req is still to be refused. */
	int (*accept)(void *listener, struct rc_tp_request *req, const void *pd, size_t pd_len,
		      const struct rc_conn_opts *o, void **ep, struct rc_err *err);
	/* Refuse req with a reason the peer can read; req's handle is freed. */
	void (*refuse)(struct rc_tp_request *req, const char *why);
	/* Post n work requests in order, as one list where the fabric can:
	 * the count posted or -errno. */
	int (*post)(void *ep, const struct rc_wr *wr, int n, struct rc_err *err);
	/* Up to max completions from any of eps[0..n), waiting at most
	 * timeout_ms (< 0: the endpoint's own, 0: none): the count with
	 * *which the endpoint's index, -ETIMEDOUT, or -EIO/-EACCES for a
	 * failed one (err names the operation and the peer; *which set). */
	int (*poll)(void *const *eps, int n, struct rc_cqe *cqe, int max, int timeout_ms,
		    int *which, struct rc_err *err);
	/* The endpoint's next connection event (0 none within timeout_ms,
	 * 1 one, with *gone set when the peer left). */
	int (*event)(void *ep, int timeout_ms, bool *gone, struct rc_err *err);
	/* A name for the endpoint's peer, for messages. */
	const char *(*peer)(const void *ep);
	/* Largest message and send-queue depth of the endpoint. */
	uint32_t (*max_msg)(const void *ep);
	int (*sq_depth)(const void *ep);
};

/* RC over rdma_cm and libibverbs: the one transport today. */
extern const struct rc_transport rc_verbs_transport;

/* The pipelining engine: one per queue (endpoint). It keeps the window (at
 * most depth work requests outstanding), the signalling policy (one in
 * signal_every signalled, the last of a burst always, and the one that
 * fills the window) and the completion accounting (a signalled completion
 * completes everything posted before it). Work requests are added, batched
 * and posted through the transport in lists of up to batch. The low 32 bits
 * of each work request's rc_wr.user must be its sequence number
 * (rc_pipe_seq when added): a completion names how far the queue is done. */
#define RC_PIPE_BATCH RC_CHAIN_MAX
#define RC_PIPE_SIGNAL_EVERY 16 /* one in this many signalled, as write --bench's default */
struct rc_pipe_opts {
	int depth;        /* the window (capped by the endpoint's send queue) */
	int signal_every; /* < 1: every work request signalled */
	int batch;        /* work requests per post, 1..RC_PIPE_BATCH (0: 32) */
};

struct rc_pipe {
	struct rc_sq sq; /* posted, done, last signalled; depth and signal_every */
	const struct rc_transport *tp;
	void *ep;
	int batch;
	int n, ng;    /* pending work requests and gather entries */
	uint64_t ops; /* completed */
	/* Called just before each post with the first one's sequence number
	 * and the count (latencies and timestamps start there), or NULL. */
	void (*before_post)(void *arg, uint64_t seq, int n);
	void *hook_arg;
	struct rc_wr pend[RC_PIPE_BATCH]; /* last: rc_pipe_init clears what is above */
	struct rc_sg gather[RC_CHAIN_GATHER];
};

void rc_pipe_init(struct rc_pipe *p, const struct rc_transport *tp, void *ep,
		  const struct rc_pipe_opts *o);
/* Whether one more work request (of nsg gather entries) fits the window. */
bool rc_pipe_room(const struct rc_pipe *p, uint32_t nsg);
static inline uint64_t rc_pipe_seq(const struct rc_pipe *p)
{
	return p->sq.posted;
}
static inline uint64_t rc_pipe_outstanding(const struct rc_pipe *p)
{
	return p->sq.posted - p->sq.done;
}
/* Add w (its gather list copied): signalled by the policy, when last, or
 * when w->signaled asks for it; the pending list is posted once it holds
 * batch. 0 or -errno (-ENOSPC: no room). */
int rc_pipe_add(struct rc_pipe *p, struct rc_wr *w, bool last, struct rc_err *err);
/* Post what is pending: the count posted or -errno. */
int rc_pipe_flush(struct rc_pipe *p, struct rc_err *err);
/* A signalled completion whose user value is user: every work request up
 * to it is done. Returns the new done count; *from (if not NULL) the old. */
uint64_t rc_pipe_complete(struct rc_pipe *p, uint64_t user, uint64_t *from);
/* The peer failed: what was posted will not complete; nothing pending. */
void rc_pipe_abandon(struct rc_pipe *p);
/* Poll the endpoints of pipes[0..n) through their transport (as its poll),
 * without completing anything: the caller calls rc_pipe_complete. */
int rc_pipe_poll(struct rc_pipe *pipes, int n, struct rc_cqe *cqe, int max, int timeout_ms,
		 int *which, struct rc_err *err);
/* Post what is pending and reap until nothing is outstanding or timeout_ms
 * passes without a completion: 0, -ETIMEDOUT or -errno. */
int rc_pipe_drain(struct rc_pipe *p, int timeout_ms, struct rc_err *err);

#endif
