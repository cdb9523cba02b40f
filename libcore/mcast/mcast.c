// SPDX-License-Identifier: MIT
/*
 * The multicast itself. Every rank runs one state machine over the group:
 * chunks that landed (the parent's immediate-data counter on channel DATA)
 * are forwarded to each child as soon as the child has a free ring slot
 * (its credits on channel CREDIT), hashed (XXH64, or SHA-256) and handed
 * to the consumer; a ring slot goes back to the parent once the chunk in it
 * was consumed and every live child's write of it completed. Nothing here
 * posts or polls on its own: writes go through rc_group_write_imm,
 * completions through rc_group_poll (the verbs data path below them).
 *
 * A relay that dies fails its subtree: the children see their parent gone,
 * stop, and tell their own children (channel STOP); everyone reports to the
 * root over its direct connection, so the root names who got the whole blob.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/mcast.h>
#include <rdmactl/ops.h>
#include <rdmactl/sha256_core.h>
#include <rdmactl/mem_core.h>
#include <rdmactl/group_core.h>
#include <rdmactl/mcast_core.h>

#include "mcast_int.h"

/* Chunk c's slot as the NIC addresses it (GPU memory: the device's). */
static void *slot_nic(const struct mc *m, uint32_t c)
{
	return (void *)(uintptr_t)(m->ring_addr + mcast_slot_off(m, c));
}

static double ms_since(const struct mc *m)
{
	return (rc_now() - m->t0) * 1000.0;
}

/* The digest of the bytes this rank filled (the root) or consumed, in order. */
static void digest_init(struct mc *m)
{
	if (m->o->digest == RC_MCAST_DIGEST_XXH64)
		rc_xxh64_init(&m->dg.xxh, 0);
	else
		rc_sha256_init(&m->dg.sha);
}

static void digest_final(struct mc *m, uint8_t out[RC_MCAST_DIGEST_MAX])
{
	memset(out, 0, RC_MCAST_DIGEST_MAX);
	if (m->o->digest == RC_MCAST_DIGEST_XXH64)
		rc_xxh64_final(&m->dg.xxh, out);
	else
		rc_sha256_final(&m->dg.sha, out);
}

static void why(struct mc *m, const char *msg)
{
	struct rc_mcast_recv *s = &m->res->self;

	if (!s->why[0])
		snprintf(s->why, sizeof(s->why), "%.*s", RC_MCAST_WHY_MAX - 1, msg);
}

static int setup_ring(struct mc *m, struct rc_err *err)
{
	struct rc_mem_spec spec = m->o->mem;
	int rc;

	if (m->me == m->o->shape.root)
		spec.kind = RC_MEM_HOST; /* the root sends from host memory it fills */
	spec.len = (size_t)rc_mcast_ring_bytes(m->R, m->chunk);
	spec.path = NULL;
	if ((rc = rc_mem_alloc_spec(&m->mem, &spec, true, err)))
		return rc;
	m->mem_on = true;
	if ((rc = rc_mem_register(&m->mem, rc_group_pd(m->g), rc_access_ibv(RC_ACCESS_RW), &m->mr,
				  err)))
		return rc;
	m->ring_addr = m->mem.kind == RC_MEM_CUDA ? m->mem.mr_addr : (uint64_t)(uintptr_t)m->mem.buf;
	if (m->mem.kind == RC_MEM_CUDA && !(m->stage = malloc(m->chunk)))
		return rc_err_set(err, ENOMEM, "out of memory");
	return 0;
}

/* The root times a burst of plain writes to its first child: the link's
 * bandwidth for the ideal, when none was given. */
