// SPDX-License-Identifier: MIT
/*
 * PULL and HASH on a region server: checked on the event loop against the
 * region's migration state, queued, and run one at a time on the worker
 * thread (the pull connection to the source, the streamed hash, the digests
 * per block); the answers go back through the host's reply.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srv_mig_int.h"
#include <rdmactl/err_core.h>
#include <rdmactl/sha256_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/ctrl_core.h>
#include <rdmactl/client_core.h>

#define PULL_TIMEOUT_MS 5000

/* ---- the worker ---- */

/* What landed, copied aside per block (over the block's older copy): a
 * memcpy, so that neither the pre-copy rounds nor the final copy (read
 * through the fence's rkey, inside the blackout) wait for a digest; the
 * copies are digested when the verification asks, after the cutover. */
static void pulled_sums(struct blk_sums *s, const struct job *j)
{
	for (uint32_t i = 0; i < j->n; i++)
		blk_sums_stash(s, j->mbuf, j->ext[i].dst, j->ext[i].len);
}

/* RC_HASH_BLOCKS: the digest of one range of blocks, from the sums of what
 * was pulled here (RC_HASH_DST) or of the frozen copy. */
static int blocks_run(struct srv_mig *st, struct job *j, struct rc_err *err)
{
	struct mig_region *m = &st->reg[j->region];
	const struct rc_extent *x = &j->ext[0];

	if (j->flags & RC_HASH_DST) {
		if (!m->pulled.sum)
			return rc_err_set(err, ENOENT, "nothing was pulled into this region here");
		blk_sums_settle(&m->pulled);
		blk_sums_digest(&m->pulled, x->dst, x->len, j->resp.digest);
	} else {
		if ((!m->frozen.sum || m->frozen.tag != j->move) &&
		    blk_sums_reset(&m->frozen, j->dst_len, j->move))
			return rc_err_set(err, ENOMEM, "out of memory");
		blk_sums_fill(&m->frozen, j->buf, x->src, x->len);
		blk_sums_digest(&m->frozen, x->src, x->len, j->resp.digest);
	}
	j->resp.bytes = x->len;
	return 0;
}

