// SPDX-License-Identifier: MIT
/*
 * A migration's work on a region server. The destination pulls: it connects
 * to the source as an ordinary client (on its listener's PD, from its
 * listening address, so the pulled bytes land straight in its own region)
 * and READs the extents it is sent. Either side hashes extents of its own
 * memory, so the orchestrator compares what each side really holds.
 *
 * Each region has a migration state, and every step is checked against it:
 *
 *   serving --TRACK--> tracking --FENCE--> fenced --CUTOVER--> cut over --DROP--> dropped
 *      ^                  |                  |                    |                 |
 *      +----UNFENCE-------+------------------+                    +--PULL (FIRST)---+
 *
 * A cut over or dropped region is listed still (so that a client that finds
 * it here asks WHERE and follows it), without a registration: every access
 * fails, and it is a destination like any other for a move back (PULL).
 * TRACK answers a move id that every later step of that move carries; the
 * steps, PULL and HASH need an admin connection (server.c decides).
 *
 * PULL and HASH run on one worker thread, one request at a time, so that
 * the event loop answers everyone else meanwhile; the requests wait in a
 * queue of their own, each holding its connection's slot until its answer.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include <rdmactl/client.h>
#include <rdmactl/sha256.h>

#include "blksum.h"
#include "srv_mig.h"

#define PULL_TIMEOUT_MS 5000
#define MAX_OPEN 256
#define MAX_JOBS 32 /* PULL and HASH requests queued for the worker */
/* 0: no worker thread, every request runs on the loop (the fuzz harness,
 * tests/fuzz/fuzz_region_srv.c, for inputs that replay the same way). */
#ifndef SRV_MIG_THREADS
#define SRV_MIG_THREADS 1
#endif

enum mig_state { MS_SERVING, MS_TRACKING, MS_FENCED, MS_CUT_OVER, MS_DROPPED };

static const char *state_name[] = { "served here", "being moved (tracking its writes)",
				    "being moved (fenced)", "cut over", "dropped" };

/* A region's migration: what was written since the last TAKE. */
struct mig_region {
	enum mig_state state;
	uint32_t move;     /* the move that owns it (tracking to cut over), else 0 */
	const void *owner; /* that move's connection */
	struct ibv_mr *ro; /* registered at TRACK, read-only: the fence's */
	uint64_t nblocks;
	uint8_t *dirty; /* one byte a block: simple, and regions are few */
	int busy;       /* PULL and HASH requests queued or running on it */
	/* Digests per block, for a verification outside the blackout (the
	 * worker's only): of what was pulled into it here (a destination),
	 * and of its frozen copy (a source, fenced or cut over). */
	struct blk_sums pulled, frozen;
	char moved_to[RC_MIG_MSG_LEN];
};

/* A write or atomics a client announced and has not completed yet. */
struct open_write {
	const void *conn;
	int region;
	uint64_t off, len;
};

/* A PULL or HASH for the worker: everything it needs, taken on the event
 * loop when the request was checked. */
struct job {
	const void *conn; /* NULL: its connection is gone, no answer */
	int slot;
	uint32_t seq;
	uint32_t type; /* RC_CTRL_PULL_REQ or RC_CTRL_HASH_REQ */
	int region;
	uint32_t flags;
	uint32_t n;
	struct rc_extent ext[RC_PULL_MAX_EXT > RC_HASH_MAX_EXT ? RC_PULL_MAX_EXT : RC_HASH_MAX_EXT];
	/* PULL */
	struct rc_target src;
	char token[RC_MIG_TOKEN_LEN];
	uint32_t rkey;
	uint64_t local;
	uint32_t lkey;
	uint64_t dst_len;
	unsigned char *mbuf; /* the destination's memory (NULL: not host memory) */
	/* HASH */
	const unsigned char *buf;
	uint32_t move; /* RC_HASH_BLOCKS at the source: the move frozen */
	/* The answer */
	struct rc_mig_resp resp;
};

