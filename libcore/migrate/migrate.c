// SPDX-License-Identifier: MIT
/*
 * A migration's orchestration. It holds one control connection to each
 * server; the destination does the data movement (RDMA READ from the
 * source, srv_mig.c) and each side hashes its own memory, so nothing here
 * touches the region's bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/migrate.h>

/* The destination answers a pull once its bytes have landed. */
#define PULL_WAIT_MS 60000
/* At most this many bytes per pull request, so that a dead peer is noticed
 * within PULL_WAIT_MS even at emulated speeds. */
#define PULL_MAX_BYTES (64ull << 20)

static int open_side(const char *side, const struct rc_target *t, const struct rc_migrate_opts *o,
		     struct rc_client **cl, struct rc_err *err)
{
	struct rc_client_opts co = { .token = o->admin_token ? o->admin_token : o->token,
				     .nconns = 1 };
	int rc;

	co.conn.timeout_ms = o->timeout_ms;
	co.conn.dev_name = o->dev_name;
	rc = rc_client_open(t, &co, cl, err);
	if (!rc)
		return 0;
	return rc_err_wrap(err, -rc, "the %s %s:%s", side, t->host, t->port);
}

/* One request, one answer; a failure the server reports is the error. */
static int ask(struct rc_client *cl, const char *side, const void *req, int len, int wait_ms,
	       struct rc_mig_resp *resp, struct rc_err *err)
{
	unsigned char buf[RC_CTRL_MSG_MAX];
	int n;

	if (len < 0)
		return rc_err_set(err, -len, "cannot encode a request: %s", strerror(-len));
	n = rc_client_ctrl(cl, req, (size_t)len, buf, sizeof(buf), wait_ms, err);
	if (n < 0)
		return rc_err_wrap(err, -n, "the %s", side);
	if (rc_ctrl_decode_mig_resp(buf, (size_t)n, resp))
		return rc_err_set(err, EPROTO,
				  "the %s %s answered no migration request (is it an rdmactl with migrate?)",
				  side, rc_client_peer(cl));
	if (resp->status < 0)
		return rc_err_set(err, -resp->status, "the %s %s: %s", side, rc_client_peer(cl),
				  resp->msg);
	return 0;
}

static int check_pair(const struct rc_client *a, const struct rc_client *b,
		      const struct rc_migrate_opts *o, struct rc_err *err)
{
	const struct rc_region_desc *ra = &a->region, *rb = &b->region;

	if (strcmp(ra->name, rb->name))
		return rc_err_set(err, EINVAL,
				  "the region is '%s' on the source and '%s' on the destination: a migration keeps its name",
				  ra->name, rb->name);
	if (ra->length != rb->length)
		return rc_err_set(err, EINVAL,
				  "region '%s' is %llu bytes on the source and %llu on the destination: the sizes must match",
				  ra->name, (unsigned long long)ra->length,
				  (unsigned long long)rb->length);
	if (ra->access != rb->access)
		return rc_err_set(err, EINVAL,
				  "region '%s' has access %s on the source and %s on the destination: the access must match",
				  ra->name, rc_access_name(ra->access), rc_access_name(rb->access));
	for (size_t i = 0; i < o->n; i++) {
		const struct rc_extent *x = &o->ext[i];

		if (x->len == 0 || x->src > ra->length || x->len > ra->length - x->src ||
		    x->dst > rb->length || x->len > rb->length - x->dst)
			return rc_err_set(err, ERANGE,
					  "block %zu (offset %llu, length %llu, to %llu) is %s region '%s' (%llu bytes)",
					  i + 1, (unsigned long long)x->src, (unsigned long long)x->len,
					  (unsigned long long)x->dst, x->len ? "past the end of" : "empty in",
					  ra->name, (unsigned long long)ra->length);
	}
	return 0;
}

/* Both sides connected and checked against each other, and the report's
 * names filled in; on failure what was opened stays in *a and *b for the
 * caller to close. */
static int open_pair(const struct rc_migrate_opts *o, struct rc_client **a, struct rc_client **b,
		     struct rc_migrate_result *r, struct rc_err *err)
{
	int rc;

