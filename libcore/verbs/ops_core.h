/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/ops.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_OPS_CORE_H
#define RDMACTL_OPS_CORE_H

#include <rdmactl/ops.h>

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

/* Reap up to max completions from any of conns, waiting at most timeout_ms
 * (busy polling or sleeping on the completion channels, as each connection
 * is set). Returns the count (> 0) with *which the connection's index,
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

#endif
