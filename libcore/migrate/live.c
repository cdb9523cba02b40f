// SPDX-License-Identifier: MIT
/*
 * The live move (rc_migrate_live): the source records writes while the
 * destination copies, round after round, then a short fence, the final
 * copy, the cutover (and etcd's key), a verification outside the blackout,
 * and the source's DROP. Each numbered step is a function of its own; the
 * requests are migrate.c's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/etcd.h>
#include <rdmactl/err_core.h>
#include <rdmactl/etcd_core.h>
#include <rdmactl/ctrl_core.h>
#include <rdmactl/client_core.h>

#include "migrate_int.h"

/* A list of extents that grows. */
struct ext_list {
	struct rc_extent *x;
	size_t n, cap;
	uint64_t bytes;
};

static int ext_add(struct ext_list *l, const struct rc_extent *x, size_t n, struct rc_err *err)
{
	if (l->n + n > l->cap) {
		size_t cap = (l->n + n) * 2 + 16;
		struct rc_extent *p = realloc(l->x, cap * sizeof(*p));

		if (!p)
			return rc_err_set(err, ENOMEM, "out of memory");
		l->x = p;
		l->cap = cap;
	}
	for (size_t i = 0; i < n; i++) {
		l->x[l->n++] = x[i];
		l->bytes += x[i].len;
	}
	return 0;
}

/* The blocks written at the source since the last take, appended to l. */
static int take(struct rc_client *a, const char *region, uint32_t move, int wait_ms,
		struct ext_list *l, struct rc_err *err)
{
	unsigned char req[RC_CTRL_MSG_MAX], resp[RC_CTRL_MSG_MAX];
	struct rc_extent x[RC_HASH_MAX_EXT];
	struct rc_mig_cmd c = { .step = RC_MIG_TAKE, .move = move };
	struct rc_hash_req d = { .ext = x };
	int len;

	snprintf(c.region, sizeof(c.region), "%s", region);
	do {
		len = rc_ctrl_encode_mig_cmd(req, sizeof(req), 4, &c);
		len = rc_client_ctrl(a, req, (size_t)len, resp, sizeof(resp), wait_ms, err);
		if (len < 0)
			return len;
		if (rc_ctrl_decode_dirty(resp, (size_t)len, &d, RC_HASH_MAX_EXT)) {
			struct rc_mig_resp r;

			if (!rc_ctrl_decode_mig_resp(resp, (size_t)len, &r) && r.status < 0)
				return rc_err_set(err, -r.status, "the source: %s", r.msg);
			return rc_err_set(err, EPROTO,
					  "the source sent a malformed list of written blocks");
		}
		if (ext_add(l, x, d.n, err))
			return -ENOMEM;
	} while (!(d.flags & RC_MIG_LAST));
	return 0;
}

/* The etcd side of a live move: the region's key as read at the start, the
 * record to put at the cutover and the destination's lease. */
struct etcd_move {
	struct rc_etcd *e;
	char key[RC_ETCD_KEY_MAX];
	struct rc_etcd_kv old;
	char next[RC_ETCD_VAL_MAX];
	char lease[32];
};

static bool same_server(const char *host, const char *port, const struct rc_target *t)
{
	return !strcmp(host, t->host) && !strcmp(port, t->port);
}

/* Before anything moves: the key names the source, the destination holds
 * a lease there. */
static int etcd_prepare(const struct rc_migrate_opts *o, const char *region, struct etcd_move *m,
			struct rc_migrate_result *r, struct rc_err *err)
{
	char skey[RC_ETCD_KEY_MAX];
	struct rc_etcd_region rec;
	struct rc_etcd_kv srv;
	int rc;

