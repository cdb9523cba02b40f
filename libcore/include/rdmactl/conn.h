/* SPDX-License-Identifier: MIT */
/* RC connections through rdma_cm: the connecting and the listening side. */
#ifndef RDMACTL_CONN_H
#define RDMACTL_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <rdmactl/err.h>
#include <rdmactl/parse.h>

struct rc_conn;

struct rc_conn_opts {
	int sq_depth;           /* send queue depth (default 128) */
	int rq_depth;           /* receive queue depth (default 16) */
	int timeout_ms;         /* connect, accept and completion timeout */
	bool busy_poll;         /* spin on the CQ instead of sleeping on its channel */
	const void *private_data;
	uint8_t private_len;    /* at most 56: what an RC connect request carries */
	const char *bind_addr;  /* client: source address, which picks the device */
	const char *dev_name;   /* client: refuse a route through another device */
	struct ibv_pd *pd;      /* share this PD instead of allocating one */
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
	int timeout_ms;
	bool busy_poll;
	bool armed;          /* CQ notification requested and not yet consumed */
	bool established;
	bool disconnected;
	char peer[RC_HOST_MAX + 8];
	char dev_name[64];
	uint8_t port_num;
	void *user;          /* owner's data */
};

/* Connect to host:port; *out is established on success. */
int rc_connect(const char *host, const char *port, const struct rc_conn_opts *opts,
	       struct rc_conn **out, struct rc_err *err);
/* Next CM event of a connection made by rc_connect (disconnects, errors)
 * within timeout_ms (0: do not wait). -EAGAIN when none came; -EINVAL for an
 * accepted connection, whose events come to its listener. */
int rc_conn_event(struct rc_conn *c, int timeout_ms, struct rdma_cm_event **ev);
/* Disconnect and free everything; returns the first error, releases all. */
int rc_conn_close(struct rc_conn *c);

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

/* Listen on addr:port (addr may be a wildcard only when dev_name is given). */
int rc_listen(const char *addr, const char *port, const char *dev_name,
	      struct rc_listener **out, struct rc_err *err);
int rc_listener_close(struct rc_listener *l);
/* Next event on the listener's channel within timeout_ms (-1: wait forever,
 * 0: do not wait). -EAGAIN when none came. */
int rc_listener_event(struct rc_listener *l, int timeout_ms, struct rdma_cm_event **ev);
/* Build the QP for a connect request and accept it. */
int rc_accept(struct rc_listener *l, struct rdma_cm_id *child, const struct rdma_conn_param *req,
	      const struct rc_conn_opts *opts, struct rc_conn **out, struct rc_err *err);
/* Refuse a connect request, with a reason the peer can read. */
void rc_reject(struct rdma_cm_id *child, const char *reason);
/* Format an id's peer as "addr:port". */
void rc_peer_name(struct rdma_cm_id *id, char *buf, size_t len);

#endif
