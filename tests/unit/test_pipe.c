// SPDX-License-Identifier: MIT
/* The pipelining engine (verbs/pipe.c) behind a fake transport that only
 * records what is posted and completes what was signalled: the window, the
 * signalling policy (one in signal_every, the last, the one that fills the
 * window), posting in batches, the completion accounting (modulo 2^32, a
 * stale value ignored) and gather lists copied. No data moves here: the
 * engine's data paths are tested on rxe. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdmactl/ops.h>
#include <rdmactl/pipe_core.h>

#include "check.h"

#define LOG_MAX 256

struct fake {
	int posts;  /* post calls */
	int last_n; /* work requests in the last one */
	int n;      /* work requests posted */
	struct rc_wr wr[LOG_MAX];
	uint64_t sg0[LOG_MAX]; /* the first gather entry's address, as posted */
	int sq_depth;
	int fail_post; /* post returns -EIO */
};

static int f_post(void *ep, const struct rc_wr *wr, int n, struct rc_err *err)
{
	struct fake *f = ep;

	if (f->fail_post)
		return rc_err_set(err, EIO, "post failed");
	f->posts++;
	f->last_n = n;
	for (int i = 0; i < n && f->n < LOG_MAX; i++, f->n++) {
		f->wr[f->n] = wr[i];
		f->sg0[f->n] = wr[i].sg ? wr[i].sg[0].addr : 0;
	}
	return n;
}

static int polled; /* the next posted work request poll looks at */

/* Completes the signalled work requests posted and not yet seen, in order. */
static int f_poll(void *const *eps, int n, struct rc_cqe *cqe, int max, int timeout_ms, int *which,
		  struct rc_err *err)
{
	struct fake *f = eps[0];
	int got = 0;

	(void)n;
	(void)timeout_ms;
	for (; polled < f->n && got < max; polled++)
		if (f->wr[polled].signaled)
			cqe[got++] = (struct rc_cqe){ .user = f->wr[polled].user,
						      .op = f->wr[polled].op };
	if (which)
		*which = 0;
	return got ? got : rc_err_set(err, ETIMEDOUT, "nothing to complete");
}

static int f_sq_depth(const void *ep)
{
	return ((const struct fake *)ep)->sq_depth;
}

static const struct rc_transport fake_tp = { .name = "fake",
					     .post = f_post,
					     .poll = f_poll,
					     .sq_depth = f_sq_depth };

static int add(struct rc_pipe *p, bool last)
{
	struct rc_wr w = { .op = RC_OP_WRITE, .len = 8, .user = rc_pipe_seq(p) };

	return rc_pipe_add(p, &w, last, NULL);
}

/* One in 4 signalled and the last; posted in lists of 8, then the rest. */
static void signal_every_and_last(void)
{
	struct fake f = { .sq_depth = 64 };
	struct rc_pipe p;
	struct rc_pipe_opts o = { .depth = 16, .signal_every = 4, .batch = 8 };

	rc_pipe_init(&p, &fake_tp, &f, &o);
	for (int i = 0; i < 10; i++)
		CHECK(add(&p, i == 9) == 0);
	CHECK_EQ_U64(f.posts, 1); /* the first 8 went when the batch filled */
	CHECK_EQ_U64(f.last_n, 8);
	CHECK_EQ_U64(rc_pipe_flush(&p, NULL), 2);
	CHECK_EQ_U64(f.n, 10);
	for (int i = 0; i < 10; i++)
		CHECK_EQ_U64(f.wr[i].signaled, i == 3 || i == 7 || i == 9);
	CHECK_EQ_U64(p.sq.signaled, 10);
	CHECK_EQ_U64(rc_pipe_flush(&p, NULL), 0); /* nothing pending */
}

/* The window: depth caps what is outstanding (and the endpoint's send queue
 * caps depth); the work request that fills it is signalled, so a window of
 * unsignalled ones cannot stall; a completion opens it again. */
static void window(void)
{
	struct fake f = { .sq_depth = 6 };
	struct rc_pipe p;
	struct rc_pipe_opts o = { .depth = 100, .signal_every = 4, .batch = 32 };
	struct rc_wr extra = { .op = RC_OP_WRITE };

	rc_pipe_init(&p, &fake_tp, &f, &o);
	CHECK_EQ_U64(p.sq.depth, 6);
	for (int i = 0; i < 6; i++)
		CHECK(add(&p, false) == 0);
	CHECK(!rc_pipe_room(&p, 0));
	CHECK(rc_pipe_add(&p, &extra, false, NULL) == -ENOSPC);
	CHECK_EQ_U64(rc_pipe_flush(&p, NULL), 6);
	CHECK(f.wr[3].signaled && f.wr[5].signaled);
	CHECK(!f.wr[4].signaled && !f.wr[0].signaled);
	CHECK_EQ_U64(rc_pipe_outstanding(&p), 6);
	/* seq 3's completion: 0..3 done, two still out */
	uint64_t from = 99;

	CHECK_EQ_U64(rc_pipe_complete(&p, 3, &from), 4);
	CHECK_EQ_U64(from, 0);
	CHECK_EQ_U64(rc_pipe_outstanding(&p), 2);
	CHECK(rc_pipe_room(&p, 0));
	/* a stale value (already done) and a foreign one complete nothing */
	CHECK_EQ_U64(rc_pipe_complete(&p, 2, NULL), 4);
	CHECK_EQ_U64(rc_pipe_complete(&p, 77, NULL), 4);
	CHECK_EQ_U64(rc_pipe_complete(&p, 5, NULL), 6);
	CHECK_EQ_U64(p.ops, 6);
	/* a failed peer: nothing outstanding any more */
	CHECK(add(&p, false) == 0);
	rc_pipe_abandon(&p);
	CHECK_EQ_U64(rc_pipe_outstanding(&p), 0);
	CHECK_EQ_U64(rc_pipe_flush(&p, NULL), 0);
}

