/* SPDX-License-Identifier: MIT */
/* Inside the group layer: the group's state, shared by its files. */
#ifndef RDMACTL_GROUP_INT_H
#define RDMACTL_GROUP_INT_H

#include <pthread.h>

#include <rdmactl/group.h>
#include <rdmactl/parse.h>
#include <rdmactl/group_core.h>
#include <rdmactl/msgch_core.h>
#include <rdmactl/ops_core.h>

/* CQs shared by a group's connections at most (as many as the device's
 * largest CQ makes needed); a group that needs more gets one each. */
#define GROUP_CQ_MAX RC_SHARED_SET_MAX
/* The largest CQ --plan sizes for: ConnectX's (rxe's holds 32767). */
#define GROUP_PLAN_MAX_CQE 4194303L

#define GROUP_MAGIC 0x72646d67u /* "rdmg" */
#define ABORT_MAGIC 0x72646d61u /* "rdma": the sender gave up, data says why */
#define FIN_MAGIC 0x72646d66u   /* "rdmf": the sender is closing; all it sent landed */
#define IMM_CHANNELS 4

/* A control message as it travels. */
struct gmsg {
	uint32_t magic;
	uint32_t seq;
	uint32_t from;
	uint32_t len;
	uint8_t data[RC_GROUP_MSG_MAX];
};
#define GMSG_SLOT 1024

/* What a connecting rank says in its connect request: who it is and, in a
 * group with a token, a proof that it holds the token (group_proof) over a
 * nonce and the ranks at both ends; all zeros without a token. It fits the
 * 56 bytes an RC connect request carries. The nonce is fresh for every try
 * (group_nonce): the wall clock's seconds, then random bytes, so a rank
 * refuses a request made more than GHELLO_WINDOW_S from its own clock, and
 * one whose nonce it saw before (struct gseen): a request copied off the
 * wire admits no one, in this job or a later one with the same token. */
#define GHELLO_WINDOW_S 300
#define GHELLO_NONCE 16
#define GHELLO_PROOF 24
#define GHELLO_LABEL "rdmactl group join v2"
struct ghello {
	uint32_t magic;
	uint32_t rank;
	uint32_t world;
	uint8_t nonce[GHELLO_NONCE];
	uint8_t proof[GHELLO_PROOF];
	/* the connector's try, 1 up (0: a hello without it): a request of an
	 * earlier try than the one a rank holds half open came late, and is no
	 * new try */
	uint32_t attempt;
};
_Static_assert(sizeof(struct ghello) <= 56, "a group hello fits a connect request");

/* The proof of h (its magic, rank, world, try and nonce) for the rank to, under
 * token (NULL or "": all zeros). */
void group_proof(const char *token, const struct ghello *h, uint32_t to,
		 uint8_t proof[GHELLO_PROOF]);
/* The nonces of the requests whose proof held, sorted; seen before is a
 * replay. */
struct gseen {
	uint8_t (*n)[GHELLO_NONCE];
	size_t len, cap;
};
void group_seen_free(struct gseen *s);
/* A fresh nonce made at now (seconds since the epoch); 0 or -errno. */
int group_nonce(uint8_t nonce[GHELLO_NONCE], uint64_t now);
/* Whether a connect request of len bytes at pd may join the group of rank
 * me, world, token: NULL with *h filled, or the reason to refuse it, prefixed
 * "rdmactl: " (the reject's private data). The token comes first: a peer
 * without it learns nothing of the group. need says whom me expects, and
 * taken which ranks are connected already (either may be NULL: nobody).
 * With a token, a proof made further than GHELLO_WINDOW_S from now is
 * stale, and one whose nonce seen holds is a replay; a proof that holds
 * joins seen (NULL: no memory, no replay check). */
const char *group_hello_check(const void *pd, size_t len, int me, int world, const char *token,
			      const uint8_t *need, const bool *taken, uint64_t now,
			      struct gseen *seen, struct ghello *h);
/* A refusal with one of group_hello_check's reasons that another try cannot
 * mend (not a member, no token or a wrong one, another world size, a rank the
 * peer does not expect), found in the connector's message msg. "That rank is
 * connected already" is not one: the peer may still hold an earlier try. */
bool group_refusal_final(const char *msg);
/* A request h, checked, from a rank whose try held (accepted, not yet
 * established) is held (0: none): NULL when h is a later try, which takes
 * the rank's place, else the reason to refuse it. A connect request can come
 * after a later one of the same rank (the connection manager resends it, or
 * queues it behind others): taking it would close the try its connector
 * holds established and wait for one whose connector is gone. */
