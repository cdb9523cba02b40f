/* SPDX-License-Identifier: MIT */
/*
 * KV-cache transfer from prefill (source) ranks to decode (destination)
 * ranks: the geometry and its arithmetic (kv_geom.c), the control messages
 * (kv_proto.c), the decode side (kv_recv.c) and the prefill side
 * (kv_send.c).
 *
 * Memory model, both sides alike: a pool of pages; page id p of layer l,
 * half k (0 = K, 1 = V; MLA has one half) lies at
 *   base + ((l * halves + k) * pool_pages + p) * page_bytes
 * as vLLM lays out one [2, num_blocks, block_size, heads, head_dim] tensor
 * per layer. Inside a page, NHD is [token][head][dim] (vLLM's default) and
 * HND is [head][token][dim].
 */
#ifndef RDMACTL_KV_H
#define RDMACTL_KV_H

#include <rdmactl/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmactl/err.h>
#include <rdmactl/mem.h>
#include <rdmactl/parse.h>

#define KV_MAX_TP 64
#define KV_MAX_LAYERS 1024
#define KV_MAX_HEADS 1024
#define KV_MAX_DIM 65536
#define KV_MAX_PAGE_TOKENS 65536
#define KV_MAX_QPS 16
#define KV_MAX_PEERS KV_MAX_TP
#define KV_MAX_ROUTES (KV_MAX_TP * 2)
#define KV_MAX_SLOTS 256 /* requests a destination rank holds at once */

enum kv_dtype { KV_DT_BF16, KV_DT_FP16, KV_DT_FP8 };
enum kv_layout { KV_LAYOUT_PAGED, KV_LAYOUT_MLA };
enum kv_page_layout { KV_PAGE_NHD, KV_PAGE_HND };

struct kv_geom {
	enum kv_layout layout;
	enum kv_page_layout page_layout;
	enum kv_dtype dtype;
	uint32_t layers;
	uint32_t kv_heads; /* paged: KV heads of the model; MLA: 1 */
	uint32_t head_dim; /* paged: dims per head; MLA: the latent dims */
	uint32_t src_tp, dst_tp;
	uint32_t src_page_tokens, dst_page_tokens;
};

RC_EXPORT const char *kv_dtype_name(enum kv_dtype d);
RC_EXPORT int kv_dtype_parse(const char *s, enum kv_dtype *d);
RC_EXPORT const char *kv_layout_name(enum kv_layout l);
RC_EXPORT int kv_layout_parse(const char *s, enum kv_layout *l);
RC_EXPORT const char *kv_page_layout_name(enum kv_page_layout l);
RC_EXPORT int kv_page_layout_parse(const char *s, enum kv_page_layout *l);

/* 0, or -EINVAL with a message naming the offending value. */
RC_EXPORT int kv_geom_check(const struct kv_geom *g, struct rc_err *err);

struct kv_heads {
	uint32_t first;
	uint32_t count;
};
/* Pages a request of tokens takes on one side. */
RC_EXPORT uint32_t kv_pages_for(const struct kv_geom *g, bool dst, uint32_t tokens);

/* Who sends which heads to whom. */
struct kv_route {
	uint32_t src, dst;
	uint32_t head, nheads; /* global heads [head, head + nheads) */
	uint32_t src_head_off; /* their index among the source rank's heads */
	uint32_t dst_head_off;
};
/* All routes, sorted by destination then source. Returns their count. */
RC_EXPORT int kv_routes(const struct kv_geom *g, struct kv_route *r, int max);

/* One contiguous run of one layer half: from logical source page src_page
 * at src_off to logical destination page dst_page at dst_off. The same list
 * serves every layer and both halves. */
struct kv_seg {
	uint32_t src_page, src_off;
	uint32_t dst_page, dst_off;
	uint32_t len;
};
/* The coalesced segments of one route for a request of tokens (malloc'd
 * into *out). Runs never cross a page on either side. */
RC_EXPORT int kv_segments(const struct kv_geom *g, const struct kv_route *r, uint32_t tokens,
			  struct kv_seg **out, size_t *n, struct rc_err *err);
