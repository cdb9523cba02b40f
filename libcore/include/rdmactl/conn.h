/* SPDX-License-Identifier: MIT */
/* RC connections through rdma_cm: the connecting and the listening side. */
#ifndef RDMACTL_CONN_H
#define RDMACTL_CONN_H

#include <rdmactl/export.h>

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <rdmactl/err.h>
#include <rdmactl/parse.h>

/* Opaque handles: a connection (rc_conn_opts.on_qp hands one over) and a
 * listener (rdmactl/server.h's rc_server_listener; the rc_listener_* calls
 * below read it). */
struct rc_conn;
struct rc_listener;
struct rc_shared;

struct rc_conn_opts {
	int sq_depth;   /* send queue depth (default 128) */
	int rq_depth;   /* receive queue depth (default 16) */
	int send_sge;   /* gather entries a send work request may carry
				 * (default 1); capped at what the device allows */
	int timeout_ms; /* connect, accept and completion timeout */
	bool busy_poll; /* spin on the CQ instead of sleeping on its channel */
	const void *private_data;
	uint8_t private_len;   /* at most 56: what an RC connect request carries */
	const char *bind_addr; /* client: source address, which picks the device */
	const char *dev_name;  /* client: refuse a route through another device */
	struct ibv_pd *pd;     /* share this PD instead of allocating one */
	/* Accepting side: use this CQ, its channel and its receive queue (when it
	 * has one) instead of the connection's own (rc_shared_create). */
	struct rc_shared *shared;
	/* Accepting side: called once the QP exists, before the accept goes out
	 * (to post receives that the peer may use at once). */
	int (*on_qp)(struct rc_conn *c, void *arg);
	void *on_qp_arg;
	/* Accepting side: how often its sends meet a receiver that is not ready
	 * (no receive posted) before they fail, 1 to 7 (7: for ever). 0: as the
	 * peer's connect request asks, which a hostile peer may set to 7. */
	int rnr_retry;
	/* Accepting side: the QP allows no remote READ, WRITE or atomic until
	 * rc_conn_release_access (a control plane's peer that has not proved
	 * itself; kept for ever where it never must). Withheld at INIT, before
	 * the accept, and the QP taken to RTS here (with rnr_retry, or 7), since
	 * rdma_accept would set the CM's default access again on its way. */
	bool hold_access;
};

/* The local address a listener is bound to. */
RC_EXPORT const char *rc_listener_addr(const struct rc_listener *l);
/* The rdma_cm port it is bound to. */
RC_EXPORT uint16_t rc_listener_port(const struct rc_listener *l);
/* The RDMA device it listens on ("rxe0", "mlx5_0"). */
RC_EXPORT const char *rc_listener_device(const struct rc_listener *l);
/* That device's port number (1 on a one-port device). */
RC_EXPORT uint8_t rc_listener_port_num(const struct rc_listener *l);

#endif
