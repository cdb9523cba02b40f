/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/kv.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_KV_CORE_H
#define RDMACTL_KV_CORE_H

#include <rdmactl/kv.h>

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

/* Deterministic content: element dim of head (global index) for token of
 * layer half of request req. Both sides compute it: the source to fill,
 * the destination to verify. */
uint32_t kv_content(uint32_t req, uint32_t layer, uint32_t half, uint32_t token, uint32_t head,
		    uint32_t dim);
/* Fill (or check) one layer half of one rank's pages for tokens. pages[i]
 * is the address of logical page i. Check returns 0 or -EBADMSG with err
 * naming the first wrong element. */
void kv_fill(const struct kv_geom *g, bool dst, uint32_t rank, uint32_t req, uint32_t layer,
	     uint32_t half, uint32_t tokens, char *const *pages);
int kv_check(const struct kv_geom *g, uint32_t rank, uint32_t req, uint32_t layer, uint32_t half,
	     uint32_t tokens, char *const *pages, struct rc_err *err);

int kv_pd_encode(const struct kv_hello_pd *p, void *buf, size_t cap);
/* Fill p->proof: the token's HMAC over everything else p says (token NULL
 * or "": zeros). */
void kv_pd_prove(struct kv_hello_pd *p, const char *token);
/* Whether p proves token, compared in constant time; any p when token is
 * NULL or "" (a decode rank without a token admits anyone). */
bool kv_pd_authentic(const struct kv_hello_pd *p, const char *token);
/* 0, -EPROTO for a peer of an earlier protocol (KV_PD_MAGIC_V2, _V3, _V4), or -EBADMSG. */
int kv_pd_decode(const void *buf, size_t len, struct kv_hello_pd *p);

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
