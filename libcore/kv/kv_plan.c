// SPDX-License-Identifier: MIT
/*
 * The plan of one request (kv_plan): bytes, pages, routes, segments and
 * writes per rank, landing or not, and the time a link leaves exposed.
 * It stands on the geometry (kv_geom.c) and the landing area's choice
 * (kv_land.c); neither calls back into it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/kv.h>
#include <rdmactl/kv_core.h>

#include "kv_int.h"

/* One route's segments, writes (never packed, packed, and what is posted,
 * landing or not) and bytes, added to the plan's totals and to its two
 * ranks'. */
static int plan_route(const struct kv_geom *g, const struct kv_plan_in *in, struct kv_plan *p,
		      const struct kv_route *r, struct rc_err *err)
{
	uint64_t per = (uint64_t)g->layers * kv_halves(g), wn, wp, posted = 0;
	uint64_t bytes = kv_route_bytes(g, r, in->tokens);
	bool packed, land = kv_land_choose(in->land, g, r);
	struct kv_seg *s;
	size_t ns;
	int rc;

	if ((rc = kv_segments(g, r, in->tokens, &s, &ns, err)))
		return rc;
	for (size_t j = 0; j < ns; j++) {
		if (s[j].len < p->seg_min)
			p->seg_min = s[j].len;
		if (s[j].len > p->seg_max)
			p->seg_max = s[j].len;
	}
	wn = kv_seg_writes(s, ns, false);
	if (land) {
		uint64_t lwn, lwp;

		kv_land_segments(g, r, s, ns);
		lwn = kv_post_writes(s, ns, false, p->src_page_bytes);
		kv_segments_dst_order(s, ns);
		lwp = kv_gather_writes(s, ns, p->max_sge, p->src_page_bytes);
		posted = kv_pack_choose(in->pack, bytes, lwn, lwp) == KV_PACK_ALWAYS ? lwp : lwn;
		free(s);
		if ((rc = kv_segments(g, r, in->tokens, &s, &ns, err)))
			return rc;
	}
	kv_segments_dst_order(s, ns);
	wp = kv_gather_writes(s, ns, p->max_sge, 0);
	free(s);
	packed = kv_pack_choose(in->pack, bytes, wn, wp) == KV_PACK_ALWAYS;
	if (!land)
		posted = packed ? wp : wn;
	p->routes_landed += land;
	p->writes_posted += posted * per;
	p->routes++;
	p->routes_packed += packed;
	p->writes_never += wn * per;
	p->writes_packed += wp * per;
	p->writes += (packed ? wp : wn) * per;
	p->src[r->src].writes += posted * per;
	p->dst[r->dst].writes += posted * per;
	p->dst[r->dst].notifications += (uint64_t)g->layers * p->qps;
	p->wire_bytes += bytes * g->layers * kv_halves(g);
	p->src[r->src].bytes += bytes * per;
	p->dst[r->dst].bytes += bytes * per;
	p->src[r->src].segments += ns * per;
	p->dst[r->dst].segments += ns * per;
	p->segments += ns * per;
	return 0;
}

/* The prefill's pace (from --layer-compute-us or --prefill-tokens-per-s),
 * the rate that hides the transfer under it, and what a link of
 * in->link_gbps leaves exposed, streamed layer by layer or sent at once. */
static void plan_timing(const struct kv_geom *g, const struct kv_plan_in *in, struct kv_plan *p)
{
	uint64_t busiest = 0;

	for (uint32_t s = 0; s < g->src_tp; s++)
		if (p->src[s].bytes > busiest)
			busiest = p->src[s].bytes;
	if (in->layer_compute_us > 0) {
		p->layer_s = in->layer_compute_us * 1e-6;
		p->prefill_s = p->layer_s * g->layers;
	} else if (in->prefill_tokens_per_s > 0) {
		p->prefill_s = in->tokens / in->prefill_tokens_per_s;
		p->layer_s = p->prefill_s / g->layers;
	}
	if (p->prefill_s > 0) {
		p->need_gbps_per_link = (double)busiest * 8 / 1e9 / p->prefill_s;
		p->need_gbps_total = (double)p->wire_bytes * 8 / 1e9 / p->prefill_s;
	}
	if (in->link_gbps > 0) {
		double x = (double)busiest / g->layers * 8 / (in->link_gbps * 1e9);

		p->exposed_bulk_s = x * g->layers;
		p->exposed_stream_s =
			p->layer_s > 0 ? x + (g->layers - 1) * (x > p->layer_s ? x - p->layer_s : 0)
				       : p->exposed_bulk_s;
	}
}

int kv_plan(const struct kv_geom *g, const struct kv_plan_in *in, struct kv_plan *p,
	    struct rc_err *err)
{
	struct kv_route r[KV_MAX_ROUTES];
	int nr, rc;

	memset(p, 0, sizeof(*p));
	if ((rc = kv_geom_check(g, err)))
		return rc;
	if (in->tokens < 1)
		return rc_err_opt(err, EINVAL, "{tokens} must be at least 1");
	nr = kv_routes(g, r, KV_MAX_ROUTES);
	if (nr < 0)
		return rc_err_set(err, ENOSPC, "too many routes");
	p->bytes_per_token = kv_bytes_per_token(g);
	p->bytes_per_token_layer = p->bytes_per_token / g->layers;
	p->bytes_per_request = p->bytes_per_token * in->tokens;
	p->src_page_bytes = kv_page_bytes(g, false);
	p->dst_page_bytes = kv_page_bytes(g, true);
	p->src_pages = kv_pages_for(g, false, in->tokens);
	p->dst_pages = kv_pages_for(g, true, in->tokens);
	p->seg_min = UINT64_MAX;
	p->pack = in->pack;
	p->land = in->land;
	p->qps = in->qps ? in->qps : 1;
	p->max_sge = kv_gather_cap(in->max_sge);
	for (int i = 0; i < nr; i++)
		if ((rc = plan_route(g, in, p, &r[i], err)))
			return rc;
	plan_timing(g, in, p);
	return 0;
}
