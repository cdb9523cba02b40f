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
#include <rdmactl/pipe_core.h>
#include <rdmactl/auth_core.h>
#include <rdmactl/conn_core.h>

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

/*
 * Joining under a token: mutual challenge-response (base/auth_core.h) on
 * each connection, plane "group". The connecting rank's request (struct
 * ghello) says who it is and carries a fresh nonce cn, and no proof; the
 * accepting rank answers in its accept (struct gaccept) with its own fresh
 * nonce sn and its proof; the connecting rank checks that proof before it
 * uses the connection, then sends its own proof as its first message
 * (PROOF_MAGIC); the accepting rank checks it before the connection joins
 * the group: until then the connection is a candidate (struct gcand), which
 * holds no rank's place (several may claim one rank; the first proven takes
 * it; once GHELLO_CANDIDATES claim it, the oldest that was given
 * GHELLO_PROVE_MS makes room, not the newcomer). Inside every MAC: both nonces,
 * the job (struct gjob: the rendezvous' job and both ranks' endpoints), both
 * ranks, the world size and the two queue pair numbers, so that a request,
 * an answer or a proof copied off the wire is worth nothing on any other
 * connection, in this job or a later one. No replay memory is needed.
 * Protocol 3; a request of protocol 2 (which began with GROUP_MAGIC and
 * carried a replayable proof) is refused by name.
 */
#define GHELLO_MAGIC 0x72646d33u /* "rdm3": a connect request of protocol 3 */
#define GHELLO_TOKEN 1u          /* ghello.flags: the connecting rank holds a token */
#define PROOF_MAGIC 0x72646d70u  /* "rdmp": the connecting rank's proof, its first message */
#define GHELLO_PROVE_MS 5000     /* an accepted candidate's time to prove */
#define GHELLO_CANDIDATES 4      /* unproven connections held for one rank at once */
struct ghello {
	uint32_t magic;
	uint32_t rank;
	uint32_t world;
	uint32_t flags;
	uint8_t cn[RC_AUTH_NONCE];
};
_Static_assert(sizeof(struct ghello) <= 56, "a group hello fits a connect request");
struct gaccept {
	uint32_t magic; /* GHELLO_MAGIC */
	uint8_t sn[RC_AUTH_NONCE];
	uint8_t proof[RC_AUTH_MAC];
};
_Static_assert(sizeof(struct gaccept) <= RC_ACCEPT_DATA_MAX, "a group answer fits an accept");

/* What binds a connection's proofs to one job (group_auth): the digest of
 * the rendezvous' job and the two ranks' endpoints as the rendezvous gave
 * them. */
struct gjob {
	const char *job; /* "etcd/JOB", "file" (rc_group_join), or "" */
	const struct rc_endpoint *all;
};
/* The exchange of connecting rank from with accepting rank to in a world,
 * on queue pairs qp_from and qp_to: a's plane and context, nonces cleared. */
void group_auth(struct rc_auth *a, const struct gjob *job, uint32_t from, uint32_t to,
		uint32_t world, uint32_t qp_from, uint32_t qp_to);
/* Whether a connect request of len bytes at pd may become a candidate for
 * the group of rank me, world, token: NULL with *h filled, or the reason to
 * refuse it, prefixed "rdmactl: " (the reject's private data). need says
 * whom me expects, and proven which ranks are in the group already (either
 * may be NULL: nobody). */
const char *group_hello_check(const void *pd, size_t len, int me, int world, const char *token,
			      const uint8_t *need, const bool *proven, struct ghello *h);
/* A refusal with one of group_hello_check's reasons that another try cannot
 * mend (not a member, an older protocol, no token or one the rank has not,
 * another world size, a rank the peer does not expect), found in the
 * connector's message msg. */
bool group_refusal_final(const char *msg);
/* The accepting rank's answer over a (both nonces set) under token. */
void group_accept_fill(struct gaccept *ga, const char *token, const struct rc_auth *a);
/* The connecting rank's check of an answer of len bytes at data over a (cn
 * set; sn taken from the answer) under token: NULL, or what the peer failed
 * to prove ("did not prove the group token", ...). */
