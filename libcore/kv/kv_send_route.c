// SPDX-License-Identifier: MIT
/*
 * kvxfer send, the routes: which heads go to which decode rank, as
 * segments of pages; landing or not, as the decode rank's WELCOME says;
 * packed (in destination order, gathered or copied into staging) or not,
 * from --pack and the write counts; and the staging slot that packing needs.
 */
#include <errno.h>
#include <stdlib.h>

#include "kv_send.h"
#include <rdmactl/kv_core.h>

/* A route's segments, with landing offsets when it lands (land), in
 * destination order when --pack (or auto, from the write counts the plan
 * gives) packs it. */
static int route_segs(struct kv_sender *s, const struct kv_route *r, bool land,
		      struct kv_seg **segs, size_t *n, bool *pack, struct rc_err *err)
{
	uint64_t wn, wp;
	int rc;

	if (land && kv_route_bytes(s->g, r, s->o->tokens) > UINT32_MAX)
		return rc_err_opt(err, EOVERFLOW,
				  "route %u -> %u moves %llu bytes a layer half: too many "
				  "to land (at most 4 GiB); use {land} never",
				  r->src, r->dst,
				  (unsigned long long)kv_route_bytes(s->g, r, s->o->tokens));
	if ((rc = kv_segments(s->g, r, s->o->tokens, segs, n, err)))
		return rc;
	if (land)
		kv_land_segments(s->g, r, *segs, *n);
	wn = land ? kv_post_writes(*segs, *n, false, s->src_page_bytes)
		  : kv_seg_writes(*segs, *n, false);
	kv_segments_dst_order(*segs, *n);
	wp = kv_gather_writes(*segs, *n, s->gather, land ? s->src_page_bytes : 0);
	/* A device that takes no gather list where no staging was sized for a
	 * copy (--max-sge was not 1): the route goes unpacked. */
	*pack = kv_pack_choose(s->o->pack, kv_route_bytes(s->g, r, s->o->tokens), wn, wp) ==
			KV_PACK_ALWAYS &&
		(s->gather > 1 || s->copy_ok);
	if (*pack)
		return 0;
	free(*segs); /* source order: where unpacked writes merge */
	*segs = NULL;
	if ((rc = kv_segments(s->g, r, s->o->tokens, segs, n, err)))
		return rc;
	if (land)
		kv_land_segments(s->g, r, *segs, *n);
	return 0;
}

/* Bytes of one request's staging slot: the packed routes' shares, before
 * the decode ranks said whether a route lands: as much as either way packs. */
int kvs_stage_size(struct kv_sender *s, struct rc_err *err)
{
	struct kv_route r[KV_MAX_ROUTES];
	int n = kv_routes(s->g, r, KV_MAX_ROUTES), rc;

	s->stage_slot_bytes = 0;
	if (!s->copy_ok)
		return 0;
	for (int k = 0; k < n; k++) {
		struct kv_seg *segs;
		size_t ns;
		bool pack = false, pk;

		if (r[k].src != s->o->c.rank)
			continue;
		for (int land = 0; land < 2; land++) {
			if (land && !kv_land_choose(s->o->land, s->g, &r[k]))
				continue;
			if ((rc = route_segs(s, &r[k], land, &segs, &ns, &pk, err)))
				return rc;
			free(segs);
			pack |= pk;
		}
		if (pack)
			s->stage_slot_bytes += kv_route_bytes(s->g, &r[k], s->o->tokens) *
					       s->g->layers * kv_halves(s->g);
	}
	return 0;
}

/* Which heads go to which connected decode rank, as segments. */
int kvs_map_routes(struct kv_sender *s, struct rc_err *err)
{
	struct kv_route r[KV_MAX_ROUTES];
	int n = kv_routes(s->g, r, KV_MAX_ROUTES), rc;
	uint64_t stage = 0;

	for (int k = 0; k < n; k++) {
		struct sdst *d = NULL;

		if (r[k].src != s->o->c.rank)
			continue;
		for (int i = 0; i < s->nd; i++)
			if (s->d[i].rank == r[k].dst)
				d = &s->d[i];
		if (!d)
			return rc_err_opt(
				err, EINVAL,
				"source rank %u feeds decode rank %u: give its address with {connect}",
				s->o->c.rank, r[k].dst);
		d->route = r[k];
		/* The decode rank decided, from the same rule: WELCOME gave the area. */
		d->land = d->land_base != 0;
		if (d->land && !kv_land_applies(s->g, &r[k]))
			return rc_err_set(err, EPROTO,
					  "decode rank %u offers a landing area for a route "
					  "that cannot land",
					  d->rank);
		if (d->land && d->land_units < s->dst_pages)
			return rc_err_opt(
				err, ENOSPC,
				"decode rank %u's landing area holds %u pages, a request "
				"of %u tokens needs %u: serve with a larger {land_pages}, or send with "
				"{land} never",
				d->rank, d->land_units, s->o->tokens, s->dst_pages);
		if ((rc = route_segs(s, &r[k], d->land, &d->segs, &d->nsegs, &d->pack, err)))
			return rc;
		s->sum->routes++;
		s->sum->routes_landed += d->land;
		if (!d->pack)
			continue;
		s->sum->routes_packed++;
		if (s->gather > 1)
			continue;
		d->stage_off = stage;
		stage += kv_route_bytes(s->g, &r[k], s->o->tokens) * s->g->layers * kv_halves(s->g);
	}
	if (stage > s->stage_slot_bytes)
		return rc_err_set(err, EPROTO, "staging: %llu bytes planned, %llu mapped",
				  (unsigned long long)s->stage_slot_bytes,
				  (unsigned long long)stage);
	for (int i = 0; i < s->nd; i++)
		for (int j = 0; j < i; j++)
			if (s->d[i].rank == s->d[j].rank)
				return rc_err_set(err, EINVAL, "%s and %s are both decode rank %u",
						  s->d[j].name, s->d[i].name, s->d[i].rank);
	return 0;
}
