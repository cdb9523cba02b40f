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

/* A listener's CM event, taken, acknowledged and sorted. */
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
	bool was_established;         /* GONE: it had been up */
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
};

#endif