static int calibrate(struct mc *m, struct rc_err *err)
{
	struct kid *k = &m->kids[0];
	uint64_t bytes = (uint64_t)m->R * m->chunk;
	uint32_t pieces;
	double t;
	int rc;

	if (bytes > CALIBRATE_MAX)
		bytes = CALIBRATE_MAX < m->chunk ? m->chunk : CALIBRATE_MAX;
	pieces = (uint32_t)(bytes / m->chunk);
	if (pieces > (uint32_t)m->R)
		pieces = (uint32_t)m->R;
	if (pieces > 32)
		pieces = 32;
	t = rc_now();
	for (uint32_t i = 0; i < pieces; i++)
		if ((rc = rc_group_write_imm(m->g, k->rank, mcast_slot_host(m, i), m->chunk,
					     m->mr->lkey, k->addr + (uint64_t)i * m->chunk, k->rkey,
					     -1, 0, err)))
			return rc;
	k->base = pieces;
	while (rc_group_writes_done(m->g, k->rank) < pieces) {
		if (!rc_group_peer_alive(m->g, k->rank))
			return rc_group_peer_error(m->g, k->rank, "the link was measured", err);
		if (rc_now() - t > m->o->timeout_ms / 1000.0)
			return rc_err_set(err, ETIMEDOUT,
					  "measuring the link to rank %d took over %d ms", k->rank,
					  m->o->timeout_ms);
		if ((rc = rc_group_poll(m->g, POLL_MS, err)))
			return rc;
	}
	t = rc_now() - t;
	m->res->link_bw = t > 0 ? (double)pieces * m->chunk / t : 0;
	return 0;
}

static bool kid_done_with(const struct mc *m, const struct kid *k, uint32_t chunk)
{
	return k->lost || rc_group_writes_done(m->g, k->rank) >= k->base + chunk + 1;
}

/* The chunks the root's feeder may fill: a ring's worth past the fewest
 * any live child is done with (kid_done_with; a lost child holds no slot). */
static uint32_t fill_limit(const struct mc *m)
{
	uint64_t least = m->n;

	for (int i = 0; i < m->nkids; i++) {
		const struct kid *k = &m->kids[i];
		uint64_t done = rc_group_writes_done(m->g, k->rank) - k->base;

		if (!k->lost && done < least)
			least = done;
	}
	least += (uint64_t)m->R;
	return least < m->n ? (uint32_t)least : m->n;
}

/* A child that is gone is dropped; one that had everything and left is
 * not a loss. */
static void drop_dead_kids(struct mc *m)
{
	for (int i = 0; i < m->nkids; i++) {
		struct kid *k = &m->kids[i];

		if (k->lost || rc_group_peer_alive(m->g, k->rank))
			continue;
		if (!(m->n && k->sent == m->n && kid_done_with(m, k, m->n - 1)))
			m->res->self.children_lost++;
		k->lost = true;
	}
}

/* Forward what we have to each child its ring has room for. */
static int forward(struct mc *m, bool *moved, struct rc_err *err)
{
	for (int i = 0; i < m->nkids; i++) {
		struct kid *k = &m->kids[i];

		while (!k->lost && k->sent < m->have &&
		       k->sent < (uint64_t)m->R + rc_group_imm_count(m->g, k->rank, CH_CREDIT)) {
			uint32_t c = k->sent;
			int rc = rc_group_write_imm(m->g, k->rank, slot_nic(m, c),
						    mcast_chunk_len(m, c), m->mr->lkey,
						    k->addr + mcast_slot_off(m, c), k->rkey,
						    CH_DATA, c, err);

			if (rc && !rc_group_peer_alive(m->g, k->rank)) {
				k->lost = true;
				m->res->self.children_lost++;
				break;
			}
			if (rc)
				return rc;
			k->sent++;
			*moved = true;
		}
	}
	return 0;
}

static void blocks_usable(struct mc *m)
{
	struct rc_mcast_recv *s = &m->res->self;
	uint64_t bytes = (uint64_t)m->consumed * m->chunk;

	if (bytes > m->size)
		bytes = m->size;
	/* a block past the end of the blob is usable when the blob is */
	while (m->blocks_done < s->nblocks && (m->o->block_ends[m->blocks_done] <= bytes ||
					       (bytes == m->size && m->consumed == m->n)))
		s->block_ms[m->blocks_done++] = ms_since(m);
}