struct srv_mig {
	struct mig_region reg[RC_MAX_REGIONS];
	struct open_write open[MAX_OPEN];
	int nopen;
	/* The pull connection (FIRST to LAST) and the hash (FIRST to LAST):
	 * one of each per server, owned by the connection that started it;
	 * the worker uses them, the loop only while no job runs. */
	struct rc_client *src;
	const void *pull_owner;
	int pull_region;
	bool src_close; /* its owner went while a job ran: close it after */
	struct rc_sha256 sha;
	uint64_t hashed;
	const void *hash_owner;
	int hash_region;
	bool hash_at_dst;
	/* The queue: jobs[head..head+njobs), jobs[head] runs when running. */
	struct job *jobs[MAX_JOBS];
	int head, njobs;
	bool running;
	/* The worker */
	struct ibv_pd *pd;
	const char *bind_addr, *dev_name;
	pthread_t th;
	bool th_up, quit;
	struct job *todo, *done;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int efd;
};

static bool moving(const struct mig_region *m)
{
	return m->state == MS_TRACKING || m->state == MS_FENCED;
}

static bool gone(const struct mig_region *m)
{
	return m->state == MS_CUT_OVER || m->state == MS_DROPPED;
}

/* Not moving any more: the read-only registration made for a fence goes. */
static void unready(struct mig_region *m)
{
	if (m->ro)
		ibv_dereg_mr(m->ro);
	m->ro = NULL;
}

static void mark(struct mig_region *m, uint64_t off, uint64_t len)
{
	if (!moving(m) || !m->dirty || !len)
		return;
	for (uint64_t b = off / RC_MIG_BLOCK; b <= (off + len - 1) / RC_MIG_BLOCK && b < m->nblocks;
	     b++)
		m->dirty[b] = 1;
}

/* Served here again, as before the move. */
static void serve_again(struct mig_region *m)
{
	m->state = MS_SERVING;
	m->move = 0;
	m->owner = NULL;
	m->moved_to[0] = 0;
	unready(m);
	free(m->dirty);
	m->dirty = NULL;
	m->nblocks = 0;
}

/* ---- the worker ---- */

/* What landed, digested per block. The final copy (read through the
 * fence's rkey) runs inside the blackout: its blocks are copied aside and
 * digested when the verification asks, after the cutover. */
static void pulled_sums(struct blk_sums *s, const struct job *j)
{
	for (uint32_t i = 0; i < j->n; i++) {
		const struct rc_extent *x = &j->ext[i];

		if (!(j->flags & RC_PULL_RKEY) || blk_sums_stash(s, j->mbuf, x->dst, x->len))
			blk_sums_update(s, j->mbuf, x->dst, x->len);
	}
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
	int rc = 0;

	if (j->type == RC_CTRL_PULL_REQ)
		rc = pull_run(st, j, &e);
	else if (j->flags & RC_HASH_BLOCKS)
		rc = blocks_run(st, j, &e);
	else
		hash_run(st, j);
	j->resp.status = rc;
	if (rc)
		snprintf(j->resp.msg, sizeof(j->resp.msg), "%.*s", RC_MIG_MSG_LEN - 1, e.msg);
}

static void *worker(void *arg)
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

/* ---- the state ---- */

static struct srv_mig *mig_new(const struct srv_mig_host *h)
{
	struct srv_mig *st = calloc(1, sizeof(*st));
	bool any;

	if (!st)
		return NULL;
	st->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (st->efd < 0) {
		free(st);
		return NULL;
	}
	any = !h->bind_addr || !*h->bind_addr || !strcmp(h->bind_addr, "0.0.0.0") ||
	      !strcmp(h->bind_addr, "::");
	st->pd = h->pd;
	st->bind_addr = any ? NULL : h->bind_addr;
	st->dev_name = h->dev_name;
	st->pull_region = st->hash_region = -1;
	pthread_mutex_init(&st->mu, NULL);
	pthread_cond_init(&st->cv, NULL);
	/* Without a thread the requests run on the loop, as they did. */
	st->th_up = SRV_MIG_THREADS && pthread_create(&st->th, NULL, worker, st) == 0;
	return st;
}