static int pull_run(struct srv_mig *st, struct job *j, struct rc_err *err)
{
	int rc;

	if (j->flags & RC_MIG_FIRST) {
		struct rc_client_opts o = { .token = j->token[0] ? j->token : NULL, .nconns = 1 };

		rc_client_close(st->src);
		st->src = NULL;
		o.conn.pd = st->pd;
		o.conn.bind_addr = st->bind_addr;
		o.conn.dev_name = st->dev_name;
		o.admin_token = st->admin_token; /* proved to the source first */
		o.conn.timeout_ms = PULL_TIMEOUT_MS;
		o.conn.sq_depth = 32;
		rc = rc_client_open(&j->src, &o, &st->src, err);
		if (rc)
			return rc_err_wrap(err, -rc, "cannot reach the source %s:%s", j->src.host,
					   j->src.port);
	}
	if (!st->src)
		return rc_err_set(err, ENOTCONN, "a pull must start with RC_MIG_FIRST");
	if (j->flags & RC_MIG_FIRST) {
		struct blk_sums *s = &st->reg[j->region].pulled;

		blk_sums_free(s);
		if ((j->flags & RC_PULL_DIGEST) && blk_sums_reset(s, j->dst_len, 1))
			return rc_err_set(err, ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < j->n; i++)
		if (j->ext[i].src > st->src->region.length ||
		    j->ext[i].len > st->src->region.length - j->ext[i].src)
			return rc_err_set(err, ERANGE,
					  "extent %llu+%llu is past the end of the source's region",
					  (unsigned long long)j->ext[i].src,
					  (unsigned long long)j->ext[i].len);
	struct rc_copy c = {
		.op = RC_OP_READ,
		.conn = st->src->conns[0],
		.local = j->local,
		.lkey = j->lkey,
		.remote = st->src->region.addr,
		.rkey = (j->flags & RC_PULL_RKEY) ? j->rkey : st->src->region.rkey,
		.ext = j->ext,
		.n = j->n,
		.timeout_ms = PULL_TIMEOUT_MS,
	};

	rc = rc_copy_run(&c, &j->resp.bytes, err);
	if (!rc && j->mbuf && (j->flags & RC_PULL_DIGEST))
		pulled_sums(&st->reg[j->region].pulled, j);
	if (rc || (j->flags & RC_MIG_LAST)) {
		rc_client_close(st->src);
		st->src = NULL;
	}
	return rc;
}

static void hash_run(struct srv_mig *st, struct job *j)
{
	bool at_dst = j->flags & RC_HASH_DST;

	if (j->flags & RC_MIG_FIRST) {
		rc_sha256_init(&st->sha);
		st->hashed = 0;
	}
	for (uint32_t i = 0; i < j->n; i++) {
		rc_sha256_update(&st->sha, j->buf + (at_dst ? j->ext[i].dst : j->ext[i].src),
				 (size_t)j->ext[i].len);
		st->hashed += j->ext[i].len;
	}
	j->resp.bytes = st->hashed;
	if (j->flags & RC_MIG_LAST)
		rc_sha256_final(&st->sha, j->resp.digest);
}

static void job_run(struct srv_mig *st, struct job *j)
{
	struct rc_err e = { 0 };
	char text[sizeof(e.msg) + 64];
	int rc = 0;

	if (j->type == RC_CTRL_PULL_REQ) {
		rc = pull_run(st, j, &e);
		/* A pull of blocks failed: the move is off, the copies aside go
		 * (the empty one that ends a pull after the cutover leaves them). */
		if (rc && j->n)
			blk_sums_free(&st->reg[j->region].pulled);
	} else if (j->flags & RC_HASH_BLOCKS) {
		rc = blocks_run(st, j, &e);
	} else {
		hash_run(st, j);
	}
	j->resp.status = rc;
	if (rc)
		snprintf(j->resp.msg, sizeof(j->resp.msg), "%.*s", RC_MIG_MSG_LEN - 1,
			 rc_err_text(&e, NULL, text, sizeof(text)));
}

void *mig_worker(void *arg)
{
	struct srv_mig *st = arg;

	pthread_mutex_lock(&st->mu);
	for (;;) {
		struct job *j;

		while (!st->todo && !st->quit)
			pthread_cond_wait(&st->cv, &st->mu);
		if (st->quit)
			break;
		j = st->todo;
		st->todo = NULL;
		pthread_mutex_unlock(&st->mu);
		job_run(st, j);
		pthread_mutex_lock(&st->mu);
		st->done = j;
		if (write(st->efd, &(uint64_t){ 1 }, 8) < 0) {
			/* an eventfd write fails only on overflow: it is readable */
		}
	}
	pthread_mutex_unlock(&st->mu);
	return NULL;
}

/* The next queued job to the worker (or, without one, run here). */
static void job_start(struct srv_mig *st)
{
	if (st->running || !st->njobs)
		return;
	st->running = true;
	if (!st->th_up) {
		job_run(st, st->jobs[st->head]);
		st->done = st->jobs[st->head];
		if (write(st->efd, &(uint64_t){ 1 }, 8) < 0) {
			/* readable already */
		}
		return;
	}
	pthread_mutex_lock(&st->mu);
	st->todo = st->jobs[st->head];
	pthread_cond_signal(&st->cv);
	pthread_mutex_unlock(&st->mu);
}

int srv_mig_fd(const struct srv_mig *st)
{
	return st ? st->efd : -1;
}

void srv_mig_poll(struct srv_mig *st, const struct srv_mig_host *h)
{
	unsigned char out[RC_CTRL_MSG_MAX];
	uint64_t v;
	struct job *j;
	int len;

	if (!st || read(st->efd, &v, sizeof(v)) < 0)
		return;
	pthread_mutex_lock(&st->mu);
	j = st->done;
	st->done = NULL;
	pthread_mutex_unlock(&st->mu);
	if (!j)
		return;
	st->running = false;
	st->head = (st->head + 1) % MAX_JOBS;
	st->njobs--;
	if (j->region >= 0 && j->region < RC_MAX_REGIONS)
		st->reg[j->region].busy--;
	if (j->type == RC_CTRL_PULL_REQ && (j->resp.status || (j->flags & RC_MIG_LAST)))
		st->pull_owner = NULL;
	if (j->type == RC_CTRL_HASH_REQ && (j->flags & RC_MIG_LAST))
		st->hash_owner = NULL;
	if (st->src_close && !st->pull_owner) {
		rc_client_close(st->src);
		st->src = NULL;
		st->src_close = false;
	}
	if (j->conn) {
		len = rc_ctrl_encode_mig_resp(out, sizeof(out), j->seq, &j->resp);
		if (len > 0 && h->reply)
			h->reply(h->arg, j->conn, j->slot, out, (size_t)len);
	}
	free(j);
	job_start(st);
}

/* ---- the requests, checked on the event loop ---- */

/* Whether extents x[0..n) lie inside a source of src_len bytes and a
 * destination of dst_len, and cover at most cap bytes in all. */
static int check_extents(const struct rc_extent *x, uint32_t n, uint64_t src_len, uint64_t dst_len,
			 uint64_t cap, struct rc_err *err)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (x[i].src > src_len || x[i].len > src_len - x[i].src || x[i].dst > dst_len ||
		    x[i].len > dst_len - x[i].dst)
			return rc_err_set(err, ERANGE,
					  "extent %llu+%llu (to %llu) is past the end of the region",
					  (unsigned long long)x[i].src, (unsigned long long)x[i].len,
					  (unsigned long long)x[i].dst);
		sum += x[i].len;
		if (sum > cap)
			return rc_err_set(
				err, E2BIG,
				"a request covers at most %llu bytes (the region's size): split it",
				(unsigned long long)cap);
	}
	return 0;
}

