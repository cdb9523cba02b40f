/* SPDX-License-Identifier: MIT */
/*
 * One message channel (msgch.c): small messages by SEND and RECV over one or
 * many connections, in one registered area carved into slots of a fixed size
 * (all the receive slots, connection by connection, then all the send slots).
 * Connection k owns receive slots [k * recvs, (k + 1) * recvs) and send slots
 * [k * sends, (k + 1) * sends) of their kinds. A work request carries its
 * slot and, for a receive, the generation of that posting in its wr_id
 * (below the RC_OP_* of ops_core.h), so that a completion names the slot it
 * filled and a stale or doubled one is refused. Sends go round each
 * connection's send slots in order; one more than it has outstanding is
 * refused (ENOBUFS, naming the peer). kvxfer's control QP (one connection),
 * the group's rings (one connection per peer) and the region client use it
 * so. With shared_recvs, the receive slots are not any connection's: they
 * are posted to shared receive queues (rc_msgch_share) and a message from
 * any connection lands in any of them, so that receive memory does not grow
 * with peers times depth (the group's form, on its shared CQs).
 *
 * A pool channel (opts.pool) is the server's form: slot pairs (a receive
 * and its reply) shared by every connection through one shared receive
 * queue, so that a thousand peers cost neither a ring nor a descriptor
 * each. A request lands in any posted pair; its reply goes from the same
 * pair's other half, and its completion names the pair and the generation
 * of the request it answers, so that a reply of a connection gone, whose
 * pair was posted again since, is told apart (-ESTALE). The region server
 * is its user; who holds a pair meanwhile is the server's to keep.
 */
#ifndef RDMACTL_MSGCH_CORE_H
#define RDMACTL_MSGCH_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmactl/conn.h>
#include <rdmactl/err.h>
#include <rdmactl/ops_core.h>

/* wr_id user bits: the slot below, the receive's generation above it. */
#define RC_MSGCH_SLOT_BITS 32
#define RC_MSGCH_GEN_MASK 0xffffffu
static inline uint64_t rc_msgch_user(uint32_t slot, uint32_t gen)
{
	return (uint64_t)(gen & RC_MSGCH_GEN_MASK) << RC_MSGCH_SLOT_BITS | slot;
}
static inline uint32_t rc_msgch_user_slot(uint64_t user)
{
	return (uint32_t)user;
}
static inline uint32_t rc_msgch_user_gen(uint64_t user)
{
	return (uint32_t)(user >> RC_MSGCH_SLOT_BITS) & RC_MSGCH_GEN_MASK;
}

struct rc_msgch_opts {
	int nconns;       /* connections (slot ranges); 0: an empty channel */
	int recvs, sends; /* slots per connection, at least 1 each */
	uint32_t slot;    /* bytes per slot */
	uint32_t min_len; /* a received message's length accepted: min_len to */
	uint32_t max_len; /* max_len (0: the slot) bytes */
	const char *what; /* the channel, in errors: "... on WHAT" (NULL: nothing) */
	int pool;         /* a pool channel of this many pairs (nconns, recvs, sends 0) */
	int shared_recvs; /* receive slots shared by every connection through the
			   * shared receive queues of rc_msgch_share (recvs 0) */
};

struct rc_msgch_conn {
	struct rc_conn *c;   /* NULL: not started */
	uint64_t sent, done; /* sends posted, and completed */
};

struct rc_shared;
struct rc_msgch {
	struct rc_msgch_opts o;
	unsigned char *mem;
	size_t len;
	struct ibv_mr *mr;          /* NULL until rc_msgch_reg */
	struct rc_msgch_conn *conn; /* nconns */
	uint32_t *gen;              /* per receive slot (pair): the generation of its posting */
	bool *posted;               /* per receive slot: posted and not reaped yet */
	/* shared_recvs: the queues receive slot s is posted to, s % nsrq */
	struct rc_shared *srq[RC_SHARED_SET_MAX];
	int nsrq;
};

/* What a completion was (rc_msgch_wc). */
enum rc_msgch_kind {
	RC_MSGCH_SENT, /* a send of the connection's completed: its slot is free */
	RC_MSGCH_MSG,  /* a message: data and len, in its receive slot */
	RC_MSGCH_IMM,  /* an RDMA WRITE with immediate consumed the receive slot */
};
struct rc_msgch_rx {
	uint32_t slot; /* the receive slot (rc_msgch_repost it when done) */
	void *data;    /* MSG: the bytes received */
	uint32_t len;
};