/* Packing a route (--pack): its segments copied on the prefill side into a
 * staging buffer in destination order, so that one write covers each run
 * that is contiguous on the destination side, however the source scatters
 * it. auto packs a route whose writes packing at least halves while they
 * average under KV_PACK_SMALL bytes. */
#define KV_PACK_SMALL 16384u
#define KV_WRITE_MAX (64u << 10) /* a merged write stops growing here, to spread over QPs */
enum kv_pack { KV_PACK_AUTO, KV_PACK_ALWAYS, KV_PACK_NEVER };
RC_EXPORT const char *kv_pack_name(enum kv_pack p);
RC_EXPORT int kv_pack_parse(const char *s, enum kv_pack *p);

/*
 * Landing (--land): where a route fills only part of every destination
 * token row (nhd pages, several source ranks per decode rank), its pieces
 * are scattered on the decode side, and no copy on the prefill side joins
 * them. The decode rank then keeps a landing area of --land-pages units
 * (the pool's pages by default) per layer half, a unit being one page of
 * tokens of every route that may land there (kv_land_unit), and gives
 * each request a run of as many units as it has pages, at the same place
 * in every layer half (ALLOC says where).
 * Inside the run of a layer half, each landing route has one block, its
 * bytes for the whole request contiguous, [token][its heads][dim], the
 * routes one after the other in head order (kv_land_block): one source run
 * is one write there, across pages, up to KV_WRITE_MAX. Once a layer's
 * notifications are all in, the decode rank copies (unpacks) each block
 * into the pool pages. auto lands a route whose destination pieces are
 * under KV_PACK_SMALL bytes; always lands every route where landing
 * applies.
 */
RC_EXPORT bool kv_land_choose(enum kv_pack want, const struct kv_geom *g, const struct kv_route *r);
/* The same, packed, where a write gathers at most max_sge pieces of the
 * source (segments that follow one another there make one piece) instead
 * of a copy into staging: where the device takes a gather list, packing
 * costs the CPU nothing. max_sge 0 or 1: a copy, as kv_post_writes. */
#define KV_GATHER_MAX 32
/* --max-sge as plan and send take it: 0 means KV_GATHER_MAX, and no more. */
static inline uint32_t kv_gather_cap(uint32_t max_sge)
{
	return max_sge && max_sge < KV_GATHER_MAX ? max_sge : KV_GATHER_MAX;
}

/* Bytes a route moves per layer half for tokens. */
RC_EXPORT uint64_t kv_route_bytes(const struct kv_geom *g, const struct kv_route *r,
				  uint32_t tokens);

/* The plan's figures for one request. */
struct kv_plan_rank {
	uint64_t bytes;    /* moved per request (sent by a source, received by a destination) */
	uint64_t segments; /* work requests before runtime coalescing */
	uint64_t writes; /* work requests with the --pack and --land choices, notifications apart */
	uint64_t notifications; /* destination: WRITE_WITH_IMM it counts per request */
};
struct kv_plan {
	uint64_t bytes_per_token;       /* the whole model */
	uint64_t bytes_per_token_layer; /* one layer, K+V, all heads */
	uint64_t bytes_per_request;     /* the whole model, tokens tokens */
	uint64_t wire_bytes;            /* all routes (replicas counted) */
	uint64_t segments;              /* all routes, all layers and halves */
	uint64_t seg_min, seg_max;      /* segment bytes */
	/* Writes per request (all routes, layers and halves) unpacked, packed,
	 * and with the choice --pack made route by route. */
	uint64_t writes_never, writes_packed, writes;
	uint32_t routes, routes_packed;
	enum kv_pack pack; /* what was asked */
	uint32_t max_sge;  /* pieces a packed write gathers (1: a copy) */
	/* Landing (--land): routes landed, and the writes per request the
	 * --pack and --land choices give together, as the senders post them. */
	enum kv_pack land;
	uint32_t routes_landed;
	uint64_t writes_posted;
	uint32_t qps;
	uint64_t src_page_bytes, dst_page_bytes;
	uint32_t src_pages, dst_pages; /* per request, per rank */
	struct kv_plan_rank src[KV_MAX_TP], dst[KV_MAX_TP];
	/* Hiding the transfer under prefill: time of one layer's compute, and
	 * the link bandwidth the busiest source rank needs to keep up. */
	double layer_s; /* 0 when neither rate was given */
	double prefill_s;
	double need_gbps_per_link;
	double need_gbps_total;
	/* With a given link rate: exposed time streamed layer by layer, or
	 * sent after the last layer (0 when no rate was given). */
	double exposed_stream_s;
	double exposed_bulk_s;
};
struct kv_plan_in {
	uint32_t tokens;
	double prefill_tokens_per_s; /* 0: not given */
	double layer_compute_us;     /* 0: not given */
	double link_gbps;            /* 0: not given */
	enum kv_pack pack;
	uint32_t max_sge;  /* as kv_send_opts.max_sge (0: KV_GATHER_MAX) */
	enum kv_pack land; /* --land (auto when zeroed) */
	uint32_t qps;      /* data QPs per source and destination (0: 1) */
};
RC_EXPORT int kv_plan(const struct kv_geom *g, const struct kv_plan_in *in, struct kv_plan *p,
		      struct rc_err *err);