void srv_mig_free(struct srv_mig *st)
{
	if (!st)
		return;
	if (st->th_up) {
		pthread_mutex_lock(&st->mu);
		st->quit = true;
		pthread_cond_signal(&st->cv);
		pthread_mutex_unlock(&st->mu);
		pthread_join(st->th, NULL);
	}
	for (int i = 0; i < st->njobs; i++)
		free(st->jobs[(st->head + i) % MAX_JOBS]);
	rc_client_close(st->src);
	for (int i = 0; i < RC_MAX_REGIONS; i++) {
		unready(&st->reg[i]);
		free(st->reg[i].dirty);
		blk_sums_free(&st->reg[i].pulled);
		blk_sums_free(&st->reg[i].frozen);
	}
	pthread_mutex_destroy(&st->mu);
	pthread_cond_destroy(&st->cv);
	close(st->efd);
	free(st);
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

		if (m->owner != conn)
			continue;
		m->owner = NULL;
		if (m->state == MS_TRACKING ||
		    (m->state == MS_FENCED &&
		     !reregister(h, &h->regions[i], h->regions[i].d.access, NULL)))
			serve_again(m);
	}
	for (int i = 0; i < st->nopen; i++) {
		if (st->open[i].conn != conn)
			continue;
		/* It may have landed: count it written. */
		mark(&st->reg[st->open[i].region], st->open[i].off, st->open[i].len);
		st->open[i--] = st->open[--st->nopen];
	}
	/* Its requests get no answer; the one running finishes first. */
	for (int i = 0; i < st->njobs; i++) {
		struct job *j = st->jobs[(st->head + i) % MAX_JOBS];

		if (j->conn == conn)
			j->conn = NULL;
	}
	if (st->hash_owner == conn)
		st->hash_owner = NULL;
	if (st->pull_owner == conn) {
		st->pull_owner = NULL;
		if (st->running)
			st->src_close = true;
		else {
			rc_client_close(st->src);
			st->src = NULL;
		}
	}
}

static int region_index(const struct srv_mig_host *h, const char *name)
{
	for (int i = 0; i < h->nregions && i < RC_MAX_REGIONS; i++)
		if (!strcmp(h->regions[i].d.name, name))
			return i;
	return -1;
}

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

/* Swap the region's MR for one that allows access acc (a new rkey). */
static int reregister(const struct srv_mig_host *h, struct rc_region *r, enum rc_access acc,
		      struct rc_err *err)
{
	struct ibv_mr *mr;
	int rc = rc_mem_register(&r->mem, h->pd, rc_access_ibv(acc), &mr, err);

	if (rc)
		return rc;
	if (r->mr && (rc = ibv_dereg_mr(r->mr))) { /* its error, not errno */
		rc = rc_err_set(err, rc, "cannot deregister region '%s': %s", r->d.name,
				strerror(abs(rc)));
		ibv_dereg_mr(mr);
		return rc;
	}
	r->mr = mr;
	r->d.rkey = mr->rkey;
	return 0;
}

/* A cut over or dropped region is a destination again: memory (when it
 * was released) and a registration of its access. */
static int revive(const struct srv_mig_host *h, struct mig_region *m, struct rc_region *r,
		  struct rc_err *err)
{
	int rc;

	if (!r->mem.buf) {
		struct rc_mem_spec spec = { .kind = r->mem.kind, .len = r->d.length };

		rc = rc_mem_alloc_spec(&r->mem, &spec, r->d.access != RC_ACCESS_RO, err);
		if (rc)
			return rc;
	}
	rc = reregister(h, r, r->d.access, err);
	if (rc)
		return rc;
	r->d.addr = r->mem.mr_addr; /* new memory: the registration says where */
	serve_again(m);
	return 0;
}

