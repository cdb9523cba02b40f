// SPDX-License-Identifier: MIT
/*
 * A migration's orchestration. It holds one control connection to each
 * server; the destination does the data movement (RDMA READ from the
 * source, srv_mig.c) and each side hashes its own memory, so nothing here
 * touches the region's bytes. Here: both connections, the requests and the
 * block-list move (rc_migrate_blocks); live.c holds the live move.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migrate_int.h"
#include <rdmactl/err_core.h>
#include <rdmactl/ctrl_core.h>
#include <rdmactl/client_core.h>

/* The destination answers a pull once its bytes have landed. */
#define PULL_WAIT_MS 60000
/* At most this many bytes per pull request, so that a dead peer is noticed
 * within PULL_WAIT_MS even at emulated speeds. */
#define PULL_MAX_BYTES (64ull << 20)

static int open_side(const char *side, const struct rc_target *t, const struct rc_migrate_opts *o,
		     struct rc_client **cl, struct rc_err *err)
{
	/* The admin role, proving the admin token (never sending it); a server
	 * without one is connected in the data role (client_auth.c). */
	struct rc_client_opts co = { .token = o->token, .admin_token = o->admin_token, .nconns = 1 };
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
		return rc_err_set(
			err, EPROTO,
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
		return rc_err_set(
			err, EINVAL,
			"the region is '%s' on the source and '%s' on the destination: a migration keeps its name",
			ra->name, rb->name);
	if (ra->length != rb->length)
		return rc_err_set(
			err, EINVAL,
			"region '%s' is %llu bytes on the source and %llu on the destination: the sizes must match",
			ra->name, (unsigned long long)ra->length, (unsigned long long)rb->length);
	if (ra->access != rb->access)
		return rc_err_set(
			err, EINVAL,
			"region '%s' has access %s on the source and %s on the destination: the access must match",
			ra->name, rc_access_name(ra->access), rc_access_name(rb->access));
	for (size_t i = 0; i < o->n; i++) {
		const struct rc_extent *x = &o->ext[i];

		if (x->len == 0 || x->src > ra->length || x->len > ra->length - x->src ||
		    x->dst > rb->length || x->len > rb->length - x->dst)
			return rc_err_set(
				err, ERANGE,
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
int mig_open_pair(const struct rc_migrate_opts *o, struct rc_client **a, struct rc_client **b,
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

void mig_tell(const struct rc_migrate_opts *o, const char *step, int round, uint64_t done,
	      uint64_t total)
{
	if (o->progress && (round > 0 || strcmp(step, "copy")))
		o->progress(o->progress_arg, step, round, done, total);
}

/* The token of a PULL request in buf (len bytes, or -errno) crosses masked
 * under the session of b's connection (rc_ctrl_seal_pull): a destination
 * that proved no token would read it in the clear, so it gets none. */
static int seal_pull(struct rc_client *b, const char *token, void *buf, int len, struct rc_err *err)
{
	const struct rc_auth *a;
	const char *proved = rc_client_session(b, &a);

	if (len < 0 || (!proved && (!token || !*token)))
		return 0; /* nothing to mask, and nothing to unmask there */
	if (!proved)
		return rc_err_set(err, EKEYREJECTED,
				  "the destination %s proved no token: the data token would cross "
				  "the wire in the clear (give the servers an admin token)",
				  rc_client_peer(b));
	return rc_ctrl_seal_pull(buf, (size_t)len, proved, a) ? -EBADMSG : 0;
}

/* Pull requests of at most RC_PULL_MAX_EXT extents and PULL_MAX_BYTES bytes. */
int mig_pull_some(struct rc_client *b, const struct rc_migrate_opts *o, const char *region,
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
	mig_tell(o, "copy", round, 0, total);
	snprintf(req.host, sizeof(req.host), "%s", o->src.host);
	snprintf(req.port, sizeof(req.port), "%s", o->src.port);
	snprintf(req.src_region, sizeof(req.src_region), "%s", region);
	snprintf(req.dst_region, sizeof(req.dst_region), "%s", region);
	snprintf(req.token, sizeof(req.token), "%s", o->token ? o->token : "");
	do { /* at least one request: a last one may carry no extent */
		struct rc_mig_resp resp;
		uint64_t sum = 0;
		size_t k = 0;
		int rc, len;

		while (i + k < n && k < RC_PULL_MAX_EXT &&
		       (k == 0 || sum + ext[i + k].len <= PULL_MAX_BYTES))
			sum += ext[i + k++].len;
		req.flags = (i == 0 && first ? RC_MIG_FIRST : 0) |
			    (i + k == n && last ? RC_MIG_LAST : 0) | (rkey ? RC_PULL_RKEY : 0) |
			    digest;
		req.n = (uint32_t)k;
		req.ext = (struct rc_extent *)&ext[i];
		len = rc_ctrl_encode_pull(buf, sizeof(buf), 1, &req);
		if ((rc = seal_pull(b, o->token, buf, len, err)) ||
		    (rc = ask(b, "destination", buf, len, PULL_WAIT_MS, &resp, err)))
			return rc;
		*bytes += resp.bytes;
		mig_tell(o, "copy", round, *bytes, total);
		i += k;
	} while (i < n);
	return 0;
}

int mig_hash_all(struct rc_client *cl, const char *side, uint32_t flags, const char *region,
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
	if ((rc = mig_open_pair(o, &a, &b, r, err)))
		goto out;
	if (!n) {
		whole = (struct rc_extent){ .src = 0, .dst = 0, .len = a->region.length };
		ext = &whole;
		n = 1;
	}
	rc = mig_pull_some(b, o, r->region, ext, n, true, true, 0, 0, 1, &r->bytes_per_round[0],
			   err);
	if (rc)
		goto out;
	r->rounds = 1;
	r->blocks_per_round[0] = n;
	r->bytes = r->bytes_per_round[0];
	/* Hashing tens of MiB takes the servers' CPUs a while under emulation. */
	mig_tell(o, "hash", 0, 0, 0);
	rc = mig_hash_all(a, "source", 0, r->region, ext, n, a->region.length, wait * 4, r->sha_src,
			  err);
	if (!rc)
		rc = mig_hash_all(b, "destination", RC_HASH_DST, r->region, ext, n,
				  a->region.length, wait * 4, r->sha_dst, err);
	if (rc)
		goto out;
	r->verified = !memcmp(r->sha_src, r->sha_dst, RC_SHA256_LEN);
	r->seconds = rc_now() - t0;
out:
	rc_client_close(b);
	rc_client_close(a);
	return rc;
}

/* One migration step (RC_MIG_TRACK ... RC_MIG_DROP) asked of the source. */
int mig_step(struct rc_client *a, enum rc_mig_step s, uint32_t move, const char *region,
	     const char *arg, struct rc_mig_resp *resp, int wait_ms, struct rc_err *err)
{
	unsigned char buf[RC_CTRL_MSG_MAX];
	struct rc_mig_cmd c = { .step = (uint32_t)s, .move = move };

	snprintf(c.region, sizeof(c.region), "%s", region);
	snprintf(c.arg, sizeof(c.arg), "%s", arg ? arg : "");
	return ask(a, "source", buf, rc_ctrl_encode_mig_cmd(buf, sizeof(buf), 3, &c), wait_ms, resp,
		   err);
}