/*
 * Wire protocol (kv_proto.c). Each source rank opens, to each destination
 * rank it feeds, one control QP (SEND/RECV of the messages below, framed by
 * the rc_ctrl header); it shows its geometry in HELLO, and only
 * once WELCOME came back does it connect its --qps data QPs (RDMA WRITE).
 * Each connect request carries struct kv_hello_pd so that the decode side
 * can group the QPs of one sender; a data QP is accepted only for a sender
 * whose HELLO was accepted, and only with that sender's secret (16 bytes
 * from getrandom per sender process). With a token, every connect request
 * proves it (kv_pd_prove: an HMAC under the token of the rest of the
 * request), checked before the QP is accepted: a host without the token
 * holds no connection, not even one waiting for its HELLO, and the token
 * itself does not travel.
 *
 * Per layer, a sender posts the layer's writes spread over its data QPs and
 * ends each QP's share with one RDMA WRITE_WITH_IMM (zero bytes when the QP
 * got no segment). RC orders a QP's writes, so that notification means all
 * of the QP's bytes of the layer have landed. The decode rank counts them:
 * a layer is complete when every contributing source rank delivered
 * exactly one on each of its data QPs (struct kv_tally).
 */
/* "KVX5": the token proven in the connect request, data QPs bound by a
 * secret. "KVX4" landed by request runs (HELLO says --land, WELCOME the
 * landing area, ALLOC the request's run in it) and showed the token in
 * HELLO; "KVX3" landed page by page, "KVX2" had no landing: such a peer is
 * refused by name. */
#define KV_PD_MAGIC 0x3558564bu
#define KV_PD_MAGIC_V4 0x3458564bu
#define KV_PD_MAGIC_V3 0x3358564bu
#define KV_PD_MAGIC_V2 0x3258564bu
#define KV_LAND_NONE UINT32_MAX /* ALLOC: no landing run */
#define KV_PD_SECRET 16
#define KV_PD_PROOF 24
#define KV_PD_LEN (16 + KV_PD_SECRET + KV_PD_PROOF) /* 56: all a connect request holds */
#define KV_PD_LABEL "rdmactl kvxfer connect v5"
#define KV_MSG_MAX 8192
#define KV_MAX_REQ_PAGES 2000 /* what one ALLOC message carries */
#define KV_REASON_MAX 256

struct kv_hello_pd {
	uint32_t rank;                /* source rank */
	uint32_t qp;                  /* 0: control, 1..nqps: data */
	uint32_t nqps;                /* data QPs per destination */
	uint32_t session;             /* random per sender process (HELLO repeats it) */
	uint8_t secret[KV_PD_SECRET]; /* random per sender process: binds its data QPs */
	uint8_t proof[KV_PD_PROOF];   /* kv_pd_prove; zeros without a token */
};