/* Queue a checked job for the worker. */
static int job_queue(struct srv_mig *st, struct job *j, struct rc_err *err)
{
	if (st->njobs == MAX_JOBS) {
		free(j);
		return rc_err_set(err, EBUSY,
				  "%d migration requests wait here already: ask again later",
				  MAX_JOBS);
	}
	st->jobs[(st->head + st->njobs) % MAX_JOBS] = j;
	st->njobs++;
	if (j->region >= 0)
		st->reg[j->region].busy++;
	job_start(st);
	return SRV_MIG_LATER;
}

static int pull(struct srv_mig *st, const struct srv_mig_host *h, const void *conn,
		const struct rc_pull_req *r, struct job *j, struct rc_err *err)
{
	int ri = mig_region_index(h, r->dst_region), rc;
	struct mig_region *m;
	struct rc_region *dst;

	if (ri < 0)
		return rc_err_set(err, ENOENT, "no region named '%s' is served here", r->dst_region);
	m = &st->reg[ri];
	dst = &h->regions[ri];
	if (dst->d.access == RC_ACCESS_RO)
		return rc_err_set(err, EACCES, "region '%s' is read-only here", r->dst_region);
	if (moving(m))
		return rc_err_set(err, EBUSY, "region '%s' is %s: it cannot take a pull",
				  r->dst_region, mig_state_name[m->state]);
	if (r->flags & RC_MIG_FIRST) {
		if (st->pull_owner && st->pull_owner != conn)
			return rc_err_set(err, EBUSY,
					  "another migration pulls into this server now");
		if (gone(m) && m->busy)
			return rc_err_set(err, EBUSY, "region '%s' has requests running",
					  r->dst_region);
		/* A move back: the region is served here again, and filled. */
		if (gone(m) && (rc = mig_revive(h, m, dst, err)))
			return rc;
		st->pull_owner = conn;
		st->pull_region = ri;
	} else if (st->pull_owner != conn || st->pull_region != ri) {
		return rc_err_set(err, ENOTCONN, "a pull must start with RC_MIG_FIRST");
	}
	if (!dst->mr)
		return rc_err_set(err, EINVAL, "region '%s' is not registered here", r->dst_region);
	if ((r->flags & RC_PULL_DIGEST) && dst->mem.kind == RC_MEM_CUDA)
		return rc_err_opt(
			err, ENOTSUP,
			"region '%s' is GPU memory here: its blocks cannot be digested as they land (move it with {no_verify})",
			r->dst_region);
	rc = check_extents(r->ext, r->n, UINT64_MAX, dst->d.length, dst->d.length, err);
	if (rc)
		return rc;
	j->region = ri;
	snprintf(j->src.host, sizeof(j->src.host), "%s", r->host);
	snprintf(j->src.port, sizeof(j->src.port), "%s", r->port);
	snprintf(j->src.region, sizeof(j->src.region), "%s", r->src_region);
	snprintf(j->token, sizeof(j->token), "%s", r->token);
	j->rkey = r->rkey;
	j->local = dst->d.addr;
	j->lkey = dst->mr->lkey;
	j->dst_len = dst->d.length;
	j->mbuf = dst->mem.kind == RC_MEM_CUDA ? NULL : dst->mem.buf;
	return 0;
}

/* RC_HASH_BLOCKS: one range of whole blocks in one request; at the source
 * only of a frozen copy (fenced, or cut over and kept), at the destination
 * only of a region not being moved away. */