	rc = rc_etcd_open(o->etcd, o->timeout_ms, &m->e, err);
	if (rc)
		return rc;
	rc_etcd_region_key(o->etcd_ns, region, m->key, sizeof(m->key));
	rc = rc_etcd_get(m->e, m->key, &m->old, err);
	if (rc == -ENOENT)
		return rc_err_set(err, ENOENT,
				  "etcd at %s holds no key %s: region '%s' is not published there",
				  o->etcd, m->key, region);
	if (rc)
		return rc;
	if (rc_etcd_region_parse(m->old.value, &rec))
		return rc_err_set(err, EPROTO,
				  "etcd at %s: key %s holds no region record of rdmactl's", o->etcd,
				  m->key);
	/* A record signed with the data token (register --publish with one):
	 * checked, and its successor signed, with migrate's. */
	if ((o->token || rec.mac[0]) && !rc_etcd_region_verify(&rec, m->key, m->old.lease, o->token))
		return !o->token
			       ? rc_err_opt(err, EKEYREJECTED,
					    "etcd record %s is signed with the data token: give "
					    "{token_file}: refusing before connecting",
					    m->key)
			       : rc_err_set(err, EKEYREJECTED,
					    "etcd record %s %s: refusing before connecting", m->key,
					    rec.mac[0] ? "carries a MAC the token does not make"
						       : "carries no MAC");
	if (!same_server(rec.host, rec.port, &o->src))
		return rc_err_set(
			err, EINVAL,
			"etcd at %s names %s:%s as the home of region '%s', not the source %s:%s",
			o->etcd, rec.host, rec.port, region, o->src.host, o->src.port);
	rc_etcd_server_key(o->etcd_ns, o->dst.host, o->dst.port, skey, sizeof(skey));
	rc = rc_etcd_get(m->e, skey, &srv, err);
	if (rc == -ENOENT)
		return rc_err_opt(
			err, ENOENT,
			"the destination %s:%s holds no lease in etcd at %s (no key %s): start it with register {publish} etcd://%s/%s",
			o->dst.host, o->dst.port, o->etcd, skey, o->etcd, o->etcd_ns);
	if (rc)
		return rc_err_wrap(err, -rc, "reading the destination's key");
	snprintf(m->lease, sizeof(m->lease), "%s", srv.lease);
	snprintf(rec.host, sizeof(rec.host), "%s", o->dst.host);
	snprintf(rec.port, sizeof(rec.port), "%s", o->dst.port);
	rec.nrails = 0; /* the source's rails go with it: the record names the destination alone */
	if (rc_etcd_region_sign(&rec, m->key, m->lease, o->token) ||
	    rc_etcd_region_format(&rec, m->next, sizeof(m->next)))
		return rc_err_set(err, ENOSPC, "region '%s': its etcd record is too long", region);
	snprintf(r->etcd_key, sizeof(r->etcd_key), "%s", m->key);
	r->etcd_revision = m->old.mod_revision;
	return 0;
}

/* At the cutover: one transaction, only if nobody changed the key since. */
static int etcd_cutover(struct etcd_move *m, struct rc_err *err)
{
	int rc = rc_etcd_swap(m->e, m->key, m->old.mod_revision, m->next, m->lease, NULL, err);

	return rc ? rc_err_wrap(err, -rc, "etcd at %s", rc_etcd_server(m->e)) : 0;
}

static void round_done(struct rc_migrate_result *r, uint64_t bytes, uint64_t blocks)
{
	if (r->rounds < RC_MIGRATE_MAX_ROUNDS) {
		r->bytes_per_round[r->rounds] = bytes;
		r->blocks_per_round[r->rounds] = blocks;
		r->rounds++;
	}
	r->bytes += bytes;
}

static uint64_t blocks_of(const struct ext_list *l)
{
	return l->bytes / RC_MIG_BLOCK;
}

/* The test hook lose_block: the block at byte offset at leaves the list
 * (a record of written blocks that missed it). */
static int lose(struct ext_list *l, uint64_t at, struct rc_err *err)
{
	struct ext_list k = { 0 };
	int rc = 0;

	for (size_t i = 0; i < l->n && !rc; i++) {
		struct rc_extent x = l->x[i], tail;
		uint64_t end = x.src + x.len,
			 cut = at + RC_MIG_BLOCK < end ? at + RC_MIG_BLOCK : end;

		if (at < x.src || at >= end) {
			rc = ext_add(&k, &x, 1, err);
			continue;
		}
		tail = (struct rc_extent){ .src = cut,
					   .dst = x.dst + (cut - x.src),
					   .len = end - cut };
		x.len = at - x.src;
		if (x.len)
			rc = ext_add(&k, &x, 1, err);
		if (!rc && tail.len)
			rc = ext_add(&k, &tail, 1, err);
	}
	free(l->x);
	*l = k;
	return rc;
}

/* After the cutover, what each side holds: the source's frozen copy and
 * the blocks as the destination pulled them (RC_HASH_BLOCKS). */
struct verify {
	struct rc_client *a, *b;
	struct rc_migrate_result *r;
	int wait_ms;
};

