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

struct rc_conn;
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
};

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
	void *user;               /* owner's data */
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

#endif