/* signal_every < 1: every work request signalled; the sequence number is
 * the low 32 bits of user, so it wraps at 2^32 (kvxfer keeps 32 bits). */
static void every_one_and_wrap(void)
{
	struct fake f = { .sq_depth = 0 };
	struct rc_pipe p;
	struct rc_pipe_opts o = { .depth = 8, .signal_every = 0, .batch = 1 };

	rc_pipe_init(&p, &fake_tp, &f, &o);
	p.sq.posted = p.sq.done = p.sq.signaled = 0xfffffffeULL;
	for (int i = 0; i < 4; i++)
		CHECK(add(&p, false) == 0);
	CHECK_EQ_U64(f.posts, 4); /* a batch of one: each posted at once */
	for (int i = 0; i < 4; i++)
		CHECK(f.wr[i].signaled);
	/* seq 0x100000001 is carried as user 0x100000001; its low 32 bits, 1 */
	CHECK_EQ_U64(rc_pipe_complete(&p, 1 | (1ULL << 40), NULL), 0x100000002ULL);
	CHECK_EQ_U64(rc_pipe_outstanding(&p), 0);
}

/* A gather list is copied when added (the caller may free it), and one that
 * does not fit beside those pending sends them first. */
static void gather(void)
{
	static struct rc_sg big[RC_CHAIN_GATHER - 1];
	struct fake f = { .sq_depth = 64 };
	struct rc_pipe p;
	struct rc_pipe_opts o = { .depth = 64, .signal_every = 16, .batch = 32 };
	struct rc_sg two[2] = { { 0x1000, 8 }, { 0x2000, 8 } };
	struct rc_wr w = { .op = RC_OP_WRITE, .len = 16, .sg = two, .nsg = 2 };

	rc_pipe_init(&p, &fake_tp, &f, &o);
	CHECK(rc_pipe_add(&p, &w, false, NULL) == 0);
	two[0].addr = 0xdead;
	big[0].addr = 0x3000;
	w = (struct rc_wr){ .op = RC_OP_WRITE, .sg = big, .nsg = RC_CHAIN_GATHER - 1 };
	CHECK(rc_pipe_add(&p, &w, false, NULL) == 0);
	CHECK_EQ_U64(f.posts, 1); /* the first went alone, the big one waits */
	CHECK_EQ_U64(f.sg0[0], 0x1000);
	CHECK_EQ_U64(rc_pipe_flush(&p, NULL), 1);
	CHECK_EQ_U64(f.sg0[1], 0x3000);
	CHECK(!rc_pipe_room(&p, RC_CHAIN_GATHER + 1));
}

/* rc_pipe_drain posts what is pending and reaps until nothing is out; a
 * failed post is returned. */
static void drain(void)
{
	struct fake f = { .sq_depth = 64 };
	struct rc_pipe p;
	struct rc_pipe_opts o = { .depth = 32, .signal_every = 8, .batch = 32 };

	polled = 0;
	rc_pipe_init(&p, &fake_tp, &f, &o);
	for (int i = 0; i < 20; i++)
		CHECK(add(&p, i == 19) == 0);
	CHECK_EQ_U64(f.n, 0);
	CHECK(rc_pipe_drain(&p, 10, NULL) == 0);
	CHECK_EQ_U64(f.n, 20);
	CHECK_EQ_U64(rc_pipe_outstanding(&p), 0);
	CHECK_EQ_U64(p.ops, 20);
	f.fail_post = 1;
	CHECK(add(&p, false) == 0);
	CHECK(rc_pipe_drain(&p, 10, NULL) == -EIO);
}

/* perftest's BW peak, by hand: four operations posted at 0, 1, 2 and 3 s;
 * they complete at 2, 2.5, 10 and 10 s (a stall). The best run is 0..1:
 * 2.5 s for 2, 1.25 s each; the whole run, 10 s for 4, is 2.5 s each; the
 * fastest single operation takes 1.5 s. A single fast operation (its own
 * post to completion) counts too. */
static void peak(void)
{
	double tp[4] = { 0, 1, 2, 3 }, tc[4] = { 2, 2.5, 10, 10 };
	double fast[3] = { 0, 0.1, 5 }, fastc[3] = { 5, 0.15, 6 };

	CHECK(rc_peak_op_seconds(tp, tc, 4) == 1.25);
	/* not the whole run's average (2.5), nor the fastest single operation (1.5) */
	CHECK(rc_peak_op_seconds(tp, tc, 4) != 2.5 && rc_peak_op_seconds(tp, tc, 4) != 1.5);
	CHECK(rc_peak_op_seconds(fast, fastc, 3) > 0.049 &&
	      rc_peak_op_seconds(fast, fastc, 3) < 0.051);
	CHECK(rc_peak_op_seconds(tp, tc, 0) == 0);
	/* even: every run of k takes k s, so the peak is the average */
	double ep[6], ec[6];

	for (int i = 0; i < 6; i++) {
		ep[i] = i;
		ec[i] = i + 1;
	}
	CHECK(rc_peak_op_seconds(ep, ec, 6) == 1.0);
}

int main(void)
{
	peak();
	signal_every_and_last();
	window();
	every_one_and_wrap();
	gather();
	drain();
	CHECK_DONE();
}
