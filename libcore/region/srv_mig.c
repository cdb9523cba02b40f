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
#define MAX_OPEN 256

/* A region being moved away: what was written since the last TAKE. */
struct mig_region {
	bool tracking;
	bool fenced;
	bool moved;
	bool dropped;
	const void *owner;         /* the orchestrator's connection */
	struct ibv_mr *ro;         /* registered at TRACK, read-only: the fence's */
	uint64_t nblocks;
	uint8_t *dirty;            /* one byte a block: simple, and regions are few */
	char moved_to[RC_MIG_MSG_LEN];
};

/* A write or atomics a client announced and has not completed yet. */
struct open_write {
	const void *conn;
	int region;
	uint64_t off, len;
};

struct srv_mig {
	struct mig_region reg[RC_MAX_REGIONS];
	struct open_write open[MAX_OPEN];
	int nopen;
	struct rc_client *src;     /* the pull connection, FIRST to LAST */
	struct rc_sha256 sha;      /* the hash, FIRST to LAST */
	uint64_t hashed;
	struct rc_extent ext[RC_PULL_MAX_EXT > RC_HASH_MAX_EXT ? RC_PULL_MAX_EXT : RC_HASH_MAX_EXT];
};

/* Not moving any more: the read-only registration made for a fence goes. */
static void unready(struct mig_region *m)
{
	if (m->ro)
		ibv_dereg_mr(m->ro);
	m->ro = NULL;
}

void srv_mig_free(struct srv_mig *st)
{
	if (!st)
		return;
	rc_client_close(st->src);
	for (int i = 0; i < RC_MAX_REGIONS; i++) {
		unready(&st->reg[i]);
		free(st->reg[i].dirty);
	}
	free(st);
}

static void mark(struct mig_region *m, uint64_t off, uint64_t len)
{
	if (!m->tracking || !len)
		return;
	for (uint64_t b = off / RC_MIG_BLOCK; b <= (off + len - 1) / RC_MIG_BLOCK && b < m->nblocks; b++)
		m->dirty[b] = 1;
}

static int reregister(const struct srv_mig_host *h, struct rc_region *r, enum rc_access acc,
		      struct rc_err *err);

