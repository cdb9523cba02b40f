// SPDX-License-Identifier: MIT
/*
 * kvxfer serve, landing: the routes that land (kv_land.c) wrote their
 * pieces into the landing area; once a layer's notifications are all in,
 * its pieces are copied into the pool pages, a page at a time between
 * polls of the event loop (as --verify), so that the sources' heartbeats
 * are not starved. Layers land in order (every data QP delivers its
 * notifications in order), so they are unpacked in order too; a request
 * is complete, or verified, once its last layer is unpacked.
 */
#include "kv_recv.h"
#include <rdmactl/kv_core.h>

/* The next page of q to unpack, or false when layer q->unpacked is done. */
static bool next_page(struct kv_receiver *r, struct rreq *q)
{
	while (q->u_half < kv_halves(r->g)) {
		if (q->u_page == q->npages) {
			q->u_page = 0;
			q->u_src++;
		}
		if (q->u_src < r->g->src_tp && q->land >> q->u_src & 1)
			return true;
		if (q->u_src < r->g->src_tp) {
			q->u_src++;
			continue;
		}
		q->u_src = 0;
		q->u_half++;
	}
	q->u_half = 0;
	return false;
}

#define UNPACK_SLICE_S 0.005

bool kvr_unpack_step(struct kv_receiver *r)
{
	uint32_t pt = r->g->dst_page_tokens;
	double end = rc_now() + UNPACK_SLICE_S;
	bool more = false;

	for (int k = 0; k < KV_MAX_SLOTS; k++) {
		struct rreq *q = &r->reqs[k];

		if (!q->used || !q->land || q->cancelling || q->unpacked >= q->layers_landed)
			continue;
		while (q->unpacked < q->layers_landed && rc_now() < end) {
			uint32_t l = q->unpacked, p;
			const struct kv_route *rt;
			char *pool;

			if (!next_page(r, q)) {
				q->unpacked++;
				continue;
			}
			p = q->pages[q->u_page];
			pool = kvr_page_addr(r, l, q->u_half, p);
			rt = &r->from[q->u_src];
			kv_land_unpack(r->g, rt,
				       (char *)r->pool.buf + r->land_off +
					       kv_land_block(r->g, rt, q->tokens, r->land_units,
							     q->land_at, l, q->u_half),
				       pool, q->u_page,
				       q->tokens - q->u_page * pt < pt ? q->tokens - q->u_page * pt
								       : pt);
			q->u_page++;
		}
		q->last = rc_now(); /* busy here, not silent there */
		if (q->unpacked == r->g->layers)
			kvr_all_landed(r, q);
		else if (q->unpacked < q->layers_landed)
			more = true;
	}
	return more;
}
