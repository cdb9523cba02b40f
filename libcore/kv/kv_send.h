/* SPDX-License-Identifier: MIT */
/* Inside kvxfer send: the state that kv_send.c (connections, the loop),
 * kv_send_route.c (the routes' segments), kv_send_fill.c (a request's
 * source slot), kv_send_req.c (requests, cancelling) and kv_send_post.c
 * (the writes, queued and posted) share. */
#ifndef RDMACTL_KV_SEND_H
#define RDMACTL_KV_SEND_H

#include "kv_int.h"
#include <rdmactl/ops_core.h>
#include <rdmactl/pipe_core.h>
#include <rdmactl/kv_core.h>

#define SQ_DEPTH 256
#define SIGNAL_EVERY 16 /* one signalled write in this many, per data QP */
#define CHAIN 32        /* work requests per post */

/* A write waiting for room in its send queue. */
/* A queued write: laddr and len, or, gathering, the pieces in sg (nsg of
 * them, malloc'd, the entry's own; len their total). */
struct wr_ent {
	uint64_t laddr, raddr;
	uint32_t len, imm;
	uint16_t slot, layer, nsg;
	bool has_imm;
	struct rc_sg *sg;
};

struct sdst;

struct sqp {
	struct rc_conn *c;
	struct sdst *d; /* whose it is, and which (k: data QP k + 1) */
	uint32_t k;
	struct rc_pipe pipe; /* the engine: window, signalling, what is done */
	uint64_t bytes;      /* RDMA WRITE payload posted */
	struct wr_ent *q;
	size_t qhead, qlen, qcap;
};

struct sdst {
	const struct kv_send_target *t;
	int rail; /* the rail of ours it goes over (kv_send_opts.nrails) */
	char name[300];
	struct rc_conn *ctrl;
	struct kv_chan ch;
	struct rc_auth a;         /* the exchange of its control QP */
	uint8_t key[RC_AUTH_KEY]; /* the session's data-QP secret (kv_data_key) */
	struct sqp qp[KV_MAX_QPS];
	struct ibv_mr *mr; /* the source pool, on this connection's PD */
	bool welcomed, dead, closed;
	char why[KV_REASON_MAX];
	uint32_t rank, pool_pages, rkey;
	uint64_t base, page_bytes;
	struct kv_route route;
	struct kv_seg *segs; /* destination order when packed */
	size_t nsegs;
	bool pack; /* copy into the staging slot, one write per destination run */
	bool land; /* write into the landing area (land_base), unpacked there */
	uint64_t land_base;
	uint32_t land_units; /* the landing area's units per layer half */
	uint64_t stage_off;  /* this route's part of a staging slot */
	double last_hb;
};

struct sreq {
	bool used, cancelling;
	bool filling; /* admitted, its content not all written yet (fc) */
	struct kv_cursor fc;
	enum kv_ev_kind final;
	int code;
	char reason[KV_REASON_MAX];
	uint32_t id, slot, layers_posted, layers_landed;
	uint32_t pieces_posted; /* of the last layer, when it goes in pieces */
	double t0, admitted, first_post, last;
	double *ready, *landed; /* absolute times per layer; landed < 0: not yet */
	uint32_t *pending;      /* per layer: notifications not yet completed */
	bool alloc[KV_MAX_PEERS], done_rx[KV_MAX_PEERS];
	uint32_t rslot[KV_MAX_PEERS], rgen[KV_MAX_PEERS];
	uint32_t land_at[KV_MAX_PEERS]; /* landing routes: the request's run there (units) */
	uint32_t *pages[KV_MAX_PEERS];
	uint64_t copied;     /* GPU memory: bytes of the slot copied to the GPU */
	uint32_t done_flags; /* AND of the DONE flags */
	double unpack_s;     /* the longest unpack the decode ranks' DONE reported */
	int done_status;
	char done_why[KV_REASON_MAX];
	uint64_t mark[KV_MAX_PEERS][KV_MAX_QPS]; /* quiescing: wait for done >= mark */
};