const char *group_hello_order(const struct ghello *h, uint32_t held);

struct gpeer {
	struct rc_conn *c;
	bool accepted;              /* the connection came to our listener */
	bool dead;                  /* disconnected: its CQ is drained before failing */
	bool failed;                /* keep_going: an error completion failed this peer only */
	char why[RC_GROUP_MSG_MAX]; /* ... and the completion error */
	int link;             /* partial: enum rc_link, why the connect failed (why says how) */
	uint64_t writes_done; /* one-sided writes to it completed (the last piece of each) */
	uint32_t max_msg;     /* the largest piece a write to it is posted in (0: not asked yet) */
	uint64_t imm[IMM_CHANNELS];
	int sends_out;    /* signalled work requests not completed */
	bool fin;         /* its FIN came: nothing it sent us is unacknowledged */
	struct gmsg *box; /* received messages not yet taken, a ring that grows */
	int box_head;
	int box_n;
	int box_cap;
	int slot;         /* its connection in the message channel (ch); -1: not connected */
	uint32_t attempt; /* accepted: the connector's try (struct ghello) */
	struct {
		struct rc_group *g;
		int rank;
	} qp_arg;
};

struct rc_group {
	struct rc_group_opts o;
	struct rc_listener *l;
	struct rc_shared *sh[GROUP_CQ_MAX]; /* the CQs every connection shares, slot % nsh */
	int nsh;                            /* 0: each connection has its own */
	struct rdma_event_channel *ech;     /* the CM events of the connections it made */
	struct gseen seen;                  /* the connect requests' nonces (accept thread) */
	struct rc_endpoint self;
	struct gpeer *peers;    /* world of them */
	struct rc_conn **conns; /* connected peers, for polling (world at most) */
	int *conn_rank;
	int nconns;
	uint8_t *need; /* world x world */
	int nslots;    /* peers this rank connects with: their connections in ch */
	/* the message channel (verbs/msgch_core.h): recv_depth receive slots
	 * and one send slot of GMSG_SLOT bytes for each of those peers */
	struct rc_msgch ch;
	int *parent;                  /* the barrier's tree (group_tree): each rank's parent */
	int depth;                    /* its depth; -1: the plan leaves ranks unreachable */
	double rdv_s;                 /* rc_group_join: the rendezvous exchange took */
	double connect_s;             /* rc_group_connect took */
	double barrier_s;             /* the first barrier took; < 0: none yet */
	struct rc_rdv *rdv;           /* rc_group_join's: closed with the group */
	char token[RC_TOKEN_MAX + 1]; /* "": none (rc_group_opts.token) */
	uint32_t seq;                 /* control exchanges so far */
	bool aborted;                 /* a peer gave up: every wait fails with its reason */
	bool gave_up;                 /* rc_group_abort was called: no FIN at close */
	char abort_msg[RC_GROUP_MSG_MAX + 32];
	/* while connecting: the accepting thread */
	pthread_mutex_t mu;
	int expect_accepts;
	int accepted;
	bool stop_accept;
	int accept_rc;
	struct rc_err accept_err;
};

/* Whether the send slot of peer p is in flight (only the peers this rank
 * connects with have one: gpeer.slot, so the registered area grows with this
 * rank's connections, not with the world). */
static inline bool send_busy(const struct rc_group *g, const struct gpeer *p)
{
	return p->slot >= 0 && g->ch.conn && rc_msgch_send_room(&g->ch, p->slot) <= 0;
}

/* A spanning tree of the connection graph need (W x W, symmetric) from
 * root, for the barrier and the allgather: breadth first, each rank
 * adopting at most fanout children while another rank can take the rest, so
 * a dense graph gives a tree of depth about log_fanout(W) and a sparse one
 * follows its edges. parent[root] = -1, and -2 for a rank the graph does not
 * reach. Returns the depth, -1 when a rank is unreachable, or -ENOMEM. The
 * same on every rank for the same need (group_tree.c). */
int group_tree(const uint8_t *need, int W, int root, int fanout, int *parent);

/* The group's sizes, one function each, for the running group and for
 * rc_group_plan_rank alike (group_plan.c). */
#define GROUP_RECV_DEPTH 32 /* receives kept posted per connection, unless asked */
#define GROUP_SQ_DEPTH 128  /* sends per connection, unless asked */
/* Receives a shared receive queue keeps posted for each of its connections
 * beyond the receive depth: a connection has one message in flight (one
 * send slot), and one more lands while the first is being copied out. */