	if ((rc = open_side("source", &o->src, o, a, err)) ||
	    (rc = open_side("destination", &o->dst, o, b, err)) || (rc = check_pair(*a, *b, o, err)))
		return rc;
	snprintf(r->region, sizeof(r->region), "%s", (*a)->region.name);
	snprintf(r->src_peer, sizeof(r->src_peer), "%s", rc_client_peer(*a));
	snprintf(r->dst_peer, sizeof(r->dst_peer), "%s", rc_client_peer(*b));
	r->length = (*a)->region.length;
	r->access = (*a)->region.access;
	return 0;
}

/* Have the destination pull ext[0..n): requests of at most RC_PULL_MAX_EXT
 * extents and PULL_MAX_BYTES bytes. */
/* first: the destination (re)connects to the source; last: it closes that
 * connection after; rkey: read with it (0: the one the source lists). */
/* The caller's progress hook, when it has one (round 0: nothing to tell). */
static void tell(const struct rc_migrate_opts *o, const char *step, int round, uint64_t done,
		 uint64_t total)
{
	if (o->progress && (round > 0 || strcmp(step, "copy")))
		o->progress(o->progress_arg, step, round, done, total);
}

static int pull_some(struct rc_client *b, const struct rc_migrate_opts *o, const char *region,
		     const struct rc_extent *ext, size_t n, bool first, bool last, uint32_t rkey,
		     uint32_t digest, int round, uint64_t *bytes, struct rc_err *err)
{
	struct rc_pull_req req = { .rkey = rkey };
	unsigned char buf[RC_CTRL_MSG_MAX];
	size_t i = 0;
	uint64_t total = 0;

	*bytes = 0;
	for (size_t j = 0; j < n; j++)
		total += ext[j].len;
	tell(o, "copy", round, 0, total);
	snprintf(req.host, sizeof(req.host), "%s", o->src.host);
	snprintf(req.port, sizeof(req.port), "%s", o->src.port);
	snprintf(req.src_region, sizeof(req.src_region), "%s", region);
	snprintf(req.dst_region, sizeof(req.dst_region), "%s", region);
	snprintf(req.token, sizeof(req.token), "%s", o->token ? o->token : "");
	do { /* at least one request: a last one may carry no extent */
		struct rc_mig_resp resp;
		uint64_t sum = 0;
		size_t k = 0;
		int rc;

		while (i + k < n && k < RC_PULL_MAX_EXT && (k == 0 || sum + ext[i + k].len <= PULL_MAX_BYTES))
			sum += ext[i + k++].len;
		req.flags = (i == 0 && first ? RC_MIG_FIRST : 0) | (i + k == n && last ? RC_MIG_LAST : 0) |
			    (rkey ? RC_PULL_RKEY : 0) | digest;
		req.n = (uint32_t)k;
		req.ext = (struct rc_extent *)&ext[i];
		rc = ask(b, "destination", buf, rc_ctrl_encode_pull(buf, sizeof(buf), 1, &req),
			 PULL_WAIT_MS, &resp, err);
		if (rc)
			return rc;
		*bytes += resp.bytes;
		tell(o, "copy", round, *bytes, total);
		i += k;
	} while (i < n);
	return 0;
}

/* flags: RC_HASH_DST, RC_HASH_BLOCKS (then ext is one range, one request). */
static int hash_all(struct rc_client *cl, const char *side, uint32_t flags, const char *region,
		    const struct rc_extent *ext, size_t n, uint64_t cap, int wait_ms,
		    unsigned char digest[RC_SHA256_LEN], struct rc_err *err)
{
	struct rc_hash_req req = { 0 };
	unsigned char buf[RC_CTRL_MSG_MAX];
	size_t i = 0;

	snprintf(req.region, sizeof(req.region), "%s", region);
	do {
		struct rc_mig_resp resp;
		uint64_t sum = 0;
		size_t k = 0;
		int rc;

		/* A server hashes at most its region's size per request. */
		while (i + k < n && k < RC_HASH_MAX_EXT && (k == 0 || sum + ext[i + k].len <= cap))
			sum += ext[i + k++].len;
		req.flags = (i == 0 ? RC_MIG_FIRST : 0) | (i + k == n ? RC_MIG_LAST : 0) | flags;
		req.n = (uint32_t)k;
		req.ext = (struct rc_extent *)&ext[i];
		rc = ask(cl, side, buf, rc_ctrl_encode_hash(buf, sizeof(buf), 2, &req), wait_ms,
			 &resp, err);
		if (rc)
			return rc;
		if (i + k == n)
			memcpy(digest, resp.digest, RC_SHA256_LEN);
		i += k;
	} while (i < n);
	return 0;
}

