/* SPDX-License-Identifier: MIT */
/* The region server's state, between server.c (the server: its listener,
 * regions, flush and event loop) and srv_conn.c (its connections). */
#ifndef RDMACTL_SERVER_INT_H
#define RDMACTL_SERVER_INT_H

#include <stdbool.h>

#include <rdmactl/server.h>
#include <rdmactl/msgch_core.h>
#include <rdmactl/ctrl_core.h>

#include "srv_mig.h"

/* Requests of one connection answered at once (its replies in flight); the
 * next ones wait in its backlog. */
#define SRV_CREDITS 16
/* Requests one connection may leave unanswered, in flight and waiting: a
 * peer past it is dropped, so that no one peer holds the shared buffers. */
#define SRV_HOLD_MAX 128
/* The control slots each connection may always hold: the pool has these
 * for every connection --max-conns allows, and a few more that a burst
 * may borrow while no one else holds them (srv_pool.c); a connection past
 * its own with none left to borrow is dropped at once. */
#define SRV_CONN_SLOTS 4
/* The server's replies meet a peer with no receive posted this many
 * times before they fail (and the connection with them), whatever the
 * peer asked for: 7 would be for ever. */
#define SRV_RNR_RETRY 6
#define SRV_MAX_CONNS 1024
/* Connections accepted and not yet proved (srv_auth.c): at most so many,
 * each for at most so long. */
#define SRV_AUTH_PENDING 16
#define SRV_AUTH_MS 3000

enum srv_slot_state {
	SLOT_POSTED,  /* in the shared receive queue */
	SLOT_QUEUED,  /* a request received, in its connection's backlog */
	SLOT_BUSY,    /* being handled, or waiting for the worker's answer */
	SLOT_SENDING, /* its reply in flight */
};

struct srv_slot {
	struct srv_conn *owner; /* QUEUED, BUSY, SENDING: whose request */
	uint32_t len;           /* the request's bytes */
	uint32_t imm;           /* an immediate's value */
	bool has_imm;           /* an RDMA WRITE with immediate, not a request */
	enum srv_slot_state state;
};

/*
 * The control channel: the verbs message channel's pool form (a pair of a
 * request and its reply per slot, verbs/msgch_core.h), shared by every
 * connection through one shared receive queue: a request lands in any free
 * slot, its reply goes from the same slot's reply half, and the slot goes
 * back to the queue once that reply was sent (so no reply is overwritten in
 * flight). Who holds a slot, and how far its request got, is kept here.
 */
struct srv_pool {
	struct rc_msgch ch;
	struct srv_slot *slot;
	int n;
	int extra;    /* the slots beyond SRV_CONN_SLOTS a connection */
	int borrowed; /* of them, held now: past their own by every connection */
};

struct srv_conn {
	struct rc_conn *c;
	double probe_at;        /* next keepalive probe */
	double probe_sent;      /* the one in flight */
	bool probing;           /* one in flight */
	bool admin;             /* it presented the admin token: migration steps */
	bool handling;          /* one of its requests is being handled: a fence's
				 * drain leaves the next ones in the backlog */
	int inflight;           /* its slots BUSY or SENDING */
	bool doomed;            /* to be dropped once its handling is done */
	char doom_why[512];     /* the size of struct rc_err's message */
	int back[SRV_HOLD_MAX]; /* its QUEUED slots, the oldest at bhead */
	int bhead, nback;
	/* protocol 2's handshake (srv_auth.c): served once it proved its token */
	bool authed;
	uint8_t role;        /* enum rc_ctrl_role it asked for */
	double auth_by;      /* dropped if it has not proved it by then */
	struct rc_auth auth; /* its nonces, plane and context */
};

struct rc_server {
	struct rc_server_opts o;
	char token[RC_TOKEN_MAX + 1];
	char admin[RC_TOKEN_MAX + 1];
	struct rc_listener *l;
	struct rc_gid_info gid;
	struct rc_region regions[RC_MAX_REGIONS];
	int nregions;
	struct rc_shared *sh; /* one CQ and one receive queue for every connection */
	struct srv_pool pool;
	struct srv_conn **conns; /* max_conns of them */
	int nconns;
	int max_conns;
	bool draining;       /* a fence's drain_all is under way */
	struct srv_mig *mig; /* a migration's pull connection and hash */
	struct {
		double at;  /* the next pass starts then */
		bool on;    /* a pass is under way */
		int reg;    /* the region it writes back */
		size_t off; /* and how far it got there */
	} flush;
	/* Its counters, conns too: the server's thread counts (SRV_COUNT), another
	 * may read them at any time (rc_server_stats, a register on several rails). */
	struct rc_server_stats st;
};

#define SRV_COUNT(s, field, n) __atomic_fetch_add(&(s)->st.field, (n), __ATOMIC_RELAXED)

/* The control buffers and the shared CQ for max_conns connections. */
int srv_pool_create(struct rc_server *s, struct rc_err *err);
void srv_pool_destroy(struct rc_server *s);
/* The CM events waiting on the listener: connect requests are admitted or
 * refused, established and gone connections counted and dropped. 0, or
 * -ENODEV when the device went away. */
int srv_handle_cm(struct rc_server *s, struct rc_err *err);
/* Probe the connections that are due, drop those that stopped answering. */
void srv_keepalive(struct rc_server *s);
/* The completions of every connection, a bounded number of them: true when
 * some may be left (call again without sleeping). */
bool srv_poll_cq(struct rc_server *s);
/* What srv_mig.c may use of s. */
struct srv_mig_host srv_mig_host_of(struct rc_server *s);
/* sc goes: peer_gone, its peer left already; tell, an event says so (why:
 * the reason, which counts it as dropped, or NULL). */
void srv_drop_conn(struct rc_server *s, struct srv_conn *sc, bool peer_gone, bool tell,
		   const char *why);

/* Protocol 2's handshake (srv_auth.c). A connect request's HELLO, checked
 * into sc (its role, nonces, deadline) with the CHALLENGE for the accept in
 * chal (*chal_len bytes): 0, or -1 with the reason to refuse it in why. */
int srv_auth_admit(struct rc_server *s, const struct rc_cm_event *ev, struct srv_conn *sc,
		   unsigned char *chal, size_t *chal_len, char *why, size_t cap);
/* The first message of sc, not yet served, in slot i: its AUTH, checked
 * and answered (0), or -1 with why it goes now. */
int srv_auth_first(struct rc_server *s, struct srv_conn *sc, int i, char *why, size_t cap);
/* Whether sc's deadline to prove its token passed (at now). */
bool srv_auth_late(const struct srv_conn *sc, double now);

#endif