#define GROUP_SRQ_PER_CONN 2
/* Messages of one peer received and not yet taken: a peer further ahead
 * than that is out of step, not merely early. */
#define GROUP_BOX_MAX 4096
#define GROUP_CONNECT_AT_ONCE 16 /* connects in flight at once, the calling thread's too */
#define GROUP_TREE_FANOUT 8      /* children per rank in the barrier's tree */
int group_recv_depth(int asked);
/* Message m of peer j into its box, which grows (doubling from 4) to
 * GROUP_BOX_MAX: 0, or -EPROTO for a peer further ahead than that (out of
 * step), -ENOMEM. */
int group_box_push(struct gpeer *p, int j, const struct gmsg *m, struct rc_err *err);
/* Bytes of the message channel of nslots peers on nsh shared CQs: a shared
 * receive queue's slots each (group_srq_depth) and one send slot a peer; nsh
 * 0, recv_depth receive slots and one send slot a peer. */
size_t group_ring_len(int nslots, int nsh, int recv_depth);
/* The receives of a shared receive queue of conns connections. */
int group_srq_depth(int conns, int recv_depth);
/* Those of the nsh shared receive queues of nslots connections together. */
int group_shared_recvs(int nslots, int nsh, int recv_depth);
/* The shared CQs (and their receive queues) of nslots connections with
 * sq_depth sends each, on a device whose largest CQ holds max_cqe (more
 * than GROUP_CQ_MAX: a CQ and a receive ring per connection instead). */
int group_shared_cqs(int nslots, int sq_depth, int recv_depth, long max_cqe);
/* Completion queues the connections of nconns peers use, each taking
 * per_conn entries (its send and receive queues) on a device whose largest
 * CQ holds max_cqe: as few shared ones as hold them, GROUP_CQ_MAX at most;
 * more, one per connection. */
int group_cqs(int nconns, long per_conn, long max_cqe);
/* Rounds of GROUP_CONNECT_AT_ONCE connects for this many peers. */
int group_connect_rounds(int connects);

/* The message channel of the peers this rank connects with (g->need) and
 * the CQs they share (group_chan.c). */
int group_rings(struct rc_group *g, struct rc_err *err);
int group_post_recvs(struct rc_group *g, int j, struct rc_err *err);
/* Control messages (group_io.c): a round of them of len bytes at most (its
 * number, its deadline); one to peer j, when its send slot is free; the
 * next from j, of len bytes, checked; until every one sent was acknowledged
 * (skip_dead: but those to a peer that died). */
int group_msg_round(struct rc_group *g, size_t len, double *deadline, struct rc_err *err);
int group_send_msg(struct rc_group *g, int j, const void *data, size_t len, double deadline,
		   struct rc_err *err);
int group_take_msg(struct rc_group *g, int j, void *out, size_t len, double deadline,
		   struct rc_err *err);
int group_sends_acked(struct rc_group *g, double deadline, bool skip_dead, struct rc_err *err);
/* Reap completions and CM events for up to timeout_ms. 0 or -errno. */
int group_progress(struct rc_group *g, int timeout_ms, struct rc_err *err);
/* One slice of waiting: reap for a while, or -ETIMEDOUT at the deadline. */
int group_wait_slice(struct rc_group *g, double deadline, struct rc_err *err);
/* -ECONNRESET: peer j left the group (or failed, and why) while what. */
int group_peer_gone(struct rc_group *g, int j, const char *what, struct rc_err *err);
/* The next message in peer j's box, of len bytes, checked, into out: 1, 0
 * when the box is empty, or -errno (the waits of group_take_msg are the
 * caller's). */
int group_pop_msg(struct rc_group *g, int j, void *out, size_t len, struct rc_err *err);
/* wr_id user bit of a write's piece that is not its last: its completion
 * frees a send-queue slot but is not a write done (group_onesided.c posts
 * the pieces, group_progress counts them). */
#define PIECE_NOT_LAST (1ULL << 40)
/* partial: the ranks agree on the pairs that could not connect, which
 * leave the plan, and the tree is built again around them; -EHOSTUNREACH
 * naming the ranks that the pairs left cut off (group_links.c). */
int group_agree_links(struct rc_group *g, struct rc_err *err);

/* Every rank's vals[n] added up, on every rank: up the barrier's tree and
 * down again (group_coll.c; a rank that alone fills a slot sends it to all). */
int group_tree_sum(struct rc_group *g, uint64_t *vals, size_t n, struct rc_err *err);

/* The closing handshake of a group that ended well (group_io.c). */
void group_fin(struct rc_group *g, int timeout_ms);

#endif
