/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/conn.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_CONN_CORE_H
#define RDMACTL_CONN_CORE_H

#include <pthread.h>

#include <rdmactl/conn.h>

/* The handles rdmactl/conn.h declares opaque. */
#define RC_ACCEPT_DATA_MAX 196 /* what an RC accept (IB CM REP) carries */

struct rc_conn {
	struct rdma_event_channel *ech; /* own channel (client); NULL for accepted ones */
	struct rdma_cm_id *id;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	bool own_pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int sq_depth;
	int rq_depth;
	int send_sge; /* what the QP takes: rc_conn_opts.send_sge, capped */
	int timeout_ms;
	bool busy_poll;
	bool armed; /* CQ notification requested and not yet consumed */
	/* rc_poll_any: an error completion that came after successful ones in
	 * the same poll; those were returned first, this one is next */
	bool has_late_err;
	struct ibv_wc late_err;
	bool established;
	bool disconnected;
	char peer[RC_HOST_MAX + 8];
	char dev_name[64];
	uint8_t port_num;
	struct rc_shared *shared; /* the CQ it shares, not its own (or NULL) */
	uint32_t shared_qpn;      /* its QP number in shared's table */
	bool in_shared;           /* it is in that table */
	/* accepting side, rc_conn_opts.hold_access: the remote access the CM gave
	 * the QP, withheld until rc_conn_release_access (0: none held) */
	int held_access;
	/* connecting side: the private data of the peer's accept (the challenge of
	 * the control planes' handshake, base/auth_core.h), kept at ESTABLISHED */
	unsigned char accept_data[RC_ACCEPT_DATA_MAX];
	uint8_t accept_len;
	void *user; /* owner's data */
};

struct rc_listener {
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	char addr[RC_HOST_MAX];
	uint16_t port;
	char dev_name[64];
	uint8_t port_num;
};

/* A CM event, taken, acknowledged and sorted (rc_listener_next, rc_cm_poll). */
enum rc_cm_kind {
	RC_CM_REQUEST,     /* a connect request: rc_cm_accept or rc_cm_refuse it */
	RC_CM_ESTABLISHED, /* an accepted connection is up (conn->established set) */
	RC_CM_GONE,        /* a connection ended or failed (conn->disconnected set) */
	RC_CM_DEVICE_GONE, /* the device was removed: the listener is dead */
	RC_CM_OTHER,       /* nothing to do */
};

struct rc_cm_event {
	enum rc_cm_kind kind;
	enum rdma_cm_event_type type; /* rdma_event_str names it */
	struct rc_conn *conn;         /* ESTABLISHED, GONE: the accepted connection (or NULL) */
	bool was_established;         /* conn was up before this event */
	char why[96];                 /* GONE, DEVICE_GONE: "disconnected (EVENT)" and the like */
	/* REQUEST only: */
	struct rdma_cm_id *child;
	struct rdma_conn_param param; /* private_data points into the copy below */
	unsigned char private_data[256];
	char peer[RC_HOST_MAX + 8];
	bool other_device; /* it came in on another device than the listener's */
};

/*
 * One completion queue and channel, and optionally one shared receive
 * queue, for the connections a listener accepts on one device: no file
 * descriptor and no receive ring per peer (libcore/verbs/shared.c). The
 * connections that use it are found by the QP number of a completion.
 */
struct rc_shared_ent;
struct rc_shared {
	struct ibv_context *verbs;
	struct ibv_comp_channel *cch; /* poll its fd, then rc_shared_take */
	struct ibv_cq *cq;
	struct ibv_srq *srq; /* NULL: each connection has its own receive queue */
	int cqe;
	int srq_depth;
	bool armed;
	struct rc_shared_ent *ent; /* by QP number */
	size_t n, cap;
	pthread_mutex_t mu; /* the table: connections are made on several threads */
	/* rc_poll_any: completions polled but not yet handed out, in order */
	struct ibv_wc stash[32];
	int shead, nstash;
};

