/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/group.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_GROUP_CORE_H
#define RDMACTL_GROUP_CORE_H

#include <rdmactl/group.h>

/* Parse "ADDR:PORT" or "[V6]:PORT". */
int rc_endpoint_parse(const char *s, struct rc_endpoint *ep);

int rc_rdv_open(const char *url, int rank, int world, int timeout_ms, struct rc_rdv **out,
		struct rc_err *err);
/* The endpoint the rendezvous already holds for this rank (a peers file);
 * -ENOENT when it holds none (etcd: the rank publishes its own). */
int rc_rdv_self(struct rc_rdv *r, struct rc_endpoint *ep, struct rc_err *err);
/* Publish this rank's endpoint (etcd: under a lease kept alive until
 * close; a rank claimed by another process is refused) and wait, within the
 * timeout, for all world endpoints; the error names the ranks missing. */
int rc_rdv_exchange(struct rc_rdv *r, const struct rc_endpoint *self, struct rc_endpoint *all,
		    struct rc_err *err);
/* "etcd" or "file". */
const char *rc_rdv_kind(const struct rc_rdv *r);
int rc_rdv_close(struct rc_rdv *r);

/* Listen on ep (port "0": any free one); ep is updated with the port. */
int rc_group_listen(const struct rc_group_opts *o, struct rc_endpoint *ep, struct rc_group **out,
		    struct rc_err *err);
/* Connect to every peer j with need[rank * world + j] (need must be
 * symmetric; the diagonal is ignored) at all[j], within the timeout. */
int rc_group_connect(struct rc_group *g, const struct rc_endpoint *all, const uint8_t *need,
		     struct rc_err *err);

int rc_group_rank(const struct rc_group *g);
int rc_group_world(const struct rc_group *g);
struct ibv_pd *rc_group_pd(const struct rc_group *g);
struct rc_conn *rc_group_conn(const struct rc_group *g, int peer);

/* This rank's endpoint (the address and port it listens on, its host name)
 * and its device's port. */
const struct rc_endpoint *rc_group_self(const struct rc_group *g);
int rc_group_port(const struct rc_group *g);

/* The class of a failed connect from its error (code: positive errno, msg:
 * the message of rc_connect or of the group's connect). */
enum rc_link rc_link_classify(int code, const char *msg);
/* Why this rank's connection to peer could not be made, and *why (may be
 * NULL) the message; RC_LINK_UP when it was (or was not planned). */
enum rc_link rc_group_link(const struct rc_group *g, int peer, const char **why);

/* One-sided write with immediate data: imm = channel << 24 | (seq & 0xffffff)
 * (over libfabric, channel << 24 | the writer's rank).
 * The peer's counter of that channel goes up by one when it lands. Waits for
 * room in the send queue (within the timeout). */

/* channel -1: a plain write, no immediate data, no counter. A write larger
 * than the port's largest message (at most 1 GiB) is posted in pieces, the
 * immediate data on the last; it counts as one write done. */
int rc_group_write_imm(struct rc_group *g, int peer, void *laddr, uint64_t len, uint32_t lkey,
		       uint64_t raddr, uint64_t rkey, int channel, uint32_t seq, struct rc_err *err);
/* Wait until the counter of channel reaches target[j] for every peer j in
 * peers (n of them); the timeout error names the ranks that did not. */
int rc_group_wait_imm(struct rc_group *g, const int *peers, int n, int channel,
		      const uint64_t *target, struct rc_err *err);
uint64_t rc_group_imm_count(const struct rc_group *g, int peer, int channel);
/* A burst of writes of len bytes (in pieces of the port's largest message) from
 * laddr to raddr of peer, pipelined by the engine as write --bench's stream
 * is: at most depth outstanding, one in signal_every signalled (and the
 * last); iters of them, or (iters 0) as many as go until the time `until`
 * (rc_now). Returns once all completed (the deadline moving with each
 * completion), *posted their count; they are not counted in
 * rc_group_writes_done. */
struct rc_group_burst {
	void *laddr;
	uint32_t len;
	uint32_t lkey;
	uint64_t raddr;
	uint32_t rkey;
	uint64_t iters;
	double until;
	int depth;
	int signal_every;
	/* called as writes complete (done: how many so far) and when the burst
	 * waits for room; NULL: none */
	void (*note)(void *arg, uint64_t done, double now);
	void *note_arg;
};
int rc_group_write_burst(struct rc_group *g, int peer, const struct rc_group_burst *b,
			 uint64_t *posted, struct rc_err *err);
/* One signalled RDMA READ of len bytes from the peer (waits for room in the
 * send queue, within the timeout); its completion counts in
 * rc_group_writes_done like a write's, and rc_group_flush waits for it. */
int rc_group_read(struct rc_group *g, int peer, void *laddr, uint32_t len, uint32_t lkey,
		  uint64_t raddr, uint32_t rkey, struct rc_err *err);
/* Wait until every write posted so far completed. */
int rc_group_flush(struct rc_group *g, struct rc_err *err);

/* Send len bytes to each connected peer and receive len bytes from each
 * into theirs[peer * len] (peers without a connection are left alone). */