/* The immediate value: generation of the request slot (8 bits), the
 * destination's request slot (8), the layer (10), the source rank (6). A
 * slot's generation changes on every reuse, so a late notification of a
 * cancelled request cannot count toward the next one. */
static inline uint32_t kv_imm(uint32_t gen, uint32_t slot, uint32_t layer, uint32_t rank)
{
	return (gen & 0xff) << 24 | (slot & 0xff) << 16 | (layer & 0x3ff) << 6 | (rank & 0x3f);
}
static inline uint32_t kv_imm_gen(uint32_t imm)
{
	return imm >> 24;
}
static inline uint32_t kv_imm_slot(uint32_t imm)
{
	return imm >> 16 & 0xff;
}
static inline uint32_t kv_imm_layer(uint32_t imm)
{
	return imm >> 6 & 0x3ff;
}
static inline uint32_t kv_imm_rank(uint32_t imm)
{
	return imm & 0x3f;
}

/* The wr_id of a data write, below the operation that rc_wrid puts on top:
 * the send queue's sequence number (bits 0-31), the source request slot
 * (32-39), the layer (40-49) and whether the write carries the layer's
 * notification (50). A completion names its request and layer by it. */
static inline uint64_t kv_wrid(uint32_t seq, uint32_t slot, uint32_t layer, bool notify)
{
	return (uint64_t)seq | (uint64_t)(slot & 0xff) << 32 | (uint64_t)(layer & 0x3ff) << 40 |
	       (uint64_t)notify << 50;
}
static inline uint32_t kv_wrid_seq(uint64_t v)
{
	return (uint32_t)v;
}
static inline uint32_t kv_wrid_slot(uint64_t v)
{
	return (uint32_t)(v >> 32 & 0xff);
}
static inline uint32_t kv_wrid_layer(uint64_t v)
{
	return (uint32_t)(v >> 40 & 0x3ff);
}
static inline bool kv_wrid_notify(uint64_t v)
{
	return v >> 50 & 1;
}

enum kv_msg_type {
	KV_MSG_HELLO = 0x20,   /* s->d: rank, QPs, session, geometry */
	KV_MSG_WELCOME = 0x21, /* d->s: destination rank, pool address, rkey, layout */
	KV_MSG_REQ = 0x22,     /* s->d: request id, tokens */
	KV_MSG_ALLOC = 0x23,   /* d->s: request slot, generation, page ids */
	KV_MSG_DONE = 0x24,    /* d->s: every byte landed (and verified) or a failure */
	KV_MSG_CANCEL = 0x25,  /* d->s: stop this request; s->d: stopped, nothing in flight */
	KV_MSG_HB = 0x26,      /* either way: alive */
	KV_MSG_ERROR = 0x27,   /* d->s: HELLO refused (the decode rank closes the connection) */
};

#define KV_DONE_VERIFIED 1u
#define KV_DONE_CHECKED 2u

struct kv_msg {
	uint16_t type;
	uint32_t seq;
	uint32_t req; /* REQ ALLOC DONE CANCEL */
	union {
		struct {
			uint32_t rank, nqps, session;
			struct kv_geom g;
			char token[RC_TOKEN_MAX + 1]; /* "": none */
			uint32_t land;                /* enum kv_pack: the source rank's --land */
		} hello;
		struct {
			uint32_t rank, pool_pages, rkey;
			uint64_t base, page_bytes;
			uint64_t land;       /* the landing area, 0: this route does not land */
			uint32_t land_units; /* its units per layer half */
		} welcome;
		struct {
			uint32_t tokens;
		} request;
		struct {
			uint32_t slot, gen, npages;
			uint32_t land;   /* the landing run's first unit, KV_LAND_NONE: none */
			uint32_t *pages; /* caller's array (KV_MAX_REQ_PAGES) */
		} alloc;
		struct {
			uint32_t flags; /* KV_DONE_* */
			int32_t status; /* 0, or a positive errno (EBADMSG: content) */
			uint64_t bytes;
			uint32_t unpack_us; /* the last layer landed -> the request in the pool (unpacked) */
		} done;
		struct {
			int32_t code; /* 0 cancelled, else a positive errno: failed */
			char text[KV_REASON_MAX];
		} cancel; /* CANCEL and ERROR */
	} u;
};