/* Connect to host:port; *out is established on success. */
int rc_connect(const char *host, const char *port, const struct rc_conn_opts *opts,
	       struct rc_conn **out, struct rc_err *err);
/* Next CM event of a connection made by rc_connect (disconnects, errors)
 * within timeout_ms (0: do not wait). -EAGAIN when none came; -EINVAL for an
 * accepted connection, whose events come to its listener. */
int rc_conn_event(struct rc_conn *c, int timeout_ms, struct rdma_cm_event **ev);
/* fd non-blocking: 0 or -errno. */
int rc_set_nonblock(int fd);
/* One non-blocking CM event channel for the events of many connections
 * (rc_conn_share_events), or NULL: each keeps its own. */
struct rdma_event_channel *rc_cm_channel(void);
/* A connection made by rc_connect sends its CM events to ech from now on
 * (ev->id->context is c) and its own channel goes; false when it keeps its
 * own (ech NULL, or the move failed). Close c before ech. */
bool rc_conn_share_events(struct rc_conn *c, struct rdma_event_channel *ech);
/* The reason a peer gave in the private data of its reject (len bytes at
 * pd, NULL: none): the printable ASCII up to the first other byte, at most
 * cap - 1 bytes, into out with a NUL. Returns its length (0: none given). */
size_t rc_reject_reason(const void *pd, size_t len, char *out, size_t cap);
/* The errno a connect refused for reason (rc_reject_reason's) comes back
 * with: EKEYREJECTED for an authentication refusal, a reason of rdmactl's
 * in one of the words of such a refusal ("not authorised", "invalid token",
 * "a token is required", a rank that "has no group token"); ECONNREFUSED for
 * any other, a refusal that only mentions a token too ("no admin token here",
 * "too many connections still proving their token": no credential refused).
 * The one place the two are told apart. */
int rc_reject_errno(const char *reason);
/* Disconnect and free everything; returns the first error, releases all. */
int rc_conn_close(struct rc_conn *c);

/* Listen on addr:port (addr may be a wildcard only when dev_name is given). */
int rc_listen(const char *addr, const char *port, const char *dev_name, struct rc_listener **out,
	      struct rc_err *err);
int rc_listener_close(struct rc_listener *l);
/* Next event on the listener's channel within timeout_ms (-1: wait forever,
 * 0: do not wait). -EAGAIN when none came. */
int rc_listener_event(struct rc_listener *l, int timeout_ms, struct rdma_cm_event **ev);
/* The private data of the accept that established c (connecting side), and
 * its length; a sorted ESTABLISHED event for a connection made on a shared
 * channel keeps it through rc_conn_keep_accept. */
const unsigned char *rc_conn_accept_data(const struct rc_conn *c, size_t *len);
void rc_conn_keep_accept(struct rc_conn *c, const void *data, size_t len);

/* Build the QP for a connect request and accept it. o->private_data, when set, goes in
 * the accept (at most RC_ACCEPT_DATA_MAX bytes). */
int rc_accept(struct rc_listener *l, struct rdma_cm_id *child, const struct rdma_conn_param *req,
	      const struct rc_conn_opts *opts, struct rc_conn **out, struct rc_err *err);
/* rdma_accept(child, cp), child's QP taken to RTR and RTS here with a RNR
 * retry count of rnr_retry (0 to 7) instead of the one the peer asked for
 * (qp_ready.c). 0 or -errno. */
int rc_accept_own_rnr(struct rdma_cm_id *child, struct rdma_conn_param *cp, int rnr_retry);
/* Set the remote access of c's QP (IBV_ACCESS_REMOTE_* bits; 0 withholds every
 * remote READ, WRITE and atomic): a control plane's QP that has not proved
 * its peer yet, or one that only ever carries messages. *was (may be NULL)
 * gets the access it had. 0, or -EIO (query) or -EPERM (modify). */
int rc_qp_remote_access(struct rc_conn *c, int access, int *was);
/* Give c's QP the remote access rc_conn_opts.hold_access withheld (its peer
 * proved itself). 0 (nothing held, too) or -errno. */