/* The fence: serve through the read-only registration ro, revoke the other. */
static int fence_revoke(struct rc_region *r, struct ibv_mr *ro, struct rc_err *err)
{
	int rc;

	if (r->mr && (rc = ibv_dereg_mr(r->mr))) /* its error, not errno */
		return rc_err_set(err, rc, "cannot deregister region '%s': %s", r->d.name,
				  strerror(abs(rc)));
	r->mr = ro;
	r->d.rkey = ro->rkey;
	return 0;
}

static void unregister(struct rc_region *r)
{
	if (r->mr)
		ibv_dereg_mr(r->mr);
	r->mr = NULL;
	r->d.rkey = 0;
}

static uint32_t new_move_id(void)
{
	uint32_t id = 0;

	while (!id)
		if (getrandom(&id, sizeof(id), 0) != sizeof(id))
			id = (uint32_t)(rc_now() * 1e9);
	return id;
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
		x[r.n++] = (struct rc_extent){ .src = b * RC_MIG_BLOCK,
					       .dst = b * RC_MIG_BLOCK,
					       .len = (e - b) * RC_MIG_BLOCK };
		b = e;
	}
	for (; b < m->nblocks && !m->dirty[b]; b++)
		;
	r.flags = b == m->nblocks ? RC_MIG_LAST : 0;
	return rc_ctrl_encode_dirty(out, cap, seq, &r);
}

