/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/kv.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_KV_CORE_H
#define RDMACTL_KV_CORE_H

#include <rdmactl/auth_core.h>
#include <rdmactl/kv.h>

/*
 * Wire protocol (kv_proto.c). Each source rank opens, to each destination
 * rank it feeds, one control QP (SEND/RECV of the messages below, framed by
 * the rc_ctrl header); it shows its geometry in HELLO, and only
 * once WELCOME came back does it connect its --qps data QPs (RDMA WRITE).
 * Each connect request carries struct kv_hello_pd so that the decode side
 * can group the QPs of one sender. The token is proven both ways, never
 * sent (base/auth_core.h, plane "kvxfer"): the control QP's request carries
 * the sender's fresh nonce cn; the decode rank's accept (struct
 * kv_accept_pd) its fresh nonce sn and its proof, which the sender checks
 * before it sends anything; HELLO carries the sender's proof, checked
 * before the decode rank allocates or shows anything. A data QP is
 * accepted only for a sender whose HELLO passed, with a proof under the
 * session's data-QP secret (rc_auth_session, never sent) of its index.
 * The context in every MAC (kv_auth_start): the source rank, its data
 * QPs and session, and the decode rank's port, all of which both sides
 * know before the accept.
 *
 * Per layer, a sender posts the layer's writes spread over its data QPs and
 * ends each QP's share with one RDMA WRITE_WITH_IMM (zero bytes when the QP
 * got no segment). RC orders a QP's writes, so that notification means all
 * of the QP's bytes of the layer have landed. The decode rank counts them:
 * a layer is complete when every contributing source rank delivered
 * exactly one on each of its data QPs (struct kv_tally).
 */
/* "KVX7": the token proven by challenge and response, both ways, and
 * data QPs by a proof of the session. "KVX6" (and "KVX5") proved it with
 * an HMAC of the request's own fields, which a captured request replays,
 * and showed the data QPs' secret; "KVX6" made --verify's content in
 * 8-byte words, "KVX5" an element at a time. "KVX4" landed by request runs
 * and showed the token in HELLO; "KVX3" landed page by page, "KVX2" had no
 * landing: such a peer is refused by name. */
#define KV_PD_MAGIC 0x3758564bu
#define KV_PD_MAGIC_V6 0x3658564bu
#define KV_PD_MAGIC_V5 0x3558564bu
#define KV_PD_MAGIC_V4 0x3458564bu
#define KV_PD_MAGIC_V3 0x3358564bu
#define KV_PD_MAGIC_V2 0x3258564bu
#define KV_ACC_MAGIC 0x3741564bu                     /* "KVA7": the decode rank's accept */
#define KV_LAND_NONE UINT32_MAX                      /* ALLOC: no landing run */
#define KV_PD_LEN (16 + RC_AUTH_NONCE + RC_AUTH_MAC) /* 48 of the 56 a connect request holds */
#define KV_ACC_LEN (4 + RC_AUTH_NONCE + RC_AUTH_MAC) /* 36 */
#define KV_AUTH_PLANE "kvxfer"
#define KV_DATA_LABEL "rdmactl kvxfer data-qp v7"
/* Without a token, the data QPs' secret is derived under this public key:
 * it binds them to the exchange's nonces, not to a token. */
#define KV_OPEN_KEY "rdmactl kvxfer without a token"
#define KV_MSG_MAX 8192
#define KV_REASON_MAX 256

struct kv_hello_pd {
	uint32_t rank;                /* source rank */
	uint32_t qp;                  /* 0: control, 1..nqps: data */
	uint32_t nqps;                /* data QPs per destination */
	uint32_t session;             /* random per sender process (HELLO repeats it) */
	uint8_t nonce[RC_AUTH_NONCE]; /* control QP: the sender's fresh nonce cn */
	uint8_t proof[RC_AUTH_MAC];   /* data QP: kv_pd_data_prove of it */
};