int rc_group_exchange(struct rc_group *g, const void *mine, size_t len, void *theirs,
		      struct rc_err *err);

/* Every rank entered: the same tree, up and down, one small message an edge. */
int rc_group_barrier(struct rc_group *g, struct rc_err *err);
/* Gather len bytes from every rank connected to root into theirs[rank *
 * len] on root (root's own is copied); got[rank] says whose came. A rank
 * that is gone or silent until the timeout is not an error: got[] is false
 * and its slot holds the reason, a string. Other ranks send theirs to root
 * and return once it was delivered. */
int rc_group_gather(struct rc_group *g, int root, const void *mine, size_t len, void *theirs,
		    bool *got, struct rc_err *err);
/* Gather len bytes (any length: in pieces) from every rank into theirs[rank *
 * len] on rank 0, up the barrier's tree: only the tree's
 * connections are used, so a partial group whose failed pairs include rank
 * 0's still gathers. Every rank calls it; a rank that does not answer fails
 * it within the timeout. */
int rc_group_gather_tree(struct rc_group *g, const void *mine, size_t len, void *theirs,
			 struct rc_err *err);
/* Rank 0's len bytes at buf to every rank, down the barrier's tree in pieces
 * of one control message, each passed on to the children as it lands.
 * Every rank calls it with the same len (a piece of another length, or
 * out of step, is refused: -EPROTO); a parent silent until the timeout
 * fails it. */
int rc_group_bcast_tree(struct rc_group *g, void *buf, size_t len, struct rc_err *err);
/* root sends len bytes of buf to every rank connected to it (with
 * keep_going: every live one); the others receive them into buf. */
int rc_group_bcast(struct rc_group *g, int root, void *buf, size_t len, struct rc_err *err);
/* A control message as received (byte_len bytes at buf): 0 when its header
 * came whole and the length it states is the length that came; -EPROTO
 * otherwise, and err says which. */
int rc_group_msg_check(const void *buf, size_t byte_len, struct rc_err *err);

/* Driving the group from a caller's own state machine (multicast's relay):
 * reap completions and connection events for up to timeout_ms (0: do not
 * wait), which moves the immediate-data counters and the write counts. */
int rc_group_poll(struct rc_group *g, int timeout_ms, struct rc_err *err);
/* Connected, and neither disconnected nor failed (keep_going). */
bool rc_group_peer_alive(const struct rc_group *g, int peer);
/* One-sided writes to peer completed so far (in posting order, RC). */
uint64_t rc_group_writes_done(const struct rc_group *g, int peer);
/* The error for a peer that is not alive: which rank, while doing what, and
 * the completion error that failed it (keep_going). Returns -ECONNRESET. */
int rc_group_peer_error(struct rc_group *g, int peer, const char *what, struct rc_err *err);
/* Tell every connected peer that this rank gives up, and why (best effort,
 * bounded): their waits then fail at once with the reason, which names the
 * rank at fault, instead of timing out on this one. */
void rc_group_abort(struct rc_group *g, const char *why);
/* The same with err's message, its parameters named as the program names
 * them (rc_err_text); why when err is NULL. */
void rc_group_abort_err(struct rc_group *g, const struct rc_err *err, const char *why);

/* A rank on several rails: fn(item i) for the n items of size bytes at
 * items, at once: item 0 on this thread, the others on a thread each; an
 * item whose thread cannot start gets nostart(item, errno) instead (NULL:
 * nothing). Returns when every one has ended. */
void rc_group_rails_run(int n, void (*fn)(void *item), void *items, size_t size,
			void (*nostart)(void *item, int err));
/* Rail i's failure (code: -errno, msg its message) as the rank's error:
 * "rail I (DEV): MSG", DEV rail i's device (g[i]'s). Returns code. */
int rc_group_rail_err(struct rc_group *const *g, int i, int code, const char *msg,
		      struct rc_err *err);

/* The head of a message a group over libfabric received (len bytes at
 * buf, group_fab.c): whether it is one of the group's (magic, kind), for
 * rank me of world, from a rank need[me * world + from] names, and no
 * longer than its kind allows: its kind (1 HELLO, 2 PROVE, 3 MSG) with
 * *from, *body and *blen (what follows the head: a control message,
 * rc_group_msg_check, for a MSG; nothing for the others), or -EPROTO. */
int rc_group_fab_head(const void *buf, size_t len, int me, int world, const uint8_t *need,
		      int *from, const void **body, size_t *blen);

/* Memory for the group's one-sided traffic over libfabric (where
 * rc_group_pd is NULL): len bytes at buf, host memory, registered for the
 * peers' writes (remote_write) and reads; lkey for rc_group_write_imm and
 * the others, rkey and raddr0 (the address that names buf's first byte)
 * for the peers; *h for rc_group_dereg. 0 or -errno. */
int rc_group_reg(struct rc_group *g, void *buf, size_t len, bool remote_write, uint32_t *lkey,
		 uint64_t *rkey, uint64_t *raddr0, void **h, struct rc_err *err);
void rc_group_dereg(struct rc_group *g, void *h);
#endif