static const char *step_name(uint32_t s)
{
	static const char *n[] = { "?",       "TRACK", "TAKE",  "FENCE",  "UNFENCE",
				   "CUTOVER", "DROP",  "WHERE", "INTENT", "DONE" };

	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

/* The state a step of move c->move needs: the move owns the region, and it
 * is in one of the states of mask. */
static int owned(const struct mig_region *m, const struct rc_mig_cmd *c, unsigned mask,
		 struct rc_err *err)
{
	if (!(mask & (1u << m->state))) {
		if (gone(m))
			return rc_err_set(err, EINVAL, "region '%s' is %s (to %s): %s refused",
					  c->region, state_name[m->state], m->moved_to,
					  step_name(c->step));
		return rc_err_set(err, EINVAL, "region '%s' is %s: %s refused", c->region,
				  state_name[m->state], step_name(c->step));
	}
	if (!m->move || c->move != m->move)
		return rc_err_set(
			err, EPERM,
			"region '%s' is being moved by another migration (not move %u): %s refused",
			c->region, c->move, step_name(c->step));
	return 0;
}

#define IN(s) (1u << (s))

/* What each step's handler acts on: the region the command names, its
 * migration state, and the connection that sent it. */
struct step_ctx {
	struct srv_mig *st;
	const struct srv_mig_host *h;
	const void *conn;
	const struct rc_mig_cmd *c;
	struct rc_mig_resp *resp;
	int ri;
	struct mig_region *m;
	struct rc_region *r;
};

/* A client's notice: about to write [off, off+len). */
static int on_intent(const struct step_ctx *x, struct rc_err *err)
{
	struct srv_mig *st = x->st;

	if (x->r->d.access == RC_ACCESS_RO)
		return 0; /* nothing to record */
	if (st->nopen < MAX_OPEN)
		st->open[st->nopen++] = (struct open_write){ x->conn, x->ri, x->c->off, x->c->len };
	else
		mark(x->m, x->c->off, x->c->len); /* no room: count it written now */
	return 0;
}

/* A client's notice: that write has completed. */
static int on_done(const struct step_ctx *x, struct rc_err *err)
{
	struct srv_mig *st = x->st;

	for (int i = 0; i < st->nopen; i++) {
		struct open_write *o = &st->open[i];

		if (o->conn == x->conn && o->region == x->ri && o->off == x->c->off &&
		    o->len == x->c->len) {
			*o = st->open[--st->nopen];
			break;
		}
	}
	mark(x->m, x->c->off, x->c->len);
	return 0;
}

/* A client's question: where is the region? */
static int on_where(const struct step_ctx *x, struct rc_err *err)
{
	if (gone(x->m))
		snprintf(x->resp->msg, sizeof(x->resp->msg), "%s", x->m->moved_to);
	else if (x->m->state == MS_FENCED)
		return rc_err_set(err, EAGAIN, "region '%s' is being moved: ask again",
				  x->c->region);
	return 0;
}

/* Start recording the region's written blocks: a new move, owned by this
 * connection. */
static int on_track(const struct step_ctx *x, struct rc_err *err)
{
	struct mig_region *m = x->m;
	struct rc_region *r = x->r;
	const char *name = x->c->region;
	int rc;

	if (m->state != MS_SERVING)
		return rc_err_set(err, EBUSY, "region '%s' is %s%s%s: another move is refused",
				  name, state_name[m->state], gone(m) ? " to " : "",
				  gone(m) ? m->moved_to : "");
	if (x->st->pull_owner && x->st->pull_region == x->ri)
		return rc_err_set(err, EBUSY,
				  "region '%s' is being pulled into here: it cannot be moved away now",
				  name);
	if (r->mem.kind == RC_MEM_CUDA)
		return rc_err_set(err, ENOTSUP,
				  "region '%s' is GPU memory: it cannot be moved live", name);
	if (!r->mr)
		return rc_err_set(err, EINVAL, "region '%s' is not registered here", name);
	free(m->dirty);
	m->nblocks = (r->d.length + RC_MIG_BLOCK - 1) / RC_MIG_BLOCK;
	m->dirty = calloc(m->nblocks ? m->nblocks : 1, 1);
	if (!m->dirty)
		return rc_err_set(err, ENOMEM, "out of memory");
	/* The read-only registration is made now, so that the fence, in the
	 * blackout, only has to revoke the old one. */
	if (!m->ro) {
		rc = rc_mem_register(&r->mem, x->h->pd, rc_access_ibv(RC_ACCESS_RO), &m->ro, err);
		if (rc) {
			free(m->dirty);
			m->dirty = NULL;
			return rc;
		}
	}
	m->state = MS_TRACKING;
	m->move = new_move_id();
	m->owner = x->conn;
	x->resp->bytes = m->move;
	return 0;
}

/* Reads go on; writes and atomics now fail with a remote access error, so
 * their clients know they did not happen. */
static int on_fence(const struct step_ctx *x, struct rc_err *err)
{
	struct mig_region *m = x->m;
	struct rc_region *r = x->r;
	int rc;

	if ((rc = owned(m, x->c, IN(MS_TRACKING), err)))
		return rc;
	rc = m->ro ? fence_revoke(r, m->ro, err) : reregister(x->h, r, RC_ACCESS_RO, err);
	if (rc)
		return rc;
	m->ro = NULL;
	m->state = MS_FENCED;
	/* Every notice that came in before the revocation is in a queue: the
	 * other connections' (this one's own came before its FENCE). */
	if (x->h->drain_all)
		x->h->drain_all(x->h->arg, x->conn);
	/* A write announced and not done yet may have landed before the
	 * revocation: it counts as written. */
	for (int i = 0; i < x->st->nopen; i++)
		if (x->st->open[i].region == x->ri)
			mark(m, x->st->open[i].off, x->st->open[i].len);
	x->resp->bytes = r->d.rkey;
	return 0;
}

/* Abort: serve the region again, stop recording. */
static int on_unfence(const struct step_ctx *x, struct rc_err *err)
{
	int rc;

	if ((rc = owned(x->m, x->c, IN(MS_TRACKING) | IN(MS_FENCED), err)))
		return rc;
	if (x->m->state == MS_FENCED && (rc = reregister(x->h, x->r, x->r->d.access, err)))
		return rc;
	serve_again(x->m);
	return 0;
}

/* The region lives at c->arg now. From now on every access fails here,
 * reads too (a kept copy is frozen, stale as soon as the new home takes a
 * write): the client asks WHERE and follows. */
static int on_cutover(const struct step_ctx *x, struct rc_err *err)
{
	int rc;

	if ((rc = owned(x->m, x->c, IN(MS_FENCED), err)))
		return rc;
	if (!x->c->arg[0])
		return rc_err_set(err, EINVAL, "a cutover names the region's new home");
	unregister(x->r);
	x->m->state = MS_CUT_OVER;
	snprintf(x->m->moved_to, sizeof(x->m->moved_to), "%s", x->c->arg);
	return 0;
}

/* The destination confirmed: the region's memory goes. */
static int on_drop(const struct step_ctx *x, struct rc_err *err)
{
	struct mig_region *m = x->m;
	int rc;

	if ((rc = owned(m, x->c, IN(MS_CUT_OVER), err)))
		return rc;
	if (m->busy)
		return rc_err_set(err, EBUSY, "region '%s' has requests running: drop it later",
				  x->c->region);
	unregister(x->r);
	if (x->r->mem.kind != RC_MEM_FILE)
		rc_mem_free(&x->r->mem);
	m->state = MS_DROPPED;
	m->move = 0;
	m->owner = NULL;
	free(m->dirty);
	m->dirty = NULL;
	blk_sums_free(&m->frozen); /* no request runs on it (busy) */
	return 0;
}

/* The steps a connection may send: a client's notices and question are
 * for everyone who may connect; the rest need the admin token. */
static const struct {
	int (*fn)(const struct step_ctx *x, struct rc_err *err);
	bool admin;
} steps[] = {
	[RC_MIG_INTENT] = { on_intent, false },  [RC_MIG_DONE] = { on_done, false },
	[RC_MIG_WHERE] = { on_where, false },    [RC_MIG_TRACK] = { on_track, true },
	[RC_MIG_FENCE] = { on_fence, true },     [RC_MIG_UNFENCE] = { on_unfence, true },
	[RC_MIG_CUTOVER] = { on_cutover, true }, [RC_MIG_DROP] = { on_drop, true },
};

static int step(struct srv_mig *st, const struct srv_mig_host *h, const void *conn, bool admin,
		const struct rc_mig_cmd *c, struct rc_mig_resp *resp, struct rc_err *err)
{
	struct step_ctx x = { .st = st, .h = h, .conn = conn, .c = c, .resp = resp };
	bool known = c->step < sizeof(steps) / sizeof(steps[0]) && steps[c->step].fn;

	x.ri = region_index(h, c->region);
	if (x.ri < 0)
		return rc_err_set(err, ENOENT, "no region named '%s' is served here", c->region);
	x.m = &st->reg[x.ri];
	x.r = &h->regions[x.ri];
	if ((!known || steps[c->step].admin) && !admin)
		return rc_err_set(
			err, EPERM,
			"migration steps need the server's admin token (migrate --admin-token-file): %s refused",
			step_name(c->step));
	if (!known)
		return rc_err_set(err, EINVAL, "unknown migration step %u", c->step);
	return steps[c->step].fn(&x, err);
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
	int ri = region_index(h, r->dst_region), rc;
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
				  r->dst_region, state_name[m->state]);
	if (r->flags & RC_MIG_FIRST) {
		if (st->pull_owner && st->pull_owner != conn)
			return rc_err_set(err, EBUSY,
					  "another migration pulls into this server now");
		if (gone(m) && m->busy)
			return rc_err_set(err, EBUSY, "region '%s' has requests running",
					  r->dst_region);
		/* A move back: the region is served here again, and filled. */
		if (gone(m) && (rc = revive(h, m, dst, err)))
			return rc;
		st->pull_owner = conn;
		st->pull_region = ri;
	} else if (st->pull_owner != conn || st->pull_region != ri) {
		return rc_err_set(err, ENOTCONN, "a pull must start with RC_MIG_FIRST");
	}
	if (!dst->mr)
		return rc_err_set(err, EINVAL, "region '%s' is not registered here", r->dst_region);
	if ((r->flags & RC_PULL_DIGEST) && dst->mem.kind == RC_MEM_CUDA)
		return rc_err_set(
			err, ENOTSUP,
			"region '%s' is GPU memory here: its blocks cannot be digested as they land (move it with --no-verify)",
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
				  r->region, state_name[m->state],
				  at_dst ? "as pulled here" : "(its copy is not frozen)");
	return 0;
}

