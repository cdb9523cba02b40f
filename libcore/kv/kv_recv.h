/* SPDX-License-Identifier: MIT */
/* Inside kvxfer serve: the state that kv_recv.c (connections, the loop),
 * kv_recv_peer.c (connect requests, HELLO, heartbeats), kv_recv_land.c
 * (unpacking landed layers) and kv_recv_req.c (requests, pages, counting)
 * share. */
#ifndef RDMACTL_KV_RECV_H
#define RDMACTL_KV_RECV_H

#include <rdmactl/mem.h>
#include <rdmactl/kv_core.h>
#include <rdmactl/conn_core.h>

#include "kv_int.h"

#define DATA_RECVS 256
#define PENDING_MAX 16 /* control QPs that have not shown a valid HELLO yet */
/* Room for as many more, dropped (evicted, refused) and not reaped yet. */
#define MAX_CONNS (KV_MAX_PEERS * (KV_MAX_QPS + 1) + 2 * PENDING_MAX)
#define TOMBS 64
#define PEERS (KV_MAX_PEERS + 2 * PENDING_MAX)

struct rpeer;

struct rconn {
	struct rc_conn *c;
	struct rpeer *p;
	uint32_t qp;
	struct kv_chan ch; /* the control QP only */
	int cqe;           /* the entries it holds of the shared CQ (0: its own CQ) */
	int rail;
};

struct rpeer {
	bool used, hello, dead, reaped;
	int rail;     /* where its control QP came in; its data QPs come in there too */
	bool refused; /* ERROR sent: closed once it is out, or at close_by */
	double t_conn, close_by;
	uint32_t rank, nqps, session;
	struct rc_auth a;                /* its control QP's exchange (kv_auth_start) */
	uint8_t key[RC_AUTH_KEY];        /* its data QPs prove themselves under it */
	struct rconn *q[KV_MAX_QPS + 1]; /* 0: control */
	char peer[RC_HOST_MAX + 8];
	char why[KV_REASON_MAX];
	bool land; /* its route lands (WELCOME gave the landing area) */
	double last_rx, last_hb;
};

struct rreq {
	bool used, cancelling;
	enum kv_ev_kind final;
	char reason[KV_REASON_MAX];
	uint32_t id, tokens, slot, npages, layers_landed;
	uint32_t *pages;       /* NULL until allocated */
	uint64_t asked;        /* source ranks that sent REQ */
	uint64_t alloced;      /* ... and received the page addresses */
	uint64_t quiesced;     /* ... and confirmed they stopped, or are gone */
	struct kv_tally tally; /* notifications per layer, source rank and data QP */
	bool verifying;        /* every layer landed; --verify walks it (vc) */
	struct kv_cursor vc;
	double t0, last, *landed;
	/* Landing: the source ranks whose route lands, the layers unpacked
	 * into the pool, and where the unpacking of the next one stands. */
	uint64_t land;
	uint32_t unpacked, u_half, u_src, u_page;
	uint32_t land_at; /* its run in the landing area (units), with pages */
	double complete;  /* every layer in the pool (unpacked), before --verify; 0: not yet */
};

struct tomb {
	bool used;
	uint32_t id;
	uint64_t quiesced;
	double t;
};

struct kv_receiver {
	const struct kv_recv_opts *o;
	const struct kv_geom *g;
	char token[RC_TOKEN_MAX + 1]; /* zero-padded; "" none */
	/* A rail each device it listens on (--listen ADDR1,ADDR2): its
	 * listener, the pool registered on its PD, and one CQ for the
	 * connections it holds room for (cq_used: its entries they hold). */
	struct kv_rrail {
		struct rc_listener *l;
		struct rc_shared *sh;
		int cq_used;
		struct ibv_mr *mr;
	} rails[RC_RAILS_MAX];
	int nrails;
	struct rc_mem pool;
	uint64_t page_bytes;
	uint32_t *freel, nfree, fhead;   /* FIFO ring of free page ids */
	uint32_t *dirtyl, ndirty, dhead; /* --verify: released, to poison before reuse */
	uint64_t contrib;                /* source ranks feeding this rank */
	struct kv_route from[KV_MAX_TP]; /* the route of each of them */
	uint64_t land_off;               /* the landing area, after the pool; 0: none */
	uint64_t land_unit;              /* bytes of one of its units (kv_land_unit) */
	uint32_t land_units;             /* its units per layer half (--land-pages) */
	uint8_t *land_used;              /* per unit: in a request's run */
	struct rpeer peers[PEERS];       /* a rank is held only once its HELLO passed */
	struct rpeer *by_rank[KV_MAX_TP];
	struct rconn *conns[MAX_CONNS];
	int nconns;
	struct rreq reqs[KV_MAX_SLOTS];
	uint8_t gen[KV_MAX_SLOTS];
	struct tomb tombs[TOMBS];
	uint32_t pages_tmp[KV_MAX_REQ_PAGES];
	struct kv_summary *sum;
	uint32_t finished;
	double first, last_finish;
};

/* kv_recv_peer.c */
/* A connect request: accepted into a peer, or refused with the reason
 * logged (KV_EV_PEER_REFUSED). */
void kvr_on_connect_request(struct kv_receiver *r, int rail, struct rc_cm_event *ev);
void kvr_on_hello(struct kv_receiver *r, struct rpeer *p, const struct kv_msg *m);
/* Heartbeats that are due. */
void kvr_heartbeats(struct kv_receiver *r);

/* kv_recv_land.c: a slice of each pending unpacking of landed layers into
 * the pool; true when some remain. */
bool kvr_unpack_step(struct kv_receiver *r);

/* kv_recv_req.c */
void kvr_emit(struct kv_receiver *r, struct kv_event *ev);
int kvr_send_msg(struct kv_receiver *r, struct rpeer *p, struct kv_msg *m);
struct rreq *kvr_req_find(struct kv_receiver *r, uint32_t id);
void kvr_req_release(struct kv_receiver *r, struct rreq *q);
void kvr_maybe_finish(struct kv_receiver *r, struct rreq *q);
void kvr_cancel_req(struct kv_receiver *r, struct rreq *q, enum kv_ev_kind final, int code,
		    const char *why);
void kvr_on_req(struct kv_receiver *r, struct rpeer *p, const struct kv_msg *m);
void kvr_on_imm(struct kv_receiver *r, struct rpeer *p, uint32_t qp, uint32_t imm);
/* A slice of each pending verification and of the poisoning of released
 * pages; true when some remain. */
bool kvr_verify_step(struct kv_receiver *r);
/* After the last layer landed, or was unpacked: verify or complete. */
void kvr_all_landed(struct kv_receiver *r, struct rreq *q);
char *kvr_page_addr(struct kv_receiver *r, uint32_t layer, uint32_t half, uint32_t page);

#endif