static int blocks_digest(const struct verify *v, bool at_dst, uint64_t b0, uint64_t b1,
			 unsigned char d[RC_SHA256_LEN], struct rc_err *err)
{
	uint64_t off = b0 * RC_MIG_BLOCK, end = b1 * RC_MIG_BLOCK;
	struct rc_extent x = { .src = off, .dst = off };

	x.len = (end < v->r->length ? end : v->r->length) - off;
	return mig_hash_all(at_dst ? v->b : v->a, at_dst ? "destination" : "source",
			    RC_HASH_BLOCKS | (at_dst ? RC_HASH_DST : 0), v->r->region, &x, 1, x.len,
			    v->wait_ms, d, err);
}

/* The destination's digest of [b0, b1), on a thread of its own. */
struct dst_job {
	const struct verify *v;
	uint64_t b0, b1;
	unsigned char *d;
	struct rc_err err;
	int rc;
};

static void *dst_job_main(void *arg)
{
	struct dst_job *j = arg;

	j->rc = blocks_digest(j->v, true, j->b0, j->b1, j->d, &j->err);
	return NULL;
}

/* Both sides' digests of [b0, b1) at once, the source's in ds, the
 * destination's in dd: each server digests on its own CPU, so the check
 * takes the slower side's time, not the sum of both (the destination's on
 * this thread after the source's when no thread can start). */
static int both_digests(const struct verify *v, uint64_t b0, uint64_t b1,
			unsigned char ds[RC_SHA256_LEN], unsigned char dd[RC_SHA256_LEN],
			struct rc_err *err)
{
	struct dst_job j = { .v = v, .b0 = b0, .b1 = b1, .d = dd };
	pthread_t th;
	bool threaded = !pthread_create(&th, NULL, dst_job_main, &j);
	int rc = blocks_digest(v, false, b0, b1, ds, err);

	if (threaded)
		pthread_join(th, NULL);
	else if (!rc)
		dst_job_main(&j);
	if (!rc && j.rc) {
		rc = j.rc;
		if (err)
			*err = j.err;
	}
	return rc;
}

/* Name the blocks of [b0, b1) whose digests differ (ds, dd: the range's),
 * halving the range; at most RC_MIGRATE_MAX_BAD. */
static int bisect(const struct verify *v, uint64_t b0, uint64_t b1, const unsigned char *ds,
		  const unsigned char *dd, struct rc_err *err)
{
	struct rc_migrate_result *r = v->r;
	unsigned char hs[RC_SHA256_LEN], hd[RC_SHA256_LEN];
	uint64_t mid = b0 + (b1 - b0) / 2;
	int rc;

	if (!memcmp(ds, dd, RC_SHA256_LEN))
		return 0;
	if (r->nbad == RC_MIGRATE_MAX_BAD) {
		r->bad_more = true;
		return 0;
	}
	if (b1 - b0 == 1) {
		struct rc_migrate_bad *x = &r->bad[r->nbad++];

		x->offset = b0 * RC_MIG_BLOCK;
		x->length =
			r->length - x->offset < RC_MIG_BLOCK ? r->length - x->offset : RC_MIG_BLOCK;
		memcpy(x->sha_src, ds, RC_SHA256_LEN);
		memcpy(x->sha_dst, dd, RC_SHA256_LEN);
		return 0;
	}
	if ((rc = blocks_digest(v, false, b0, mid, hs, err)) ||
	    (rc = blocks_digest(v, true, b0, mid, hd, err)) ||
	    (rc = bisect(v, b0, mid, hs, hd, err)) ||
	    (rc = blocks_digest(v, false, mid, b1, hs, err)) ||
	    (rc = blocks_digest(v, true, mid, b1, hd, err)))
		return rc;
	return bisect(v, mid, b1, hs, hd, err);
}

static int verify_live(const struct verify *v, struct rc_err *err)
{
	struct rc_migrate_result *r = v->r;
	uint64_t n = (r->length + RC_MIG_BLOCK - 1) / RC_MIG_BLOCK;
	int rc;

	if (!n) {
		r->verified = true;
		return 0;
	}
	/* The whole region, both sides at once (the ranges that bisect asks for
	 * after it are digests of digests already made). */
	if ((rc = both_digests(v, 0, n, r->sha_src, r->sha_dst, err)))
		return rc;
	r->verified = !memcmp(r->sha_src, r->sha_dst, RC_SHA256_LEN);
	return bisect(v, 0, n, r->sha_src, r->sha_dst, err);
}