const char *group_accept_check(const void *data, size_t len, const char *token, struct rc_auth *a);
/* The connecting rank's first message, its proof over a: a control message
 * of its own kind from rank from. */
void group_proof_msg(struct gmsg *m, uint32_t from, const char *token, const struct rc_auth *a);
/* The accepting rank's check of a first message of len bytes at m from a
 * candidate for rank from: NULL, or why it is refused. */
const char *group_proof_check(const void *m, size_t len, uint32_t from, const char *token,
			      const struct rc_auth *a);

/* A connection accepted for a rank and not yet proven (group_prove.c). */
struct gcand {
	struct rc_group *g;
	struct rc_conn *c;
	int rank;
	bool up;          /* established */
	bool gone;        /* disconnected, or failed */
	bool dropped;     /* refused: disconnected, its completions reaped a while */
	bool holder;      /* no shared receive queue: the rank's receive ring is posted to it */
	double since;     /* accepted (dropped) at */
	uint32_t qp_from; /* the connecting side's queue pair */
	uint8_t cn[RC_AUTH_NONCE];
	struct rc_auth a;
	struct gaccept ga; /* the accept's private data */
};
/* Candidates held at once, dropped ones included: GHELLO_CANDIDATES for
 * each rank of the world, and as many again. */
#define GROUP_CAND_MAX(g) (2 * GHELLO_CANDIDATES * (g)->o.world)
/* Under g->mu: the live candidates for rank, and the candidate of c. */
int group_cands(const struct rc_group *g, int rank);
struct gcand *group_cand_of(const struct rc_group *g, const struct rc_conn *c);
/* Under g->mu: whether a request for rank may be a candidate; when the
 * rank's GHELLO_CANDIDATES places are full, the oldest that was given
 * GHELLO_PROVE_MS and did not prove itself goes. */
bool group_cand_room(struct rc_group *g, int rank);
/* The accepting thread: accept ev, a request checked (h), as a candidate on
 * CQ cq: NULL, or why not (ev is still the caller's to refuse). */
const char *group_cand_accept(struct rc_group *g, struct rc_cm_event *ev, const struct ghello *h,
			      struct rc_shared *cq);
/* The calling thread, its connects done: reap every connection, take the
 * candidates' proofs, until every rank below that it expects proved itself,
 * the accepting thread gave up, or the deadline. 0 or -errno. */
int group_prove(struct rc_group *g, double deadline, struct rc_err *err);
/* Close the candidates left (the accepting thread stopped). */
void group_cands_close(struct rc_group *g);
/* Completion wc of peer j, as the group takes it (group_io.c). */
int group_on_wc(struct rc_group *g, int j, const struct ibv_wc *wc, struct rc_err *err);
/* Peer j's connection's name in errors: "rank J (HOST:PORT)" (group_chan.c). */
void group_name_peer(struct rc_group *g, int j, const struct rc_endpoint *ep);
/* The same text into out (len bytes), for either transport. */
void group_peer_text(char *out, size_t len, int j, const struct rc_endpoint *ep);

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
	int sends_out;       /* control messages sent and not completed */
	struct rc_pipe pipe; /* one-sided writes and reads: the engine's queue (group_onesided.c) */
	bool fin;            /* its FIN came: nothing it sent us is unacknowledged */
	struct gmsg *box;    /* received messages not yet taken, a ring that grows */
	int box_head;
	int box_n;
	int box_cap;
	int slot; /* its connection in the message channel (ch); -1: not connected */
	/* over libfabric (group_fab.c): proven, a message of ours in flight to it,
	 * and its name in messages (over verbs: its connection's) */
	bool fab_up;
	bool fab_tx;
	char name[96];
};

/* Work requests on p's send queue: control messages and one-sided ones. */
static inline int gpeer_sq_used(const struct gpeer *p)
{
	return p->sends_out + (int)rc_pipe_outstanding(&p->pipe);
}