int rc_conn_release_access(struct rc_conn *c);
/* Refuse a connect request, with a reason the peer can read. */
void rc_reject(struct rdma_cm_id *child, const char *reason);

/* The next event within timeout_ms (as rc_listener_event): 0 with *ev filled,
 * -EAGAIN when none came. The event is acknowledged already. */
int rc_listener_next(struct rc_listener *l, int timeout_ms, struct rc_cm_event *ev);
/* Sort ev into out, without acknowledging it; l: the listener whose channel
 * it came on (NULL: a connecting side's). The one place where a CM event
 * changes a connection's state (established, disconnected) and where a gone
 * one gets its why; rc_listener_next and rc_cm_poll take events so. */
void rc_cm_sort(const struct rdma_cm_event *ev, const struct rc_listener *l,
		struct rc_cm_event *out);
/* The next event of a connecting side's channel (rc_cm_channel's, or a
 * connection's own), if one is there: never waits. 0 with *ev filled (conn:
 * the connection it names; a request is OTHER here), -EAGAIN when none. */
int rc_cm_poll(struct rdma_event_channel *ech, struct rc_cm_event *ev);
/* Accept a REQUEST: build its QP as o says (on_qp runs before the accept). On
 * failure the request is still the caller's to refuse. */
int rc_cm_accept(struct rc_listener *l, struct rc_cm_event *ev, const struct rc_conn_opts *o,
		 struct rc_conn **out, struct rc_err *err);
/* Refuse a REQUEST with a reason the peer can read, and free its id. */
void rc_cm_refuse(struct rc_cm_event *ev, const char *why);
/* Format an id's peer as "addr:port". */
void rc_peer_name(struct rdma_cm_id *id, char *buf, size_t len);

/* cqe entries (at most what the device allows: the sum of the send queues
 * of every connection and the receive queue), srq_depth receives shared
 * (0: none). */
int rc_shared_create(struct ibv_pd *pd, int cqe, int srq_depth, struct rc_shared **out,
		     struct rc_err *err);
/* Free it, once every connection on it is closed. */
int rc_shared_destroy(struct rc_shared *sh);
/* Completions of any connection, as rc_cq_take: never sleeps, leaves an
 * empty CQ armed. */
int rc_shared_take(struct rc_shared *sh, struct ibv_wc *wc, int max);
/* The connection whose QP has that number (wc->qp_num), or NULL: it was
 * closed, and this completion was left behind. */
struct rc_conn *rc_shared_conn(struct rc_shared *sh, uint32_t qpn);
/* Post a receive to the shared receive queue; user is the wr_id's value. */
int rc_shared_post_recv(struct rc_shared *sh, void *buf, uint32_t len, uint32_t lkey, uint64_t user,
			struct rc_err *err);
/* What rc_shared_drain hands each completion to, with the connection its QP
 * number maps to: NULL when none (closed since; its slot may still be owed). */
typedef void rc_shared_fn(void *arg, struct rc_conn *c, const struct ibv_wc *wc);
/* Take completions until none are left or budget were taken (one busy peer
 * does not hold the caller's loop), each handed to fn in order. Returns how
 * many were taken, or -EIO. sh NULL: none. */
int rc_shared_drain(struct rc_shared *sh, int budget, rc_shared_fn *fn, void *arg);
/* conn.c's: c, about to get a QP on verbs, takes sh's CQ, channel and receive
 * queue (*srq); -EXDEV when sh is on another device. */
int rc_shared_use(struct rc_shared *sh, struct rc_conn *c, struct ibv_context *verbs,
		  struct ibv_srq **srq, struct rc_err *err);
/* conn.c's: a connection joins the table once its QP exists, leaves it as
 * it closes. */
int rc_shared_add(struct rc_shared *sh, struct rc_conn *c);
void rc_shared_remove(struct rc_shared *sh, struct rc_conn *c);

#endif