struct kv_sender {
	const struct kv_send_opts *o;
	const struct kv_geom *g;
	struct sdst *d;
	int nd;
	struct rc_mem mem; /* the source pages and staging */
	char *pool;        /* the CPU's view: mem.buf, or for GPU memory its host copy */
	size_t pool_len;
	uint64_t wire_delta; /* added to a pool address: what the NIC is given (GPU: mr_addr) */
	uint64_t slot_bytes, src_page_bytes;
	uint64_t stage_base, stage_slot_bytes; /* staging ring after the slots, one per slot */
	/* Pieces a packed write gathers: --max-sge, then capped by the data
	 * QPs; below 2, packing copies into staging, which exists only when
	 * --max-sge 1 asked for it (copy_ok). */
	uint32_t gather;
	bool copy_ok;
	uint32_t src_pages, dst_pages, session;
	struct sreq *reqs; /* inflight of them, one per source slot */
	uint32_t next_id, active, finished;
	double compute_free, first;
	bool stopping, broken;
	/* One CQ a rail for the data QPs of every decode rank on it, made with
	 * the first; NULL: each has its own (a device without the room). */
	struct rc_shared *sh[RC_RAILS_MAX];
	/* Several rails: the address each connects from, --bind's, else its
	 * device's (kvs_rail_binds); "": as the decode rank's address routes. */
	char rail_bind[RC_RAILS_MAX][RC_HOST_MAX];
	/* The CM events of every connection (NULL: each keeps its own). */
	struct rdma_event_channel *ech;
	struct kv_summary *sum;
	uint32_t pages_tmp[KV_MAX_REQ_PAGES];
};

/* kv_send_peer.c: a decode rank's connections, HELLO and WELCOME (setup,
 * step 3), their CM events (on the sender's one channel, or a connection's
 * own when it kept it) and their end. */
int kvs_rail_binds(struct kv_sender *s, struct rc_err *err);
int kvs_open_dst(struct kv_sender *s, struct sdst *d, const struct kv_send_target *t,
		 struct rc_err *err);
void kvs_close_dst(struct sdst *d);
void kvs_cm_events(struct kv_sender *s);
void kvs_conn_events(struct sdst *d, struct rc_conn *c);

/* kv_send_route.c: the staging slot's size, before the handshakes, and
 * which segments go to which connected decode rank, after them. */
int kvs_stage_size(struct kv_sender *s, struct rc_err *err);
int kvs_map_routes(struct kv_sender *s, struct rc_err *err);

/* kv_send_fill.c */
int kvs_admit(struct kv_sender *s, struct rc_err *err);
/* A slice of each pending fill; true when some remain. */
bool kvs_fill_step(struct kv_sender *s);

/* kv_send_req.c */
void kvs_emit(struct kv_sender *s, struct kv_event *ev);
void kvs_send(struct kv_sender *s, struct sdst *d, struct kv_msg *m);
void kvs_heartbeats(struct kv_sender *s);
void kvs_progress(struct kv_sender *s);
void kvs_on_msg(struct kv_sender *s, struct sdst *d, const struct kv_msg *m);
void kvs_on_data_wc(struct kv_sender *s, struct sdst *d, struct sqp *q, const struct ibv_wc *wc);
void kvs_cancel(struct kv_sender *s, struct sreq *q, enum kv_ev_kind final, int code,
		const char *why);
void kvs_dst_gone(struct kv_sender *s, struct sdst *d);
double kvs_next_wake(struct kv_sender *s);

/* kv_send_post.c */
/* The CPU's view of page page of a layer half in a source slot. */
char *kvs_src_addr(struct kv_sender *s, uint32_t slot, uint32_t layer, uint32_t half, uint32_t page);
/* GPU memory: copy len bytes of the host copy at p to the GPU. */
int kvs_to_gpu(struct kv_sender *s, const char *p, size_t len, struct rc_err *err);
/* Queue the writes of one layer to one decode rank: units u0 to u1 - 1 of
 * its segments (both halves in a row) cut into nqps * m units, QP-major:
 * unit u goes on data QP u / m, and the last unit of a QP (u % m == m - 1)
 * ends with its notification. The whole layer: u0 0, u1 nqps, m 1. */
int kvs_queue_layer(struct kv_sender *s, struct sreq *q, struct sdst *d, int di, uint32_t l,
		    uint32_t u0, uint32_t u1, uint32_t m, struct rc_err *err);
int kvs_post_queued(struct kv_sender *s, struct sdst *d);
/* Cancelling q: drop its queued writes on qp (their notifications with
 * them) and, where unsignalled writes end the send queue, post a signalled
 * one of no bytes after them; the count of posted writes that q waits for. */
uint64_t kvs_unqueue(struct kv_sender *s, struct sdst *d, struct sqp *qp, struct sreq *q);

#endif
