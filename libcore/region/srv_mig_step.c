// SPDX-License-Identifier: MIT
/*
 * A region's migration state and the steps of a live move (RC_CTRL_MIG_CMD)
 * that are checked against it: the client's notices (INTENT, DONE) and
 * question (WHERE), TRACK, TAKE, FENCE, UNFENCE, CUTOVER and DROP, with the
 * registrations they swap. The state diagram is in srv_mig.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "srv_mig_int.h"
#include <rdmactl/mem_core.h>
#include <rdmactl/ctrl_core.h>

const char *const mig_state_name[] = { "served here", "being moved (tracking its writes)",
				       "being moved (fenced)", "cut over", "dropped" };

/* Not moving any more: the read-only registration made for a fence goes. */
void mig_unready(struct mig_region *m)
{
	if (m->ro)
		ibv_dereg_mr(m->ro);
	m->ro = NULL;
}

void mig_mark(struct mig_region *m, uint64_t off, uint64_t len)
{
	if (!moving(m) || !m->dirty || !len)
		return;
	for (uint64_t b = off / RC_MIG_BLOCK; b <= (off + len - 1) / RC_MIG_BLOCK && b < m->nblocks;
	     b++)
		m->dirty[b] = 1;
}

/* Served here again, as before the move. */
void mig_serve_again(struct mig_region *m)
{
	m->state = MS_SERVING;
	m->move = 0;
	m->owner = NULL;
	m->moved_to[0] = 0;
	mig_unready(m);
	free(m->dirty);
	m->dirty = NULL;
	m->nblocks = 0;
}

int mig_region_index(const struct srv_mig_host *h, const char *name)
{
	for (int i = 0; i < h->nregions && i < RC_MAX_REGIONS; i++)
		if (!strcmp(h->regions[i].d.name, name))
			return i;
	return -1;
}

/* Swap the region's MR for one that allows access acc (a new rkey). */
int mig_reregister(const struct srv_mig_host *h, struct rc_region *r, enum rc_access acc,
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
int mig_revive(const struct srv_mig_host *h, struct mig_region *m, struct rc_region *r,
	       struct rc_err *err)
{
	int rc;

	if (!r->mem.buf) {
		struct rc_mem_spec spec = { .kind = r->mem.kind, .len = r->d.length };

		rc = rc_mem_alloc_spec(&r->mem, &spec, r->d.access != RC_ACCESS_RO, err);
		if (rc)
			return rc;
	}
	rc = mig_reregister(h, r, r->d.access, err);
	if (rc)
		return rc;
	r->d.addr = r->mem.mr_addr; /* new memory: the registration says where */
	mig_serve_again(m);
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

int mig_take(struct mig_region *m, void *out, size_t cap, uint32_t seq)
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
int mig_owned(const struct mig_region *m, const struct rc_mig_cmd *c, unsigned mask,
	      struct rc_err *err)
{
	if (!(mask & (1u << m->state))) {
		if (gone(m))
			return rc_err_set(err, EINVAL, "region '%s' is %s (to %s): %s refused",
					  c->region, mig_state_name[m->state], m->moved_to,
					  step_name(c->step));
		return rc_err_set(err, EINVAL, "region '%s' is %s: %s refused", c->region,
				  mig_state_name[m->state], step_name(c->step));
	}
	if (!m->move || c->move != m->move)
		return rc_err_set(
			err, EPERM,
			"region '%s' is being moved by another migration (not move %u): %s refused",
			c->region, c->move, step_name(c->step));
	return 0;
}

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
		mig_mark(x->m, x->c->off, x->c->len); /* no room: count it written now */
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
	mig_mark(x->m, x->c->off, x->c->len);
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
				  name, mig_state_name[m->state], gone(m) ? " to " : "",
				  gone(m) ? m->moved_to : "");
	if (x->st->pull_owner && x->st->pull_region == x->ri)
		return rc_err_set(err, EBUSY,
				  "region '%s' is being pulled into here: it cannot be moved away now",
				  name);
	if (r->mem.kind == RC_MEM_CUDA)
		return rc_err_set(err, ENOTSUP,
				  "region '%s' is GPU memory: it cannot be moved live", name);
	/* Its other rails (servers of their own) would go on serving, and
	 * registering, the memory this move drops. */
	if (r->shared || r->rails > 1)
		return rc_err_set(err, ENOTSUP,
				  "region '%s' is served on several rails (%d devices register "
				  "its memory): it cannot be moved live, its rails would not move "
				  "together",
				  name, r->rails > 1 ? r->rails : 2);
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

	if ((rc = mig_owned(m, x->c, IN(MS_TRACKING), err)))
		return rc;
	rc = m->ro ? fence_revoke(r, m->ro, err) : mig_reregister(x->h, r, RC_ACCESS_RO, err);
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
			mig_mark(m, x->st->open[i].off, x->st->open[i].len);
	x->resp->bytes = r->d.rkey;
	return 0;
}

/* Abort: serve the region again, stop recording. */
static int on_unfence(const struct step_ctx *x, struct rc_err *err)
{
	int rc;

	if ((rc = mig_owned(x->m, x->c, IN(MS_TRACKING) | IN(MS_FENCED), err)))
		return rc;
	if (x->m->state == MS_FENCED && (rc = mig_reregister(x->h, x->r, x->r->d.access, err)))
		return rc;
	mig_serve_again(x->m);
	return 0;
}

/* The region lives at c->arg now. From now on every access fails here,
 * reads too (a kept copy is frozen, stale as soon as the new home takes a
 * write): the client asks WHERE and follows. */
static int on_cutover(const struct step_ctx *x, struct rc_err *err)
{
	int rc;

	if ((rc = mig_owned(x->m, x->c, IN(MS_FENCED), err)))
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

	if ((rc = mig_owned(m, x->c, IN(MS_CUT_OVER), err)))
		return rc;
	if (m->busy)
		return rc_err_set(err, EBUSY, "region '%s' has requests running: drop it later",
				  x->c->region);
	unregister(x->r);
	/* Never memory that another rail registers still (TRACK refuses such a
	 * region: this is a second lock). */
	if (x->r->mem.kind != RC_MEM_FILE && !x->r->shared && x->r->rails < 2)
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

int mig_run_step(struct srv_mig *st, const struct srv_mig_host *h, const void *conn, bool admin,
		 const struct rc_mig_cmd *c, struct rc_mig_resp *resp, struct rc_err *err)
{
	struct step_ctx x = { .st = st, .h = h, .conn = conn, .c = c, .resp = resp };
	bool known = c->step < sizeof(steps) / sizeof(steps[0]) && steps[c->step].fn;

	x.ri = mig_region_index(h, c->region);
	if (x.ri < 0)
		return rc_err_set(err, ENOENT, "no region named '%s' is served here", c->region);
	x.m = &st->reg[x.ri];
	x.r = &h->regions[x.ri];
	if ((!known || steps[c->step].admin) && !admin)
		return rc_err_opt(
			err, EPERM,
			"migration steps need the server's admin token (migrate {admin_token_file}): %s refused",
			step_name(c->step));
	if (!known)
		return rc_err_set(err, EINVAL, "unknown migration step %u", c->step);
	return steps[c->step].fn(&x, err);
}