int rc_migrate_blocks(const struct rc_migrate_opts *o, struct rc_migrate_result *r,
		      struct rc_err *err)
{
	struct rc_client *a = NULL, *b = NULL;
	struct rc_extent whole;
	const struct rc_extent *ext = o->ext;
	size_t n = o->n;
	double t0 = rc_now();
	int wait = o->timeout_ms > 0 ? o->timeout_ms : 5000, rc;

	memset(r, 0, sizeof(*r));
	r->blackout_ms = -1;
	if (o->n && !o->ext)
		return rc_err_set(err, EINVAL, "a block list without blocks");
	if ((rc = open_pair(o, &a, &b, r, err)))
		goto out;
	if (!n) {
		whole = (struct rc_extent){ .src = 0, .dst = 0, .len = a->region.length };
		ext = &whole;
		n = 1;
	}
	rc = pull_some(b, o, r->region, ext, n, true, true, 0, 0, 1, &r->bytes_per_round[0], err);
	if (rc)
		goto out;
	r->rounds = 1;
	r->blocks_per_round[0] = n;
	r->bytes = r->bytes_per_round[0];
	/* Hashing tens of MiB takes the servers' CPUs a while under emulation. */
	tell(o, "hash", 0, 0, 0);
	rc = hash_all(a, "source", 0, r->region, ext, n, a->region.length, wait * 4, r->sha_src, err);
	if (!rc)
		rc = hash_all(b, "destination", RC_HASH_DST, r->region, ext, n, a->region.length, wait * 4,
			      r->sha_dst, err);
	if (rc)
		goto out;
	r->verified = !memcmp(r->sha_src, r->sha_dst, RC_SHA256_LEN);
	r->seconds = rc_now() - t0;
out:
	rc_client_close(b);
	rc_client_close(a);
	return rc;
}

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

static int step(struct rc_client *a, enum rc_mig_step s, uint32_t move, const char *region,
		const char *arg, struct rc_mig_resp *resp, int wait_ms, struct rc_err *err)
{
	unsigned char buf[RC_CTRL_MSG_MAX];
	struct rc_mig_cmd c = { .step = (uint32_t)s, .move = move };

	snprintf(c.region, sizeof(c.region), "%s", region);
	snprintf(c.arg, sizeof(c.arg), "%s", arg ? arg : "");
	return ask(a, "source", buf, rc_ctrl_encode_mig_cmd(buf, sizeof(buf), 3, &c), wait_ms, resp,
		   err);
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
			return rc_err_set(err, EPROTO, "the source sent a malformed list of written blocks");
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
		return rc_err_set(err, ENOENT, "etcd at %s holds no key %s: region '%s' is not published there",
				  o->etcd, m->key, region);
	if (rc)
		return rc;
	if (rc_etcd_region_parse(m->old.value, &rec))
		return rc_err_set(err, EPROTO, "etcd at %s: key %s holds no region record of rdmactl's",
				  o->etcd, m->key);
	if (!same_server(rec.host, rec.port, &o->src))
		return rc_err_set(err, EINVAL, "etcd at %s names %s:%s as the home of region '%s', not the source %s:%s",
				  o->etcd, rec.host, rec.port, region, o->src.host, o->src.port);
	rc_etcd_server_key(o->etcd_ns, o->dst.host, o->dst.port, skey, sizeof(skey));
	rc = rc_etcd_get(m->e, skey, &srv, err);
	if (rc == -ENOENT)
		return rc_err_set(err, ENOENT, "the destination %s:%s holds no lease in etcd at %s (no key %s): start it with register --publish etcd://%s/%s",
				  o->dst.host, o->dst.port, o->etcd, skey, o->etcd, o->etcd_ns);
	if (rc)
		return rc_err_wrap(err, -rc, "reading the destination's key");
	snprintf(m->lease, sizeof(m->lease), "%s", srv.lease);
	snprintf(rec.host, sizeof(rec.host), "%s", o->dst.host);
	snprintf(rec.port, sizeof(rec.port), "%s", o->dst.port);
	if (rc_etcd_region_format(&rec, m->next, sizeof(m->next)))
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
		uint64_t end = x.src + x.len, cut = at + RC_MIG_BLOCK < end ? at + RC_MIG_BLOCK : end;

		if (at < x.src || at >= end) {
			rc = ext_add(&k, &x, 1, err);
			continue;
		}
		tail = (struct rc_extent){ .src = cut, .dst = x.dst + (cut - x.src), .len = end - cut };
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
	return hash_all(at_dst ? v->b : v->a, at_dst ? "destination" : "source",
			RC_HASH_BLOCKS | (at_dst ? RC_HASH_DST : 0), v->r->region, &x, 1, x.len,
			v->wait_ms, d, err);
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
		x->length = r->length - x->offset < RC_MIG_BLOCK ? r->length - x->offset : RC_MIG_BLOCK;
		memcpy(x->sha_src, ds, RC_SHA256_LEN);
		memcpy(x->sha_dst, dd, RC_SHA256_LEN);
		return 0;
	}
	if ((rc = blocks_digest(v, false, b0, mid, hs, err)) ||
	    (rc = blocks_digest(v, true, b0, mid, hd, err)) || (rc = bisect(v, b0, mid, hs, hd, err)) ||
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
	if ((rc = blocks_digest(v, false, 0, n, r->sha_src, err)) ||
	    (rc = blocks_digest(v, true, 0, n, r->sha_dst, err)))
		return rc;
	r->verified = !memcmp(r->sha_src, r->sha_dst, RC_SHA256_LEN);
	return bisect(v, 0, n, r->sha_src, r->sha_dst, err);
}