/* Hash and hand over the chunks that landed, in order. */
static int consume(struct mc *m, bool *moved, struct rc_err *err)
{
	while (m->consumed < m->have) {
		uint32_t c = m->consumed, len = mcast_chunk_len(m, c);
		const void *p = mcast_slot_host(m, c);
		int rc;

		if (m->stage) {
			if ((rc = rc_mem_read(&m->mem, mcast_slot_off(m, c), m->stage, len, err)))
				return rc;
			p = m->stage;
		}
		if (m->o->corrupt && m->o->corrupt_at - (uint64_t)c * m->chunk < len) {
			if (!m->flip && !(m->flip = malloc(m->chunk)))
				return rc_err_set(err, ENOMEM, "out of memory");
			memcpy(m->flip, p, len);
			m->flip[m->o->corrupt_at - (uint64_t)c * m->chunk] ^= 0xff;
			p = m->flip;
		}
		mcast_digest_update(m, p, len);
		if (m->o->consume &&
		    (rc = m->o->consume(m->o->arg, (uint64_t)c * m->chunk, p, len, err)))
			return rc;
		if (c == 0)
			m->res->self.first_ms = ms_since(m);
		m->consumed++;
		blocks_usable(m);
		*moved = true;
	}
	return 0;
}

/* Give ring slots back to the parent: consumed, and sent on by every live
 * child. The last ring's worth needs no credit (nothing follows it). */
static int credit(struct mc *m, bool *moved, struct rc_err *err)
{
	while (m->credited < m->consumed && m->credited + (uint32_t)m->R < m->n) {
		uint32_t c = m->credited;
		int rc;

		for (int i = 0; i < m->nkids; i++)
			if (!kid_done_with(m, &m->kids[i], c))
				return 0;
		rc = rc_group_write_imm(m->g, m->parent, NULL, 0, 0, m->paddr, m->prkey, CH_CREDIT,
					c, err);
		if (rc)
			return rc;
		m->credited++;
		*moved = true;
	}
	return 0;
}

static bool all_sent(const struct mc *m)
{
	for (int i = 0; i < m->nkids; i++)
		if (!m->kids[i].lost &&
		    (m->kids[i].sent < m->n || !kid_done_with(m, &m->kids[i], m->n - 1)))
			return false;
	return true;
}

static bool finished(const struct mc *m)
{
	uint32_t credits = m->n > (uint32_t)m->R ? m->n - (uint32_t)m->R : 0;

	if (m->n && !all_sent(m))
		return false;
	if (m->parent < 0)
		return m->hashed == m->n; /* filled, posted and hashed */
	return m->consumed == m->n && m->credited >= credits;
}

/* Stop the subtree: an empty write on channel STOP to each live child,
 * bounded (a child that is gone learns it from its connection). */
static void stop_kids(struct mc *m)
{
	double end = rc_now() + 1.0;

	for (int i = 0; i < m->nkids; i++)
		if (!m->kids[i].lost)
			rc_group_write_imm(m->g, m->kids[i].rank, NULL, 0, 0, m->kids[i].addr,
					   m->kids[i].rkey, CH_STOP, 0, NULL);
	while (rc_now() < end && !rc_group_poll(m->g, POLL_MS, NULL)) {
		bool quiet = true;

		for (int i = 0; i < m->nkids; i++)
			if (!m->kids[i].lost && rc_group_peer_alive(m->g, m->kids[i].rank) &&
			    rc_group_writes_done(m->g, m->kids[i].rank) <
				    m->kids[i].base + m->kids[i].sent + 1)
				quiet = false;
		if (quiet)
			break;
	}
}

