/* SPDX-License-Identifier: MIT */
/* The region server's state, between server.c (the server: its listener,
 * regions, flush and event loop) and srv_conn.c (its connections). */
#ifndef RDMACTL_SERVER_INT_H
#define RDMACTL_SERVER_INT_H

#include <poll.h>
#include <stdbool.h>

#include <rdmactl/server.h>

#include "srv_mig.h"

#define SRV_RECVS 16
#define SRV_MAX_CONNS 256

struct srv_conn {
	struct rc_conn *c;
	struct ibv_mr *mr;
	double probe_at;   /* next keepalive probe */
	double probe_sent; /* the one in flight */
	bool probing;      /* one in flight */
	bool admin;        /* it presented the admin token: migration steps */
	struct {
		unsigned char recv[SRV_RECVS][RC_CTRL_MSG_MAX];
		/* The reply to the request in recv[i]: its own buffer, and recv[i]
		 * is posted again only once that reply has gone, so no reply
		 * overwrites one still being sent. */
		unsigned char send[SRV_RECVS][RC_CTRL_MSG_MAX];
	} buf;
};

struct rc_server {
	struct rc_server_opts o;
	char token[RC_TOKEN_MAX + 1];
	char admin[RC_TOKEN_MAX + 1];
	struct rc_listener *l;
	struct rc_gid_info gid;
	struct rc_region regions[RC_MAX_REGIONS];
	int nregions;
	struct srv_conn *conns[SRV_MAX_CONNS];
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
	struct rc_server_stats st; /* its counters; conns is filled when asked */
};

/* The CM events waiting on the listener: connect requests are admitted or
 * refused, established and gone connections counted and dropped. 0, or
 * -ENODEV when the device went away. */
int srv_handle_cm(struct rc_server *s, struct rc_err *err);
/* Probe the connections that are due, drop those that stopped answering. */
void srv_keepalive(struct rc_server *s);
/* Take every completion of sc: the CQ is left empty and armed. */
void srv_drain_cq(struct rc_server *s, struct srv_conn *sc);
/* The connections whose channels pfd[0..n) found readable, drained. */
void srv_handle_cqs(struct rc_server *s, struct pollfd *pfd, int n);
/* What srv_mig.c may use of s. */
struct srv_mig_host srv_mig_host_of(struct rc_server *s);
/* sc goes: peer_gone, its peer left already; tell, an event says so (why:
 * the reason, which counts it as dropped, or NULL). */
void srv_drop_conn(struct rc_server *s, struct srv_conn *sc, bool peer_gone, bool tell,
		   const char *why);

#endif