/*
 * Counting the notifications of one request on a decode rank: a layer has
 * landed when every contributing source rank delivered one WRITE_WITH_IMM
 * on each of its data QPs (RC orders a QP's writes, so that one means the
 * QP's share of the layer is there). Two on one QP and none on another do
 * not make a layer.
 */
struct kv_tally {
	uint32_t layers, src_tp;
	uint64_t sources;         /* source ranks that feed this rank (bits) */
	uint16_t want[KV_MAX_TP]; /* per source rank: its data QPs (bits), 0 until it joined */
	uint16_t *got;            /* [layer][source rank]: data QPs that delivered (bits) */
	uint32_t landed;          /* layers complete */
};
enum kv_tally_res {
	KV_TALLY_COUNTED = 0, /* counted, the layer still waits */
	KV_TALLY_LANDED = 1,  /* this one completed its layer */
	KV_TALLY_BAD = -1,    /* rank, QP or layer out of range, or a rank that did not join */
	KV_TALLY_DUP = -2,    /* that QP delivered that layer already */
};

/*
 * The engines (kv_recv.c, kv_send.c): one thread each, every wait bounded,
 * completions event-driven (completion channels under poll()). They never
 * print: what happens reaches the caller as events.
 */
enum kv_ev_kind {
	KV_EV_READY, /* serve: listening; send: every decode rank welcomed us */
	KV_EV_PEER_UP,
	KV_EV_PEER_DOWN,
	KV_EV_DONE, /* a request: every byte landed (verified when asked) */
	KV_EV_CANCELLED,
	KV_EV_FAILED,
	KV_EV_PEER_REFUSED, /* serve: a peer refused before or at HELLO; reason: the cause */
};

struct kv_report {
	uint32_t req, tokens, layers;
	uint64_t bytes; /* this rank's share */
	double seconds; /* first byte posted/announced -> last layer landed */
	/* send: last layer ready -> the decode ranks complete (every byte landed,
	 * then unpack_s); serve: -1 */
	double exposed_s;
	/* serve: the last layer landed -> the request in the pool (the unpack of
	 * landed layers; about 0 on the direct path), before any --verify; send:
	 * the longest of its decode ranks' (DONE); -1: not complete */
	double unpack_s;
	/* serve: the request's start -> complete in the pool (unpacked), before
	 * any --verify (seconds runs to the report, after it); -1: not complete */
	double complete_s;
	/* send: the request's first write posted; serve: its REQ received; as
	 * Unix time (rc_wall), so that one run's ranks line up; 0: unknown */
	double started_at;
	const double *ready_us;  /* send: per layer, from the request's compute start */
	const double *landed_us; /* per layer, from the request's start; -1: not landed */
	uint32_t layers_landed;
	uint64_t sources; /* serve: source ranks that fed it (bits) */
	bool verified, checked;
	const char *reason; /* CANCELLED, FAILED */
};

struct kv_event {
	enum kv_ev_kind kind;
	uint32_t rank;       /* READY: ours; PEER_*: the peer's */
	const char *peer;    /* PEER_*: its address; READY: the listen address */
	uint16_t port;       /* READY (serve) */
	const char *dev;     /* READY (serve), PEER_UP (send): the RDMA device */
	uint64_t pool_bytes; /* READY (serve): the pool's bytes */
	uint64_t land_bytes; /* READY (serve): the landing area's bytes (0: none) */
	uint32_t qps;        /* PEER_UP: its data QPs */
	const char *reason;  /* PEER_DOWN */
	const struct kv_report *rep;
	/* READY: the pool (serve) or the source pages (send): kind, GPU and the
	 * registration path that ran (reg, reg_notes). */
	const struct rc_mem *mem;
};