/* Bytes of the area of a channel so made. */
size_t rc_msgch_len(const struct rc_msgch_opts *o);
/* Lay the channel out and allocate its area (page aligned, zeroed); no
 * device is touched. 0 or -errno (EINVAL for a layout that does not fit). */
int rc_msgch_init(struct rc_msgch *ch, const struct rc_msgch_opts *o, struct rc_err *err);
/* Register the area with pd (nothing to do for an empty channel). -errno
 * with err saying so. */
int rc_msgch_reg(struct rc_msgch *ch, struct ibv_pd *pd, struct rc_err *err);
/* Deregister and free; again is harmless. The connections are the caller's.
 * 0, or the deregistration's -errno. */
int rc_msgch_fini(struct rc_msgch *ch);

/* A channel of shared_recvs: its receive slots go to sh's n shared receive
 * queues (slot s to sh[s % n]), every one posted now. */
int rc_msgch_share(struct rc_msgch *ch, struct rc_shared *const *sh, int n, struct rc_err *err);
/* Connection k is c: post all its receive slots (again, for a new QP of k:
 * its sends start afresh, and the old QP's completions are refused). */
int rc_msgch_start(struct rc_msgch *ch, int k, struct rc_conn *c, struct rc_err *err);
/* Post receive slot s again (a new generation), its message consumed. */
int rc_msgch_repost(struct rc_msgch *ch, uint32_t s, struct rc_err *err);
void *rc_msgch_recv_buf(const struct rc_msgch *ch, uint32_t s);
/* Connection k's sends that may go now (slots not outstanding). */
int rc_msgch_send_room(const struct rc_msgch *ch, int k);
/* The send slot connection k's next send goes from: fill it, then
 * rc_msgch_send. */
void *rc_msgch_send_buf(const struct rc_msgch *ch, int k);
/* -ENOBUFS naming the peer when every send slot of k is outstanding, else 0. */
int rc_msgch_send_check(const struct rc_msgch *ch, int k, struct rc_err *err);
/* Send len bytes of rc_msgch_send_buf(ch, k) on connection k (signalled). */
int rc_msgch_send(struct rc_msgch *ch, int k, uint32_t len, struct rc_err *err);
/* Connection k failed: its outstanding sends will not complete. */
void rc_msgch_sends_lost(struct rc_msgch *ch, int k);

/* Pool channels. Post pair s's receive to sh's shared receive queue (a new
 * generation). */
int rc_msgch_pool_post(struct rc_msgch *ch, struct rc_shared *sh, uint32_t s, struct rc_err *err);
/* Pair s's reply half: fill it, then rc_msgch_pool_reply. */
void *rc_msgch_reply_buf(const struct rc_msgch *ch, uint32_t s);
/* Send len bytes of pair s's reply half on c (signalled), for the request
 * pair s holds (received, not posted again). */
int rc_msgch_pool_reply(struct rc_msgch *ch, struct rc_conn *c, uint32_t s, uint32_t len,
			struct rc_err *err);
/* A completion of a pool channel, whatever its status (the caller reads
 * wc->status), checked: a receive of a pair posted with this generation
 * (MSG, its length min_len to max_len when it succeeded, else -EBADMSG; or
 * IMM), the pair then the caller's; or a reply of a pair not posted again
 * since (SENT), else -ESTALE. rx->slot names the pair in each of these
 * cases; -EPROTO for anything else (no pair of ours), err saying why. */
int rc_msgch_pool_wc(struct rc_msgch *ch, const struct ibv_wc *wc, struct rc_msgch_rx *rx,
		     struct rc_err *err);

/* A successful completion of connection k's QP, checked: the operation
 * (SEND or RECV in its wr_id, with the matching opcode), the slot (in k's
 * range; for a receive, posted with this generation; for a send, the oldest
 * outstanding), and a message's length (min_len to max_len). Returns its
 * enum rc_msgch_kind, rx filled for MSG and IMM (the receive slot is then
 * the caller's until rc_msgch_repost; rx may be NULL where only sends are
 * reaped), -EPROTO for the wrong completion or -EBADMSG for a wrong length,
 * err naming the peer. */
int rc_msgch_wc(struct rc_msgch *ch, int k, const struct ibv_wc *wc, struct rc_msgch_rx *rx,
		struct rc_err *err);

#endif