int rc_migrate_live(const struct rc_migrate_opts *o, const struct rc_migrate_live *lo,
		    struct rc_migrate_result *r, struct rc_err *err)
{
	struct rc_client *a = NULL, *b = NULL;
	struct ext_list pend = { 0 };
	struct etcd_move em = { 0 };
	struct rc_mig_resp resp;
	struct rc_extent whole;
	char dst[RC_HOST_MAX + 16];
	double t0 = rc_now(), tf;
	int wait = o->timeout_ms > 0 ? o->timeout_ms : 5000, rc, max_rounds;
	bool tracking = false, cut = false;
	uint64_t bytes;
	uint32_t rkey, move = 0, digest;

	memset(r, 0, sizeof(*r));
	r->blackout_ms = -1;
	max_rounds = lo->max_rounds > 1 && lo->max_rounds <= RC_MIGRATE_MAX_ROUNDS - 1 ? lo->max_rounds : 8;
	/* etcd first: a key that does not name the source, or a destination
	 * without a lease there, stops the move before any connection. */
	if (o->etcd && !o->src.region[0])
		return rc_err_set(err, EINVAL, "a region published in etcd is moved by its name");
	if (o->etcd && (rc = etcd_prepare(o, o->src.region, &em, r, err)))
		goto out;
	if ((rc = open_pair(o, &a, &b, r, err)))
		goto out;
	/* 1. Record writes from now on; the first round copies everything. */
	rc = step(a, RC_MIG_TRACK, 0, r->region, NULL, &resp, wait, err);
	if (rc)
		goto out;
	move = (uint32_t)resp.bytes;
	tracking = true;
	whole = (struct rc_extent){ .src = 0, .dst = 0, .len = r->length };
	digest = lo->verify ? RC_PULL_DIGEST : 0;
	rc = pull_some(b, o, r->region, &whole, 1, true, false, 0, digest, 1, &bytes, err);
	if (rc)
		goto out;
	round_done(r, bytes, (r->length + RC_MIG_BLOCK - 1) / RC_MIG_BLOCK);
	/* 2. Pre-copy: what was written meanwhile, until it is small. */
	for (;;) {
		rc = take(a, r->region, move, wait, &pend, err);
		if (!rc && lo->lose_block)
			rc = lose(&pend, lo->lose_block - 1, err);
		if (rc)
			goto out;
		if (pend.bytes <= lo->dirty_bytes || r->rounds >= max_rounds - 1)
			break;
		rc = pull_some(b, o, r->region, pend.x, pend.n, false, false, 0, digest, r->rounds + 1,
			       &bytes, err);
		if (rc)
			goto out;
		round_done(r, bytes, blocks_of(&pend));
		pend.n = 0;
		pend.bytes = 0;
	}
	/* 3. Fence: writes at the source now fail; what slipped in is listed. */
	if (lo->before_fence)
		lo->before_fence(lo->arg);
	tell(o, "fence", 0, 0, 0);
	tf = rc_now();
	rc = step(a, RC_MIG_FENCE, move, r->region, NULL, &resp, wait, err);
	if (rc)
		goto out;
	rkey = (uint32_t)resp.bytes;
	rc = take(a, r->region, move, wait, &pend, err);
	if (!rc && lo->lose_block)
		rc = lose(&pend, lo->lose_block - 1, err);
	if (rc)
		goto out;
	/* 4. The final copy, through the read-only registration (nothing to
	 * ask when nothing was written since the last round). */
	bytes = 0;
	if (pend.n)
		rc = pull_some(b, o, r->region, pend.x, pend.n, false, false, rkey, digest, r->rounds + 1,
			       &bytes, err);
	if (rc)
		goto out;
	round_done(r, bytes, blocks_of(&pend));
	/* 5. Cutover: the source answers its clients with the new home, then
	 * etcd names it (a client resolving from now on goes straight there).
	 * In this order a failure in etcd leaves no second home: the key still
	 * names the source, which sends every client on. */
	snprintf(dst, sizeof(dst), "%s%s%s:%s", strchr(o->dst.host, ':') ? "[" : "", o->dst.host,
		 strchr(o->dst.host, ':') ? "]" : "", o->dst.port);
	tell(o, "cutover", 0, 0, 0);
	rc = step(a, RC_MIG_CUTOVER, move, r->region, dst, &resp, wait, err);
	if (rc)
		goto out;
	cut = true;
	if (em.e)
		rc = etcd_cutover(&em, err);
	r->blackout_ms = (rc_now() - tf) * 1000;
	/* The destination closes its connection to the source (not part of the
	 * blackout: both already serve as they will). */
	pull_some(b, o, r->region, &whole, 0, false, true, 0, 0, 0, &bytes, &(struct rc_err){ 0 });
	if (rc) {
		rc_err_wrap(err, -rc, "region '%s' moved to %s, but the key still names the source, which sends its clients on (it keeps its fenced copy)",
			    r->region, dst);
		goto out;
	}
	/* 6. Verification, outside the blackout: the source's frozen copy
	 * against the blocks as the destination pulled them. When they differ
	 * the source keeps its copy (no DROP): r->verified and r->bad say it. */
	if (lo->verify) {
		struct verify v = { .a = a, .b = b, .r = r, .wait_ms = wait * 4 };

		tell(o, "hash", 0, 0, 0);
		rc = verify_live(&v, err);
		if (rc) {
			rc_err_wrap(err, -rc, "region '%s' moved to %s, but it could not be verified (the source keeps its copy)",
				    r->region, dst);
			goto out;
		}
		if (!r->verified) {
			r->seconds = rc_now() - t0;
			goto out;
		}
	}
	/* 7. The destination holds it all: the source lets its copy go. */
	if (!lo->keep_source)
		rc = step(a, RC_MIG_DROP, move, r->region, NULL, &resp, wait, err);
	r->seconds = rc_now() - t0;
out:
	if (rc && tracking && !cut) {
		/* Called off: the source serves the region again, nothing lost. */
		struct rc_err e2;

		if (step(a, RC_MIG_UNFENCE, move, r->region, NULL, &resp, wait, &e2))
			rc_err_append(err, -rc, "aborted, and the source could not be told (%s): it lifts the fence itself once this command's connection is gone",
				      e2.msg);
		else
			rc_err_append(err, -rc, "aborted: the source serves the region again");
	}
	free(pend.x);
	if (em.e)
		rc_etcd_close(em.e); /* it holds no lease: nothing is revoked */
	rc_client_close(b);
	rc_client_close(a);
	return rc;
}