/* One live move: its two connections and what each step hands the next. */
struct live {
	const struct rc_migrate_opts *o;
	const struct rc_migrate_live *lo;
	struct rc_migrate_result *r;
	struct rc_client *a, *b; /* the source, the destination */
	struct ext_list pend;    /* blocks written since the last round */
	struct etcd_move em;
	struct rc_extent whole;
	char dst[RC_HOST_MAX + 16]; /* the destination, as clients are sent there */
	double t0, tf;              /* the start, the fence */
	int wait, max_rounds;
	bool tracking, cut;
	uint32_t move, rkey, digest;
};

/* The writes the source recorded since the last call, into m->pend. */
static int live_take(struct live *m, struct rc_err *err)
{
	int rc = take(m->a, m->r->region, m->move, m->wait, &m->pend, err);

	if (!rc && m->lo->lose_block)
		rc = lose(&m->pend, m->lo->lose_block - 1, err);
	return rc;
}

/* 0. etcd first (a key that does not name the source, or a destination
 * without a lease there, stops the move before any connection), then both
 * servers. */
static int live_open(struct live *m, struct rc_err *err)
{
	int rc;

	if (m->o->etcd && (rc = etcd_prepare(m->o, m->o->src.region, &m->em, m->r, err)))
		return rc;
	return mig_open_pair(m->o, &m->a, &m->b, m->r, err);
}

/* 1. Record writes from now on; the first round copies everything. */
static int live_first_round(struct live *m, struct rc_err *err)
{
	struct rc_mig_resp resp;
	uint64_t bytes;
	int rc = mig_step(m->a, RC_MIG_TRACK, 0, m->r->region, NULL, &resp, m->wait, err);

	if (rc)
		return rc;
	m->move = (uint32_t)resp.bytes;
	m->tracking = true;
	m->whole = (struct rc_extent){ .src = 0, .dst = 0, .len = m->r->length };
	m->digest = m->lo->verify ? RC_PULL_DIGEST : 0;
	rc = mig_pull_some(m->b, m->o, m->r->region, &m->whole, 1, true, false, 0, m->digest, 1,
			   &bytes, err);
	if (!rc)
		round_done(m->r, bytes, (m->r->length + RC_MIG_BLOCK - 1) / RC_MIG_BLOCK);
	return rc;
}

/* 2. Pre-copy: what was written meanwhile, until it is small. */
static int live_precopy(struct live *m, struct rc_err *err)
{
	struct rc_migrate_result *r = m->r;
	uint64_t bytes;
	int rc;

	for (;;) {
		if ((rc = live_take(m, err)))
			return rc;
		if (m->pend.bytes <= m->lo->dirty_bytes || r->rounds >= m->max_rounds - 1)
			return 0;
		rc = mig_pull_some(m->b, m->o, r->region, m->pend.x, m->pend.n, false, false, 0,
				   m->digest, r->rounds + 1, &bytes, err);
		if (rc)
			return rc;
		round_done(r, bytes, blocks_of(&m->pend));
		m->pend.n = 0;
		m->pend.bytes = 0;
	}
}

/* 3. Fence: writes at the source now fail; what slipped in is listed.
 * 4. The final copy, through the read-only registration (nothing to ask
 * when nothing was written since the last round). */
static int live_fence_and_copy(struct live *m, struct rc_err *err)
{
	struct rc_mig_resp resp;
	uint64_t bytes = 0;
	int rc;

	if (m->lo->before_fence)
		m->lo->before_fence(m->lo->arg);
	mig_tell(m->o, "fence", 0, 0, 0);
	m->tf = rc_now();
	if ((rc = mig_step(m->a, RC_MIG_FENCE, m->move, m->r->region, NULL, &resp, m->wait, err)))
		return rc;
	m->rkey = (uint32_t)resp.bytes;
	if ((rc = live_take(m, err)))
		return rc;
	if (m->pend.n &&
	    (rc = mig_pull_some(m->b, m->o, m->r->region, m->pend.x, m->pend.n, false, false,
				m->rkey, m->digest, m->r->rounds + 1, &bytes, err)))
		return rc;
	round_done(m->r, bytes, blocks_of(&m->pend));
	return 0;
}

/* 5. Cutover: the source answers its clients with the new home, then etcd
 * names it (a client resolving from now on goes straight there). In this
 * order a failure in etcd leaves no second home: the key still names the
 * source, which sends every client on. */