struct rc_group {
	struct rc_group_opts o;
	struct rc_listener *l;
	struct rc_shared *sh[GROUP_CQ_MAX]; /* the CQs every connection shares, slot % nsh */
	int nsh;                            /* 0: each connection has its own */
	struct rdma_event_channel *ech;     /* the CM events of the connections it made */
	struct gcand **cand;                /* unproven accepted connections (under mu) */
	int ncand, cand_cap;
	const struct rc_endpoint *all;   /* rc_group_connect's: every rank's endpoint */
	char job[160];                   /* struct gjob's job (rc_group_join) */
	char unproven[RC_GROUP_MSG_MAX]; /* why the last candidate was dropped */
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
	struct gfab *fab;             /* over libfabric (group_fab.c): NULL over verbs */
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
	bool accept_done; /* the accepting thread returned */
	int accept_rc;
	struct rc_err accept_err;
};

/* Whether the send slot of peer p is in flight (only the peers this rank
 * connects with have one: gpeer.slot, so the registered area grows with this
 * rank's connections, not with the world). */
static inline bool send_busy(const struct rc_group *g, const struct gpeer *p)
{
	if (g->fab)
		return p->fab_tx;
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
/* The connection plan need (W x W) checked symmetric and taken, with the
 * barrier's tree from it: 0, -EINVAL or -ENOMEM. */
int group_take_plan(struct rc_group *g, const uint8_t *need, struct rc_err *err);

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
/* A buffer of len bytes in control messages (group_gather.c): how many, and
 * the length of piece c. */
size_t group_pieces(size_t len);
size_t group_piece_len(size_t len, size_t c);

/* The closing handshake of a group that ended well (group_io.c). */
void group_fin(struct rc_group *g, int timeout_ms);

/* Peer j's name in messages: its connection's ("rank J (HOST:PORT)"), or
 * over libfabric the same, kept in the peer. */
static inline const char *gpeer_name(const struct gpeer *p)
{
	return p->c ? p->c->peer : p->name;
}
/* Whether this rank talks to p: a connection over verbs, a proven address
 * over libfabric. */
static inline bool gpeer_linked(const struct gpeer *p)
{
	return p->c || p->fab_up;
}

/* A group's state before it listens or links (rc_group_listen and the
 * libfabric join share it): 0 or -errno. */
int group_alloc(const struct rc_group_opts *o, struct rc_group **out, struct rc_err *err);
/* A control message m of len bytes from peer j (checked here): FIN, ABORT,
 * or one for its box (group_io.c; both transports). */
int group_on_msg(struct rc_group *g, int j, const struct gmsg *m, size_t len, struct rc_err *err);

/*
 * The group over libfabric (group_fab.c): one RDM endpoint a rank, bound to
 * the address the rendezvous publishes; peers are address-vector entries.
 * What an RC connection gives over verbs is built here: each pair proves
 * the token both ways before either reveals anything (the rank's nonce for
 * the pair in a HELLO; the proof over both nonces in a PROVE), every later
 * message carries a MAC under the pair's session key and a counter that
 * only goes up, and a write's immediate data names the writer's rank.
 */
/* Open the endpoint of provider prov at self (its port filled in, where
 * it was 0). */
int group_fab_open(struct rc_group *g, const char *prov, struct rc_endpoint *self,
		   struct rc_err *err);
/* Address every peer need names and prove each pair, by the timeout. */
int group_fab_connect(struct rc_group *g, const struct rc_endpoint *all, const uint8_t *need,
		      struct rc_err *err);
void group_fab_close(struct rc_group *g);
/* group_progress, group_send_msg's post and post_to_all over libfabric. */
int group_fab_progress(struct rc_group *g, int timeout_ms, struct rc_err *err);
int group_fab_send(struct rc_group *g, int j, uint32_t magic, const void *data, size_t len,
		   struct rc_err *err);
/* Peer j's endpoint behind the engine's seam, and its largest write. */
void *group_fab_ep(struct rc_group *g, int j);
uint32_t group_fab_max_msg(const struct rc_group *g);
/* The domain, as libfabric names it. */
const char *group_fab_domain(const struct rc_group *g);
/* Bytes registered for its messages (the receive and send slots). */
uint64_t group_fab_ring_bytes(const struct rc_group *g);

#endif