static int blocks_check(const struct mig_region *m, const struct rc_region *reg,
			const struct rc_hash_req *r, struct rc_err *err)
{
	bool at_dst = r->flags & RC_HASH_DST;

	if (!(r->flags & RC_HASH_BLOCKS))
		return 0;
	if ((r->flags & (RC_MIG_FIRST | RC_MIG_LAST)) != (RC_MIG_FIRST | RC_MIG_LAST) || r->n != 1 ||
	    !blk_sums_aligned(reg->d.length, at_dst ? r->ext[0].dst : r->ext[0].src, r->ext[0].len))
		return rc_err_set(
			err, EINVAL,
			"a digest of blocks is one request of one range of whole %u-byte blocks",
			RC_MIG_BLOCK);
	if (at_dst ? moving(m) || gone(m) : m->state != MS_FENCED && m->state != MS_CUT_OVER)
		return rc_err_set(err, EINVAL, "region '%s' is %s: no digest of its blocks %s",
				  r->region, mig_state_name[m->state],
				  at_dst ? "as pulled here" : "(its copy is not frozen)");
	return 0;
}

static int hash(struct srv_mig *st, const struct srv_mig_host *h, const void *conn,
		const struct rc_hash_req *r, struct job *j, struct rc_err *err)
{
	int ri = mig_region_index(h, r->region), rc;
	struct rc_region *reg;
	struct mig_region *m;

	if (ri < 0)
		return rc_err_set(err, ENOENT, "no region named '%s' is served here", r->region);
	m = &st->reg[ri];
	reg = &h->regions[ri];
	if ((rc = blocks_check(m, reg, r, err)))
		return rc;
	if (gone(m) && !(r->flags & RC_HASH_BLOCKS))
		return rc_err_set(err, ENOENT, "region '%s' is %s here (moved to %s)", r->region,
				  mig_state_name[m->state], m->moved_to);
	if (reg->mem.kind == RC_MEM_CUDA)
		return rc_err_set(err, ENOTSUP, "region '%s' is GPU memory: cannot hash it here",
				  r->region);
	if (!reg->mem.buf)
		return rc_err_set(err, ENOENT, "region '%s' holds no memory here", r->region);
	rc = check_extents(r->ext, r->n, reg->d.length, reg->d.length, reg->d.length, err);
	if (rc)
		return rc;
	if (r->flags & RC_MIG_FIRST) {
		if (st->hash_owner && st->hash_owner != conn)
			return rc_err_set(err, EBUSY, "another migration hashes on this server now");
		st->hash_owner = conn;
		st->hash_region = ri;
		st->hash_at_dst = r->flags & RC_HASH_DST;
	} else if (st->hash_owner != conn || st->hash_region != ri ||
		   st->hash_at_dst != !!(r->flags & RC_HASH_DST)) {
		return rc_err_set(err, EINVAL, "a hash must start with RC_MIG_FIRST");
	}
	j->region = ri;
	j->buf = reg->mem.buf;
	j->move = m->move;
	j->dst_len = reg->d.length;
	return 0;
}

int mig_job_request(struct srv_mig *st, const struct srv_mig_host *h, const void *conn, bool admin,
		    int slot, const struct rc_ctrl_hdr *hdr, const void *msg, size_t len,
		    struct rc_err *err)
{
	struct job *j = calloc(1, sizeof(*j));
	int rc;

	if (!j)
		return rc_err_set(err, ENOMEM, "out of memory");
	if (!admin) {
		rc = rc_err_opt(err, EPERM,
				"%s needs the server's admin token (migrate {admin_token_file})",
				hdr->type == RC_CTRL_PULL_REQ ? "a pull" : "a hash");
	} else if (hdr->type == RC_CTRL_PULL_REQ) {
		struct rc_pull_req r = { .ext = j->ext };

		rc = rc_ctrl_decode_pull(msg, len, &r, RC_PULL_MAX_EXT);
		rc = rc ? rc_err_set(err, EBADMSG, "a malformed pull request")
			: pull(st, h, conn, &r, j, err);
		j->flags = r.flags;
		j->n = r.n;
	} else {
		struct rc_hash_req r = { .ext = j->ext };

		rc = rc_ctrl_decode_hash(msg, len, &r, RC_HASH_MAX_EXT);
		rc = rc ? rc_err_set(err, EBADMSG, "a malformed hash request")
			: hash(st, h, conn, &r, j, err);
		j->flags = r.flags;
		j->n = r.n;
	}
	if (rc) {
		free(j);
		return rc;
	}
	j->conn = conn;
	j->slot = slot;
	j->seq = hdr->seq;
	j->type = hdr->type;
	return job_queue(st, j, err);
}
