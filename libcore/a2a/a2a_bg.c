// SPDX-License-Identifier: MIT
/*
 * alltoall's background: bulk WRITEs from this rank into its peer
 * (rc_a2a_bg_peer) over a group of their own, on a thread of their own,
 * while the loaded iterations run. The group's burst engine (the one
 * sweep's bandwidth posts through) keeps bg_depth WRITEs outstanding until
 * it is told to stop. The background's group shares nothing with the
 * exchange's, so the thread touches only it.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ops.h>
#include <rdmactl/err_core.h>
#include <rdmactl/pipe_core.h>
#include <rdmactl/group_core.h>

#include "a2a_int.h"

#define BG_SLICE 1.0 /* seconds of a burst, unless a stop ends it first */

const char *rc_a2a_bg_name(int mode)
{
	static const char *const names[] = { "none", "pairs" };

	return mode >= RC_A2A_BG_NONE && mode <= RC_A2A_BG_PAIRS ? names[mode] : NULL;
}

int rc_a2a_bg_peer(int mode, int world, int rank)
{
	int h = world / 2;

	if (mode != RC_A2A_BG_PAIRS || rank < 0 || rank >= 2 * h)
		return -1;
	return rank < h ? rank + h : rank - h;
}

struct bg_addr {
	uint64_t addr;
	uint32_t rkey;
	uint32_t pad;
};

int a2a_bg_setup(struct a2a_bg *b, const struct rc_a2a_opts *o, struct rc_err *err)
{
	int W = rc_group_world(o->bg), me = rc_group_rank(o->bg);
	struct bg_addr mine = { 0 }, *theirs = calloc((size_t)W, sizeof(*theirs));
	int rc;

	*b = (struct a2a_bg){ .g = o->bg, .o = o, .peer = rc_a2a_bg_peer(o->bg_mode, W, me) };
	if (!theirs)
		return rc_err_set(err, ENOMEM, "out of memory");
	if (o->bg_size < 1 || o->bg_depth < 1) {
		free(theirs);
		return rc_err_set(err, EINVAL, "background WRITEs of %u bytes, %d deep", o->bg_size,
				  o->bg_depth);
	}
	if (posix_memalign(&b->buf, 4096, o->bg_size)) {
		free(theirs);
		return rc_err_set(err, ENOMEM, "out of memory");
	}
	memset(b->buf, 0x5a, o->bg_size);
	b->mr = ibv_reg_mr(rc_group_pd(b->g), b->buf, o->bg_size,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!b->mr) {
		rc = rc_err_set(err, errno ? errno : EIO,
				"cannot register %u bytes of background buffer", o->bg_size);
		free(theirs);
		return rc;
	}
	mine.addr = (uintptr_t)b->buf;
	mine.rkey = b->mr->rkey;
	/* the peer learns where to write */
	if (!(rc = rc_group_exchange(b->g, &mine, sizeof(mine), theirs, err)) && b->peer >= 0) {
		b->raddr = theirs[b->peer].addr;
		b->rkey = theirs[b->peer].rkey;
	}
	free(theirs);
	return rc;
}

/* A burst's own, for its note: the stop heard as writes complete ends the
 * burst at once (until 0), not at its slice's end, so that the queue the
 * bulk keeps full never drains between slices. */
struct bg_burst {
	struct rc_group_burst w;
	struct a2a_bg *b;
};

static void bg_note(void *arg, uint64_t done, double now)
{
	struct bg_burst *x = arg;

	(void)done;
	(void)now;
	if (atomic_load(&x->b->stop))
		x->w.until = 0;
}

static void *bg_main(void *arg)
{
	struct a2a_bg *b = arg;
	const struct rc_a2a_opts *o = b->o;
	double t0 = rc_now();

	while (!atomic_load(&b->stop) && !b->rc) {
		struct bg_burst x = { .w = { .laddr = b->buf,
					     .len = o->bg_size,
					     .lkey = b->mr->lkey,
					     .raddr = b->raddr,
					     .rkey = b->rkey,
					     .until = rc_now() + BG_SLICE,
					     .depth = o->bg_depth,
					     .signal_every = RC_PIPE_SIGNAL_EVERY,
					     .note = bg_note },
				      .b = b };
		uint64_t posted = 0;

		x.w.note_arg = &x;
		b->rc = rc_group_write_burst(b->g, b->peer, &x.w, &posted, &b->err);
		b->bytes += posted * o->bg_size;
	}
	b->seconds = rc_now() - t0;
	return NULL;
}

int a2a_bg_start(struct a2a_bg *b, struct rc_err *err)
{
	int e;

	atomic_store(&b->stop, false);
	if (b->peer < 0)
		return 0;
	if ((e = pthread_create(&b->thread, NULL, bg_main, b)))
		return rc_err_set(err, e, "cannot start the background's thread: %s", strerror(e));
	b->running = true;
	return 0;
}

int a2a_bg_stop(struct a2a_bg *b, struct rc_err *err)
{
	atomic_store(&b->stop, true);
	if (!b->running)
		return 0;
	pthread_join(b->thread, NULL);
	b->running = false;
	if (b->rc && err)
		*err = b->err;
	if (b->rc)
		return rc_err_wrap(err, 0, "background WRITEs to rank %d", b->peer);
	return 0;
}

void a2a_bg_free(struct a2a_bg *b)
{
	if (b->mr)
		ibv_dereg_mr(b->mr);
	free(b->buf);
	b->mr = NULL;
	b->buf = NULL;
}