static int hash(struct srv_mig *st, const struct srv_mig_host *h, const void *conn,
		const struct rc_hash_req *r, struct job *j, struct rc_err *err)
{
	int ri = region_index(h, r->region), rc;
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
				  state_name[m->state], m->moved_to);
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

int srv_mig_handle(struct srv_mig **stp, const struct srv_mig_host *h, const void *conn, bool admin,
		   int slot, const void *msg, size_t len, void *out, size_t cap)
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
		st = mig_new(h);
		if (!st) {
			resp.status = -ENOMEM;
			snprintf(resp.msg, sizeof(resp.msg), "out of memory");
			return rc_ctrl_encode_mig_resp(out, cap, hdr.seq, &resp);
		}
		*stp = st;
	}
	if (hdr.type == RC_CTRL_PULL_REQ || hdr.type == RC_CTRL_HASH_REQ) {
		struct job *j = calloc(1, sizeof(*j));

		if (!j) {
			rc = rc_err_set(&e, ENOMEM, "out of memory");
		} else if (!admin) {
			rc = rc_err_set(
				&e, EPERM,
				"%s needs the server's admin token (migrate --admin-token-file)",
				hdr.type == RC_CTRL_PULL_REQ ? "a pull" : "a hash");
		} else if (hdr.type == RC_CTRL_PULL_REQ) {
			struct rc_pull_req r = { .ext = j->ext };

			rc = rc_ctrl_decode_pull(msg, len, &r, RC_PULL_MAX_EXT);
			rc = rc ? rc_err_set(&e, EBADMSG, "a malformed pull request")
				: pull(st, h, conn, &r, j, &e);
			j->flags = r.flags;
			j->n = r.n;
		} else {
			struct rc_hash_req r = { .ext = j->ext };

			rc = rc_ctrl_decode_hash(msg, len, &r, RC_HASH_MAX_EXT);
			rc = rc ? rc_err_set(&e, EBADMSG, "a malformed hash request")
				: hash(st, h, conn, &r, j, &e);
			j->flags = r.flags;
			j->n = r.n;
		}
		if (!rc) {
			j->conn = conn;
			j->slot = slot;
			j->seq = hdr.seq;
			j->type = hdr.type;
			rc = job_queue(st, j, &e);
			if (rc == SRV_MIG_LATER)
				return rc;
		} else {
			free(j);
		}
	} else {
		struct rc_mig_cmd c;

		rc = rc_ctrl_decode_mig_cmd(msg, len, &c);
		if (rc) {
			rc = rc_err_set(&e, EBADMSG, "a malformed migration step");
		} else if (c.step == RC_MIG_TAKE) {
			int ri = region_index(h, c.region);

			if (ri < 0)
				rc = rc_err_set(&e, ENOENT, "no region named '%s' is served here",
						c.region);
			else if (!admin)
				rc = rc_err_set(
					&e, EPERM,
					"migration steps need the server's admin token (migrate --admin-token-file): TAKE refused");
			else if (!(rc = owned(&st->reg[ri], &c, IN(MS_TRACKING) | IN(MS_FENCED), &e)))
				return take(&st->reg[ri], out, cap, hdr.seq);
		} else {
			rc = step(st, h, conn, admin, &c, &resp, &e);
			if (c.step == RC_MIG_INTENT || c.step == RC_MIG_DONE)
				return 0; /* notices get no answer */
		}
	}
	resp.status = rc;
	if (rc)
		snprintf(resp.msg, sizeof(resp.msg), "%.*s", RC_MIG_MSG_LEN - 1, e.msg);
	rc = rc_ctrl_encode_mig_resp(out, cap, hdr.seq, &resp);
	return rc < 0 ? 0 : rc;
}