static int live_cutover(struct live *m, struct rc_err *err)
{
	const struct rc_migrate_opts *o = m->o;
	struct rc_mig_resp resp;
	uint64_t bytes;
	int rc;

	snprintf(m->dst, sizeof(m->dst), "%s%s%s:%s", strchr(o->dst.host, ':') ? "[" : "",
		 o->dst.host, strchr(o->dst.host, ':') ? "]" : "", o->dst.port);
	mig_tell(o, "cutover", 0, 0, 0);
	if ((rc = mig_step(m->a, RC_MIG_CUTOVER, m->move, m->r->region, m->dst, &resp, m->wait, err)))
		return rc;
	m->cut = true;
	if (m->em.e)
		rc = etcd_cutover(&m->em, err);
	m->r->blackout_ms = (rc_now() - m->tf) * 1000;
	/* The destination closes its connection to the source (not part of the
	 * blackout: both already serve as they will). */
	mig_pull_some(m->b, o, m->r->region, &m->whole, 0, false, true, 0, 0, 0, &bytes,
		      &(struct rc_err){ 0 });
	if (rc)
		return rc_err_wrap(
			err, -rc,
			"region '%s' moved to %s, but the key still names the source, which sends its clients on (it keeps its fenced copy)",
			m->r->region, m->dst);
	return 0;
}

/* 6. Verification, outside the blackout: the source's frozen copy against
 * the blocks as the destination pulled them. When they differ the source
 * keeps its copy (no DROP): r->verified and r->bad say it.
 * 7. The destination holds it all: the source lets its copy go. */
static int live_verify_and_drop(struct live *m, struct rc_err *err)
{
	struct rc_mig_resp resp;
	int rc;

	if (m->lo->verify) {
		struct verify v = { .a = m->a, .b = m->b, .r = m->r, .wait_ms = m->wait * 4 };

		mig_tell(m->o, "hash", 0, 0, 0);
		if ((rc = verify_live(&v, err)))
			return rc_err_wrap(
				err, -rc,
				"region '%s' moved to %s, but it could not be verified (the source keeps its copy)",
				m->r->region, m->dst);
		if (!m->r->verified) {
			m->r->seconds = rc_now() - m->t0;
			return 0;
		}
	}
	rc = m->lo->keep_source
		     ? 0
		     : mig_step(m->a, RC_MIG_DROP, m->move, m->r->region, NULL, &resp, m->wait, err);
	m->r->seconds = rc_now() - m->t0;
	return rc;
}

/* The end, however it came: a move called off before the cutover gives
 * the source its region back; both connections and etcd's client go. */
static int live_end(struct live *m, int rc, struct rc_err *err)
{
	if (rc && m->tracking && !m->cut) {
		/* Called off: the source serves the region again, nothing lost. */
		struct rc_mig_resp resp;
		struct rc_err e2;

		if (mig_step(m->a, RC_MIG_UNFENCE, m->move, m->r->region, NULL, &resp, m->wait, &e2))
			rc_err_append(
				err, -rc,
				"aborted, and the source could not be told (%s): it lifts the fence itself once this command's connection is gone",
				e2.msg);
		else
			rc_err_append(err, -rc, "aborted: the source serves the region again");
	}
	free(m->pend.x);
	if (m->em.e)
		rc_etcd_close(m->em.e); /* it holds no lease: nothing is revoked */
	rc_client_close(m->b);
	rc_client_close(m->a);
	return rc;
}

int rc_migrate_live(const struct rc_migrate_opts *o, const struct rc_migrate_live *lo,
		    struct rc_migrate_result *r, struct rc_err *err)
{
	struct live m = { .o = o, .lo = lo, .r = r, .t0 = rc_now() };
	int rc;

	memset(r, 0, sizeof(*r));
	r->blackout_ms = -1;
	m.wait = o->timeout_ms > 0 ? o->timeout_ms : 5000;
	m.max_rounds = lo->max_rounds > 1 && lo->max_rounds <= RC_MIGRATE_MAX_ROUNDS - 1
			       ? lo->max_rounds
			       : 8;
	if (o->etcd && !o->src.region[0])
		return rc_err_set(err, EINVAL, "a region published in etcd is moved by its name");
	if (!(rc = live_open(&m, err)) && !(rc = live_first_round(&m, err)) &&
	    !(rc = live_precopy(&m, err)) && !(rc = live_fence_and_copy(&m, err)) &&
	    !(rc = live_cutover(&m, err)))
		rc = live_verify_and_drop(&m, err);
	return live_end(&m, rc, err);
}