/* The private data of the decode rank's accept of a control QP. */
struct kv_accept_pd {
	uint8_t nonce[RC_AUTH_NONCE]; /* its fresh nonce sn */
	uint8_t proof[RC_AUTH_MAC];   /* rc_auth_mac(token, a, RC_AUTH_SERVER); zeros without one */
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
	KV_MSG_HELLO = 0x20,   /* s->d: rank, QPs, session, geometry, proof */
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
			uint8_t proof[RC_AUTH_MAC]; /* rc_auth_mac(token, a, RC_AUTH_CLIENT) */
			uint32_t land;              /* enum kv_pack: the source rank's --land */
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

uint32_t kv_dtype_size(enum kv_dtype d);

/* 2 (K and V) for paged, 1 for MLA. */
uint32_t kv_halves(const struct kv_geom *g);

/* The heads rank holds at TP degree tp: kv_heads/tp of them, or, where
 * tp > kv_heads, a replica of head rank*kv_heads/tp. MLA: the latent. */
void kv_rank_heads(const struct kv_geom *g, uint32_t tp, uint32_t rank, struct kv_heads *h);
/* Bytes of one page on the source (dst false) or destination side. */
uint64_t kv_page_bytes(const struct kv_geom *g, bool dst);
/* Bytes of one token's head row: head_dim * dtype size. */
uint32_t kv_row_bytes(const struct kv_geom *g);
/* Bytes one token takes in the whole model (all layers, K+V, all heads once). */
uint64_t kv_bytes_per_token(const struct kv_geom *g);

/* Source ranks feeding dst (a bit set), and how many. */
uint64_t kv_route_sources(const struct kv_route *r, int n, uint32_t dst);

/* Sort a route's segments into destination order (page, then offset). */
void kv_segments_dst_order(struct kv_seg *s, size_t n);
/* Writes of one layer half: segments merged where both sides are contiguous
 * in the order given (unpacked: source order), or, packed, where the
 * destination is (packed: destination order, s sorted by
 * kv_segments_dst_order). Pages count as apart: the allocation decides
 * whether neighbours touch. */
uint64_t kv_seg_writes(const struct kv_seg *s, size_t n, bool packed);
/* Whether to pack a route of bytes per layer half in writes_never unpacked or
 * writes_packed packed writes: ALWAYS or NEVER (never AUTO). */
enum kv_pack kv_pack_choose(enum kv_pack want, uint64_t bytes, uint64_t writes_never,
			    uint64_t writes_packed);

/* Whether the route's pieces are split in destination rows (landing applies). */
bool kv_land_applies(const struct kv_geom *g, const struct kv_route *r);

/* Bytes of one landing unit of decode rank dst: a page of tokens of every
 * route into it where landing applies (0: none applies). */
uint64_t kv_land_unit(const struct kv_geom *g, uint32_t dst);
/* Offset in the landing area (units per layer half) of the
 * route's block of layer half (layer, half), for a request of tokens whose
 * run starts at unit at. */
uint64_t kv_land_block(const struct kv_geom *g, const struct kv_route *r, uint32_t tokens,
		       uint32_t units, uint32_t at, uint32_t layer, uint32_t half);
/* The offset in the route's block of destination page dst_page, offset
 * dst_off inside the route's pieces (kv_land_applies). */
uint32_t kv_land_off(const struct kv_geom *g, const struct kv_route *r, uint32_t dst_page,
		     uint32_t dst_off);
/* Rewrite the route's segments' destinations into offsets in its block:
 * dst_page 0, dst_off kv_land_off. The block of a request of tokens must
 * fit 32 bits (kv_route_bytes), as a page does. */
void kv_land_segments(const struct kv_geom *g, const struct kv_route *r, struct kv_seg *s, size_t n);
/* Writes of one layer half as the sender posts them: segments merged where
 * the destination is contiguous within a page and, unpacked, the source
 * memory too (a request's source pages follow one another, page after
 * page, src_page_bytes apart; 0: pages count as apart, as kv_seg_writes);
 * packed, the staging always is. */
uint64_t kv_post_writes(const struct kv_seg *s, size_t n, bool packed, uint64_t src_page_bytes);

uint64_t kv_gather_writes(const struct kv_seg *s, size_t n, uint32_t max_sge,
			  uint64_t src_page_bytes);
/* Copy the route's part of destination page page (its tokens rows) from
 * its block into pool page pool. */
void kv_land_unpack(const struct kv_geom *g, const struct kv_route *r, const char *block,
		    char *pool, uint32_t page, uint32_t tokens);

/* Deterministic content: element dim, of elem_bytes bytes (little-endian),
 * of head (global index) for token of layer half of request req. Both
 * sides compute it: the source to fill, the destination to verify. A row is
 * pseudo-random words of 8 bytes, so the content of an element depends on
 * its size (protocol 6). */
uint32_t kv_content(uint32_t req, uint32_t layer, uint32_t half, uint32_t token, uint32_t head,
		    uint32_t dim, uint32_t elem_bytes);
/* Fill (or check) one layer half of one rank's pages for tokens. pages[i]
 * is the address of logical page i. Check returns 0 or -EBADMSG with err
 * naming the first wrong element. */
void kv_fill(const struct kv_geom *g, bool dst, uint32_t rank, uint32_t req, uint32_t layer,
	     uint32_t half, uint32_t tokens, char *const *pages);
int kv_check(const struct kv_geom *g, uint32_t rank, uint32_t req, uint32_t layer, uint32_t half,
	     uint32_t tokens, char *const *pages, struct rc_err *err);

int kv_pd_encode(const struct kv_hello_pd *p, void *buf, size_t cap);
/* 0, -EPROTO for a peer of an earlier protocol (KV_PD_MAGIC_V2 to _V6), or -EBADMSG. */
int kv_pd_decode(const void *buf, size_t len, struct kv_hello_pd *p);
int kv_acc_encode(const struct kv_accept_pd *a, void *buf, size_t cap);
/* 0 or -EBADMSG (not a kvxfer accept of this protocol, or cut short). */
int kv_acc_decode(const void *buf, size_t len, struct kv_accept_pd *a);
/* The exchange of control QP ctrl to a decode rank listening on port:
 * plane "kvxfer", the context (rank, nqps, session, port) and cn. */
void kv_auth_start(struct rc_auth *a, const struct kv_hello_pd *ctrl, uint16_t port);
/* The session's data-QP secret, once a holds both nonces: rc_auth_session
 * under token (without one, under a public label: it then binds the data
 * QPs to the exchange's nonces only). */
void kv_data_key(const char *token, const struct rc_auth *a, uint8_t key[RC_AUTH_KEY]);
/* Fill p->proof: the HMAC under key of everything else p says. */
void kv_pd_data_prove(struct kv_hello_pd *p, const uint8_t key[RC_AUTH_KEY]);
/* Whether p's proof is that of key, compared in constant time. */
bool kv_pd_data_proven(const struct kv_hello_pd *p, const uint8_t key[RC_AUTH_KEY]);

/* Encode into buf; returns the length, or -ENOSPC / -EINVAL. */
int kv_msg_encode(const struct kv_msg *m, void *buf, size_t cap);
/* Decode a whole message; ALLOC pages go to pages (at most max). Returns 0
 * or -EBADMSG. */
int kv_msg_decode(const void *buf, size_t len, struct kv_msg *m, uint32_t *pages, size_t max);
const char *kv_msg_name(uint16_t type);

/* 0 or -EINVAL (sizes), -ENOMEM. */
int kv_tally_init(struct kv_tally *t, uint32_t layers, uint32_t src_tp, uint64_t sources);
void kv_tally_fini(struct kv_tally *t);
/* A source rank of sources joins with nqps data QPs (1..KV_MAX_QPS): 0 or -EINVAL. */
int kv_tally_join(struct kv_tally *t, uint32_t rank, uint32_t nqps);
/* A notification of layer from rank on its data QP qp (1..nqps): enum kv_tally_res. */
int kv_tally_note(struct kv_tally *t, uint32_t rank, uint32_t qp, uint32_t layer);

#endif