struct kv_summary {
	uint32_t done, cancelled, failed, verified;
	uint64_t bytes; /* of the requests done */
	double seconds; /* first request's start -> last one's end */
	double exposed_sum_s, exposed_max_s;
	/* send: what was posted on each data QP index (all decode ranks together):
	 * RDMA WRITE payload bytes and work requests. */
	uint32_t nqps;
	uint64_t qp_bytes[KV_MAX_QPS], qp_wrs[KV_MAX_QPS];
	/* send: routes fed, how many of them packed, bytes copied to pack them,
	 * bytes packed by gather lists instead, and the most pieces a write
	 * gathers (1: packing copies). */
	uint32_t routes, routes_packed;
	uint64_t packed_bytes, gathered_bytes;
	uint32_t gather_sge;
	uint32_t routes_landed; /* send: routes written into a landing area */
};

struct kv_common_opts {
	struct kv_geom g;
	uint32_t rank;
	uint32_t requests; /* send: to move; serve: to finish, 0 = until stopped */
	const char *dev_name;
	const char *token; /* serve: required in HELLO; send: shown in it (NULL: none) */
	int timeout_ms;    /* handshake, allocation, a request's silence */
	int hb_ms, hb_timeout_ms;
	int64_t cancel_req; /* test hook, -1: none */
	uint32_t cancel_after;
	int stop_fd; /* readable: stop (-1: none) */
	void (*on_event)(void *arg, const struct kv_event *ev);
	void *arg;
};

struct kv_recv_opts {
	struct kv_common_opts c;
	const char *addr, *port;
	uint32_t pool_pages;
	bool scatter;
	/* Units of the landing area per layer half (0: pool_pages); a request
	 * of more pages is refused where one of its routes lands. */
	uint32_t land_pages;
	uint64_t scatter_seed;
	bool verify;
	/* The pool: host (default), hugepage or GPU memory (.len unused). GPU
	 * memory is registered by the first path that works (rc_mem_register);
	 * verify needs the CPU to read the pool, so it is refused with GPU memory. */
	struct rc_mem_spec mem;
};

struct kv_send_target {
	char host[256];
	char port[8];
};

struct kv_send_opts {
	struct kv_common_opts c;
	const struct kv_send_target *targets;
	int ntargets;
	const char *bind_addr;
	uint32_t nqps, tokens, inflight;
	double layer_compute_us;
	bool no_stream;
	enum kv_pack pack;
	/* --max-sge: pieces a packed write gathers (capped at KV_GATHER_MAX and
	 * at what the device takes); 0 means KV_GATHER_MAX, 1 packs by copying
	 * into staging, as a device that takes no gather list does. */
	uint32_t max_sge;
	enum kv_pack land; /* --land: auto, always or never (the decode rank follows it) */
	/* The source pages and staging: host (default), hugepage or GPU memory
	 * (.len and .path unused). The CPU fills and packs them: with GPU memory
	 * in a host copy of the same size, each filled part then copied to the
	 * GPU (rc_mem_write) in the same time slices as the fill, each packed
	 * layer before its writes are posted. GPU memory is registered on each
	 * decode rank's PD by the first path that works (rc_mem_register). */
	struct rc_mem_spec mem;
	/* Test hook (rdmactl reads it from RDMACTL_TEST_KV_CORRUPT; no option):
	 * request corrupt_req leaves with one byte of its content wrong (the
	 * first of its last source page of the last layer half), so that the
	 * decode rank's --verify must fail it. */
	bool corrupt;
	uint32_t corrupt_req;
};

/* Run until the requests are finished or stop_fd. Returns 0 (whatever
 * became of the requests: see sum) or -errno on a fatal error. */
RC_EXPORT int kv_recv_run(const struct kv_recv_opts *o, struct kv_summary *sum, struct rc_err *err);
RC_EXPORT int kv_send_run(const struct kv_send_opts *o, struct kv_summary *sum, struct rc_err *err);

#endif
