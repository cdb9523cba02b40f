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
#define KV_MAX_SLOTS 256      /* requests a destination rank holds at once */
#define KV_MAX_REQ_PAGES 2000 /* pages one request takes at most (one ALLOC message) */

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
	int rail;   /* READY (serve): the rail it listens on; PEER_UP (serve): it came in on */
	int nrails; /* serve: how many rails it listens on */
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
	/* serve with several rails: each rail's device and address, the source
	 * ranks that came in on it (welcomed), and the bytes of the requests done
	 * that their routes moved over it. */
	uint32_t nrails;
	struct kv_rail_sum {
		char dev[64], addr[RC_HOST_MAX];
		uint16_t port;
		uint32_t sources; /* serve: source ranks welcomed; send: decode ranks */
		uint64_t bytes;
	} rails[RC_RAILS_MAX];
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
	const char *addr, *port; /* rail 0: with c.dev_name */
	/* Several rails (NICs): rails 1 to nrails - 1 listen on rail_addr[i]:rail_port[i]
	 * from rail_dev[i] (NULL: the device of that address); the pool is
	 * registered once on each rail's device, and a source rank's QPs all
	 * come in on one rail. nrails 0 or 1: rail 0 alone. */
	int nrails;
	const char *rail_addr[RC_RAILS_MAX], *rail_port[RC_RAILS_MAX], *rail_dev[RC_RAILS_MAX];
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
	/* Several rails (NICs) of this source rank: nrails > 1 sends to decode
	 * rank targets[i] over rail i % nrails, its connections from
	 * rail_dev[r] (NULL: the device of rail_bind[r]) bound to rail_bind[r]
	 * (NULL: none); one shared CQ a rail, and the summary's rails say
	 * each rail's decode ranks and bytes. nrails 0 or 1: c.dev_name and
	 * bind_addr. */
	int nrails;
	const char *rail_dev[RC_RAILS_MAX], *rail_bind[RC_RAILS_MAX];
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