/* Why a receiver cannot go on, or NULL. */
static int upstream_trouble(struct mc *m, struct rc_err *err)
{
	if (rc_group_imm_count(m->g, m->parent, CH_STOP))
		return rc_err_set(err, ECONNABORTED,
				  "rank %d stopped relaying at chunk %u of %u (its upstream failed)",
				  m->parent, m->have, m->n);
	if (!rc_group_peer_alive(m->g, m->parent) && m->have < m->n) {
		char what[96];

		snprintf(what, sizeof(what), "chunk %u of %u was awaited from it", m->have + 1,
			 m->n);
		return rc_group_peer_error(m->g, m->parent, what, err);
	}
	return 0;
}

/* Why nothing moved for the timeout: a child that holds its ring, the
 * root's reading, or the parent that sent nothing. */
static int stalled(struct mc *m, struct rc_err *err)
{
	for (int i = 0; i < m->nkids; i++)
		if (!m->kids[i].lost && m->kids[i].sent < m->have)
			return rc_err_set(err, ETIMEDOUT,
					  "rank %d freed no ring slot for %d ms (chunk %u of %u)",
					  m->kids[i].rank, m->o->timeout_ms, m->kids[i].sent + 1,
					  m->n);
	if (m->parent >= 0)
		return rc_err_set(err, ETIMEDOUT, "no chunk from rank %d for %d ms (chunk %u of %u)",
				  m->parent, m->o->timeout_ms, m->have + 1, m->n);
	if (mcast_feed_busy(m))
		return rc_err_set(err, ETIMEDOUT, "reading chunk %u of %u took over %d ms",
				  m->have + 1, m->n, m->o->timeout_ms);
	return rc_err_set(err, ETIMEDOUT, "no progress for %d ms", m->o->timeout_ms);
}

/* Nothing moved: the root whose feeder is at work reaps what completed and
 * waits on the feeder a moment; else wait for completions. */
static int idle(struct mc *m, struct rc_err *err)
{
	int rc;

	if (m->parent < 0 && mcast_feed_busy(m)) {
		if ((rc = rc_group_poll(m->g, 0, err)))
			return rc;
		mcast_feed_wait(m, 1);
		return 0;
	}
	return rc_group_poll(m->g, POLL_MS, err);
}

static int data_phase(struct mc *m, struct rc_err *err)
{
	bool root = m->parent < 0;
	int rc = 0;

	m->last_progress = rc_now();
	blocks_usable(m);
	if (root && m->n && (rc = mcast_feed_start(m, err)))
		return rc;
	for (;;) {
		bool moved = false;

		drop_dead_kids(m);
		if (root) {
			rc = mcast_feed_sync(m, fill_limit(m), &moved, err);
		} else {
			uint64_t landed = rc_group_imm_count(m->g, m->parent, CH_DATA);

			if (landed > m->n)
				return rc_err_set(err, EPROTO, "rank %d sent %llu chunks of %u",
						  m->parent, (unsigned long long)landed, m->n);
			m->have = (uint32_t)landed;
		}
		if (!rc)
			rc = forward(m, &moved, err);
		if (!rc && !root)
			rc = consume(m, &moved, err);
		if (!rc && !root)
			rc = credit(m, &moved, err);
		if (rc)
			return rc;
		if (finished(m))
			return 0;
		if (!root && (rc = upstream_trouble(m, err)))
			return rc;
		if (moved) {
			m->last_progress = rc_now();
			continue;
		}
		if (rc_now() - m->last_progress > m->o->timeout_ms / 1000.0)
			return stalled(m, err);
		if ((rc = idle(m, err)))
			return rc;
	}
}

static void release(struct mc *m)
{
	mcast_feed_stop(m);
	free(m->kids);
	if (m->mr)
		ibv_dereg_mr(m->mr);
	if (m->mem_on)
		rc_mem_free(&m->mem);
	free(m->stage);
	free(m->flip);
}