void srv_mig_conn_gone(struct srv_mig *st, const struct srv_mig_host *h, const void *conn)
{
	if (!st)
		return;
	/* The orchestrator went away before the cutover: the move is off, the
	 * region is served here again. */
	for (int i = 0; i < h->nregions && i < RC_MAX_REGIONS; i++) {
		struct mig_region *m = &st->reg[i];

		if (m->owner != conn || m->moved)
			continue;
		if (!m->fenced || !reregister(h, &h->regions[i], h->regions[i].d.access, NULL)) {
			m->fenced = m->tracking = false;
			m->owner = NULL;
			unready(m);
		}
	}
	for (int i = 0; i < st->nopen; i++) {
		if (st->open[i].conn != conn)
			continue;
		/* It may have landed: count it written. */
		mark(&st->reg[st->open[i].region], st->open[i].off, st->open[i].len);
		st->open[i--] = st->open[--st->nopen];
	}
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
		.lkey = dst->mr->lkey, .remote = st->src->region.addr,
		.rkey = (r->flags & RC_PULL_RKEY) ? r->rkey : st->src->region.rkey,
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
	if (!reg->mem.buf)
		return rc_err_set(err, ENOENT, "region '%s' was dropped here (moved)", r->region);
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

static int region_index(const struct srv_mig_host *h, const char *name)
{
	for (int i = 0; i < h->nregions; i++)
		if (!strcmp(h->regions[i].d.name, name))
			return i;
	return -1;
}

/* Swap the region's MR for one that allows access acc (a new rkey). */
static int reregister(const struct srv_mig_host *h, struct rc_region *r, enum rc_access acc,
		      struct rc_err *err)
{
	struct ibv_mr *mr;
	int rc = rc_mem_register(&r->mem, h->pd, rc_access_ibv(acc), &mr, err);

	if (rc)
		return rc;
	if (r->mr && ibv_dereg_mr(r->mr)) {
		rc = rc_err_set(err, errno, "cannot deregister region '%s': %s", r->d.name,
				strerror(errno));
		ibv_dereg_mr(mr);
		return rc;
	}
	r->mr = mr;
	r->d.rkey = mr->rkey;
	return 0;
}

/* The fence: serve through the read-only registration ro, revoke the other. */
static int revoke(struct rc_region *r, struct ibv_mr *ro, struct rc_err *err)
{
	if (r->mr && ibv_dereg_mr(r->mr))
		return rc_err_set(err, errno, "cannot deregister region '%s': %s", r->d.name,
				  strerror(errno));
	r->mr = ro;
	r->d.rkey = ro->rkey;
	return 0;
}

static int take(struct mig_region *m, void *out, size_t cap, uint32_t seq)
{
	struct rc_extent x[RC_HASH_MAX_EXT];
	struct rc_hash_req r = { .ext = x };
	uint64_t b = 0;

	while (b < m->nblocks && r.n < RC_HASH_MAX_EXT) {
		uint64_t e;

		for (; b < m->nblocks && !m->dirty[b]; b++)
			;
		if (b == m->nblocks)
			break;
		for (e = b; e < m->nblocks && m->dirty[e]; e++)
			m->dirty[e] = 0;
		x[r.n++] = (struct rc_extent){ .src = b * RC_MIG_BLOCK, .dst = b * RC_MIG_BLOCK,
					       .len = (e - b) * RC_MIG_BLOCK };
		b = e;
	}
	for (; b < m->nblocks && !m->dirty[b]; b++)
		;
	r.flags = b == m->nblocks ? RC_MIG_LAST : 0;
	return rc_ctrl_encode_dirty(out, cap, seq, &r);
}

static int step(struct srv_mig *st, const struct srv_mig_host *h, const void *conn,
		const struct rc_mig_cmd *c, struct rc_mig_resp *resp, struct rc_err *err)
{
	int ri = region_index(h, c->region);
	struct mig_region *m;
	struct rc_region *r;

	if (ri < 0)
		return rc_err_set(err, ENOENT, "no region named '%s' is served here", c->region);
	m = &st->reg[ri];
	r = &h->regions[ri];
	switch (c->step) {
	case RC_MIG_INTENT:
		if (st->nopen < MAX_OPEN)
			st->open[st->nopen++] = (struct open_write){ conn, ri, c->off, c->len };
		else
			mark(m, c->off, c->len); /* no room: count it written now */
		return 0;
	case RC_MIG_DONE:
		for (int i = 0; i < st->nopen; i++) {
			struct open_write *o = &st->open[i];

			if (o->conn == conn && o->region == ri && o->off == c->off && o->len == c->len) {
				*o = st->open[--st->nopen];
				break;
			}
		}
		mark(m, c->off, c->len);
		return 0;
	case RC_MIG_WHERE:
		if (m->moved)
			snprintf(resp->msg, sizeof(resp->msg), "%s", m->moved_to);
		else if (m->fenced)
			return rc_err_set(err, EAGAIN, "region '%s' is being moved: ask again", c->region);
		return 0;
	case RC_MIG_TRACK:
		if (m->fenced || m->moved)
			return rc_err_set(err, EBUSY, "region '%s' is %s", c->region,
					  m->moved ? "moved already" : "fenced");
		if (r->mem.kind == RC_MEM_CUDA)
			return rc_err_set(err, ENOTSUP, "region '%s' is GPU memory: it cannot be moved live",
					  c->region);
		free(m->dirty);
		m->nblocks = (r->d.length + RC_MIG_BLOCK - 1) / RC_MIG_BLOCK;
		m->dirty = calloc(m->nblocks ? m->nblocks : 1, 1);
		if (!m->dirty)
			return rc_err_set(err, ENOMEM, "out of memory");
		/* The read-only registration is made now, so that the fence, in
		 * the blackout, only has to revoke the old one. */
		if (!m->ro) {
			int rc = rc_mem_register(&r->mem, h->pd, rc_access_ibv(RC_ACCESS_RO), &m->ro,
						 err);

			if (rc)
				return rc;
		}
		m->tracking = true;
		m->owner = conn;
		return 0;
	case RC_MIG_FENCE: {
		int rc;

		if (!m->tracking)
			return rc_err_set(err, EINVAL, "region '%s' is not being moved", c->region);
		/* Reads go on; writes and atomics now fail with a remote access
		 * error, so their clients know they did not happen. */
		rc = m->ro ? revoke(r, m->ro, err) : reregister(h, r, RC_ACCESS_RO, err);
		if (rc)
			return rc;
		m->ro = NULL;
		m->fenced = true;
		/* Every notice that came in before the revocation is in a queue. */
		if (h->drain_all)
			h->drain_all(h->arg);
		for (int i = 0; i < st->nopen; i++)
			if (st->open[i].region == ri)
				mark(m, st->open[i].off, st->open[i].len);
		resp->bytes = r->d.rkey;
		return 0;
	}
	case RC_MIG_UNFENCE: {
		int rc = m->fenced ? reregister(h, r, r->d.access, err) : 0;

		if (rc)
			return rc;
		m->fenced = m->tracking = m->moved = false;
		m->owner = NULL;
		unready(m);
		free(m->dirty);
		m->dirty = NULL;
		return 0;
	}
	case RC_MIG_CUTOVER:
		if (!m->fenced)
			return rc_err_set(err, EINVAL, "region '%s' is not fenced", c->region);
		m->moved = true;
		m->tracking = false;
		snprintf(m->moved_to, sizeof(m->moved_to), "%s", c->arg);
		return 0;
	case RC_MIG_DROP:
		if (!m->moved)
			return rc_err_set(err, EINVAL, "region '%s' has not moved", c->region);
		if (!m->dropped && r->mr) {
			ibv_dereg_mr(r->mr);
			r->mr = NULL;
			r->d.rkey = 0;
			if (r->mem.kind != RC_MEM_FILE)
				rc_mem_free(&r->mem);
		}
		m->dropped = true;
		return 0;
	default:
		return rc_err_set(err, EINVAL, "unknown migration step %u", c->step);
	}
}

int srv_mig_handle(struct srv_mig **stp, const struct srv_mig_host *h, const void *conn,
		   const void *msg, size_t len, void *out, size_t cap)
{
	struct rc_mig_resp resp = { 0 };
	struct rc_ctrl_hdr hdr;
	struct rc_err e = { 0 };
	struct srv_mig *st = *stp;
	int rc;

	if (rc_ctrl_decode_hdr(msg, len, &hdr) ||
	    (hdr.type != RC_CTRL_PULL_REQ && hdr.type != RC_CTRL_HASH_REQ &&
	     hdr.type != RC_CTRL_MIG_CMD))
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
	} else if (hdr.type == RC_CTRL_MIG_CMD) {
		struct rc_mig_cmd c;

		rc = rc_ctrl_decode_mig_cmd(msg, len, &c);
		if (rc)
			rc = rc_err_set(&e, EBADMSG, "a malformed migration step");
		else if (c.step == RC_MIG_TAKE) {
			int ri = region_index(h, c.region);

			if (ri >= 0 && st->reg[ri].tracking)
				return take(&st->reg[ri], out, cap, hdr.seq);
			rc = rc_err_set(&e, ri < 0 ? ENOENT : EINVAL, "region '%s' is %s", c.region,
					ri < 0 ? "not served here" : "not being moved");
		} else {
			rc = step(st, h, conn, &c, &resp, &e);
			if (c.step == RC_MIG_INTENT || c.step == RC_MIG_DONE)
				return 0; /* notices get no answer */
		}
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
