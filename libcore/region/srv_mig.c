// SPDX-License-Identifier: MIT
/*
 * A migration's work on a region server. The destination pulls: it connects
 * to the source as an ordinary client (on its listener's PD, from its
 * listening address, so the pulled bytes land straight in its own region)
 * and READs the extents it is sent. Either side hashes extents of its own
 * memory, so the orchestrator compares what each side really holds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/client.h>
#include <rdmactl/sha256.h>

#include "srv_mig.h"

#define PULL_TIMEOUT_MS 5000

struct srv_mig {
	struct rc_client *src;     /* the pull connection, FIRST to LAST */
	struct rc_sha256 sha;      /* the hash, FIRST to LAST */
	uint64_t hashed;
	struct rc_extent ext[RC_PULL_MAX_EXT > RC_HASH_MAX_EXT ? RC_PULL_MAX_EXT : RC_HASH_MAX_EXT];
};

void srv_mig_free(struct srv_mig *st)
{
	if (!st)
		return;
	rc_client_close(st->src);
	free(st);
}

static struct rc_region *find_region(const struct srv_mig_host *h, const char *name)
{
	for (int i = 0; i < h->nregions; i++)
		if (!strcmp(h->regions[i].d.name, name))
			return &h->regions[i];
	return NULL;
}

static int check_extents(const struct rc_extent *x, uint32_t n, uint64_t src_len,
			 uint64_t dst_len, struct rc_err *err)
{
	for (uint32_t i = 0; i < n; i++)
		if (x[i].src > src_len || x[i].len > src_len - x[i].src || x[i].dst > dst_len ||
		    x[i].len > dst_len - x[i].dst)
			return rc_err_set(err, ERANGE,
					  "extent %llu+%llu (to %llu) is past the end of the region",
					  (unsigned long long)x[i].src, (unsigned long long)x[i].len,
					  (unsigned long long)x[i].dst);
	return 0;
}

static bool wildcard(const char *a)
{
	return !a || !*a || !strcmp(a, "0.0.0.0") || !strcmp(a, "::");
}

static int pull(struct srv_mig *st, const struct srv_mig_host *h, const struct rc_pull_req *r,
		struct rc_mig_resp *resp, struct rc_err *err)
{
	struct rc_region *dst = find_region(h, r->dst_region);
	int rc;

	if (!dst)
		return rc_err_set(err, ENOENT, "no region named '%s' is served here", r->dst_region);
	if (dst->d.access == RC_ACCESS_RO)
		return rc_err_set(err, EACCES, "region '%s' is read-only here", r->dst_region);
	if (r->flags & RC_MIG_FIRST) {
		struct rc_client_opts o = { .token = r->token[0] ? r->token : NULL, .nconns = 1 };
		struct rc_target t = { 0 };

		rc_client_close(st->src);
		st->src = NULL;
		snprintf(t.host, sizeof(t.host), "%s", r->host);
		snprintf(t.port, sizeof(t.port), "%s", r->port);
		snprintf(t.region, sizeof(t.region), "%s", r->src_region);
		o.conn.pd = h->pd;
		o.conn.bind_addr = wildcard(h->bind_addr) ? NULL : h->bind_addr;
		o.conn.dev_name = h->dev_name;
		o.conn.timeout_ms = PULL_TIMEOUT_MS;
		o.conn.sq_depth = 32;
		rc = rc_client_open(&t, &o, &st->src, err);
		if (rc) {
			char why[sizeof(err->msg)];

			snprintf(why, sizeof(why), "%s", err->msg);
			return rc_err_set(err, -rc, "cannot reach the source %s:%s: %s", r->host,
					  r->port, why);
		}
	}
	if (!st->src)
		return rc_err_set(err, ENOTCONN, "a pull must start with RC_MIG_FIRST");
	rc = check_extents(r->ext, r->n, st->src->region.length, dst->d.length, err);
	if (rc)
		return rc;
	struct rc_copy c = {
		.op = RC_OP_READ, .conn = st->src->conns[0], .local = dst->d.addr,
		.lkey = dst->mr->lkey, .remote = st->src->region.addr, .rkey = st->src->region.rkey,
		.ext = r->ext, .n = r->n, .timeout_ms = PULL_TIMEOUT_MS,
	};

	rc = rc_copy_run(&c, &resp->bytes, err);
	if (rc || (r->flags & RC_MIG_LAST)) {
		rc_client_close(st->src);
		st->src = NULL;
	}
	return rc;
}

static int hash(struct srv_mig *st, const struct srv_mig_host *h, const struct rc_hash_req *r,
		struct rc_mig_resp *resp, struct rc_err *err)
{
	struct rc_region *reg = find_region(h, r->region);
	bool at_dst = r->flags & RC_HASH_DST;
	int rc;

	if (!reg)
		return rc_err_set(err, ENOENT, "no region named '%s' is served here", r->region);
	if (reg->mem.kind == RC_MEM_CUDA)
		return rc_err_set(err, ENOTSUP, "region '%s' is GPU memory: cannot hash it here",
				  r->region);
	rc = check_extents(r->ext, r->n, reg->d.length, reg->d.length, err);
	if (rc)
		return rc;
	if (r->flags & RC_MIG_FIRST) {
		rc_sha256_init(&st->sha);
		st->hashed = 0;
	}
	for (uint32_t i = 0; i < r->n; i++) {
		rc_sha256_update(&st->sha, (char *)reg->mem.buf + (at_dst ? r->ext[i].dst : r->ext[i].src),
				 (size_t)r->ext[i].len);
		st->hashed += r->ext[i].len;
	}
	resp->bytes = st->hashed;
	if (r->flags & RC_MIG_LAST)
		rc_sha256_final(&st->sha, resp->digest);
	return 0;
}

int srv_mig_handle(struct srv_mig **stp, const struct srv_mig_host *h, const void *msg,
		   size_t len, void *out, size_t cap)
{
	struct rc_mig_resp resp = { 0 };
	struct rc_ctrl_hdr hdr;
	struct rc_err e = { 0 };
	struct srv_mig *st = *stp;
	int rc;

	if (rc_ctrl_decode_hdr(msg, len, &hdr) ||
	    (hdr.type != RC_CTRL_PULL_REQ && hdr.type != RC_CTRL_HASH_REQ))
		return 0;
	if (!st) {
		st = calloc(1, sizeof(*st));
		if (!st) {
			resp.status = -ENOMEM;
			snprintf(resp.msg, sizeof(resp.msg), "out of memory");
			return rc_ctrl_encode_mig_resp(out, cap, hdr.seq, &resp);
		}
		*stp = st;
	}
	if (hdr.type == RC_CTRL_PULL_REQ) {
		struct rc_pull_req r = { .ext = st->ext };

		rc = rc_ctrl_decode_pull(msg, len, &r, RC_PULL_MAX_EXT);
		rc = rc ? rc_err_set(&e, EBADMSG, "a malformed pull request")
			: pull(st, h, &r, &resp, &e);
	} else {
		struct rc_hash_req r = { .ext = st->ext };

		rc = rc_ctrl_decode_hash(msg, len, &r, RC_HASH_MAX_EXT);
		rc = rc ? rc_err_set(&e, EBADMSG, "a malformed hash request")
			: hash(st, h, &r, &resp, &e);
	}
	resp.status = rc;
	if (rc)
		snprintf(resp.msg, sizeof(resp.msg), "%.*s", RC_MIG_MSG_LEN - 1, e.msg);
	rc = rc_ctrl_encode_mig_resp(out, cap, hdr.seq, &resp);
	return rc < 0 ? 0 : rc;
}