int rc_mcast_run(struct rc_group *g, const struct rc_mcast_opts *o, struct rc_mcast_result *res,
		 struct rc_err *err)
{
	struct mc m = { .g = g, .o = o, .res = res };
	struct rc_mcast_recv *s = &res->self;
	int *kids = NULL, rc;
	struct rc_err e = { 0 };

	if (o->shape.world != rc_group_world(g) || o->shape.root < 0 ||
	    o->shape.root >= o->shape.world || o->ring < 1 || o->nblocks > RC_MCAST_BLOCKS_MAX ||
	    o->nblocks < 0 || rc_mcast_digest_len(o->digest) < 0)
		return rc_err_set(err, EINVAL, "bad multicast parameters");
	memset(s, 0, sizeof(*s));
	m.me = rc_group_rank(g);
	s->rank = m.me;
	s->nblocks = o->nblocks;
	m.parent = rc_mcast_parent(&o->shape, m.me);
	m.kids = calloc((size_t)o->shape.world, sizeof(*m.kids));
	kids = calloc((size_t)o->shape.world, sizeof(*kids));
	if (!m.kids || !kids) {
		free(kids);
		release(&m);
		return rc_err_set(err, ENOMEM, "out of memory");
	}
	m.nkids = rc_mcast_children(&o->shape, m.me, kids);
	for (int i = 0; i < m.nkids; i++)
		m.kids[i].rank = kids[i];
	free(kids);
	m.R = o->ring, m.size = o->size;
	/* a receiver given no chunk takes the root's from its hello */
	m.chunk = o->chunk || m.parent >= 0 ? o->chunk : rc_mcast_auto_chunk(&o->shape, m.size);
	digest_init(&m);
	if ((rc = mcast_say_hello(&m, err)) || (rc = setup_ring(&m, err)) ||
	    (rc = mcast_say_ring(&m, err)))
		goto out;
	m.n = (uint32_t)((m.size + m.chunk - 1) / m.chunk);
	if ((uint64_t)m.n * m.chunk < m.size || m.size > (uint64_t)UINT32_MAX * m.chunk) {
		rc = rc_err_set(err, EFBIG, "a blob of %llu bytes is too many chunks of %u",
				(unsigned long long)m.size, m.chunk);
		goto out;
	}
	res->size = m.size;
	res->chunk = m.chunk;
	res->chunks = m.n;
	res->depth = rc_mcast_depth(&o->shape);
	res->width = rc_mcast_width(&o->shape);
	res->link_bw = o->link_bw;
	if (m.parent < 0 && res->link_bw <= 0 && m.nkids && (rc = calibrate(&m, err)))
		goto out;
	if ((rc = rc_group_barrier(g, err)))
		goto out;
	m.t0 = rc_now();
	rc = data_phase(&m, &e);
	mcast_feed_stop(&m); /* the digest is whole (or no longer wanted) */
	if (rc) {
		why(&m, e.msg);
		stop_kids(&m);
		if (m.parent < 0) {
			/* The root cannot go on: its report is the error. */
			rc = rc_err_set(err, e.code, "%s", e.msg);
			goto out;
		}
		rc = 0;
	} else {
		s->complete = true;
	}
	s->bytes = (uint64_t)m.consumed * m.chunk < m.size ? (uint64_t)m.consumed * m.chunk : m.size;
	s->last_ms = ms_since(&m);
	if (!m.n)
		s->first_ms = s->last_ms;
	digest_final(&m, m.parent < 0 ? res->digest : s->digest);
	if (m.parent < 0) {
		memcpy(s->digest, res->digest, sizeof(s->digest));
		s->bytes = m.size;
	}
	if (res->link_bw > 0)
		res->ideal_s = res->width * (double)m.size / res->link_bw +
			       (res->depth > 1 ? res->depth - 1 : 0) * (double)res->width *
				       m.chunk / res->link_bw;
	rc = mcast_reports(g, o, res, m.size, err);
out:
	release(&m);
	return rc;
}
