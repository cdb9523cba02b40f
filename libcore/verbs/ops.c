// SPDX-License-Identifier: MIT
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ops.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/pipe_core.h>

#define MAX_BATCH RC_PIPE_BATCH
#define POLL_BATCH 64

struct slot {
	uint64_t off;
	uint64_t k; /* the piece's number */
	size_t len;
	struct rc_stamp t; /* latencies: before the post */
	double tp;         /* posted_s: when it was posted */
};

struct engine;

struct qstate {
	struct engine *e;
	uint64_t next_k; /* its next piece: pieces go round-robin, k % nconns */
	bool more;       /* pieces left for this queue */
	struct slot *slots;
};

struct engine {
	const struct rc_stream *s;
	struct qstate *q;
	struct rc_pipe *p; /* the engine's queue per connection: window, signalling */
	uint64_t span;     /* bench: bytes cycled over */
	int sig_every;
	int depth;
	uint64_t bytes;
	uint64_t ops;
	uint64_t moved;        /* latencies left out: their ends on two CPUs */
	struct rc_lat_clk clk; /* latencies: what times them */
};

/* The transport and endpoint i of s: verbs over its connections, or its own. */
static const struct rc_transport *tp_of(const struct rc_stream *s)
{
	return s->tp ? s->tp : &rc_verbs_transport;
}

static void *ep_of(const struct rc_stream *s, int i)
{
	return s->tp ? s->eps[i] : (void *)s->conns[i];
}

static void *slot_buf(const struct engine *e, int qi, uint64_t seq)
{
	if (e->s->one_buffer)
		return e->s->buf;
	size_t idx = (size_t)qi * (size_t)e->depth + (size_t)(seq % (uint64_t)e->depth);

	return (char *)e->s->buf + idx * e->s->chunk;
}

/* Make the next piece for queue qi; returns 1 made, 0 none left, -errno. */
static int make_piece(struct engine *e, int qi, struct slot *sl, struct rc_err *err)
{
	const struct rc_stream *s = e->s;
	struct qstate *q = &e->q[qi];
	uint64_t off;
	size_t len = s->chunk;

	if (s->iters) {
		if (q->next_k >= s->iters)
			return 0;
		off = (q->next_k * s->chunk) % e->span;
	} else {
		off = q->next_k * s->chunk;
		if (off >= s->total)
			return 0;
		if (s->total - off < len)
			len = (size_t)(s->total - off);
	}
	if (s->fill) {
		ssize_t got = s->fill(s->arg, off, slot_buf(e, qi, rc_pipe_seq(&e->p[qi])), len);

		if (got < 0)
			return rc_err_set(err, (int)-got, "reading the input failed: %s",
					  strerror((int)-got));
		if (got == 0)
			return 0;
		if ((size_t)got < len)
			q->more = false; /* the input ended inside this piece */
		len = (size_t)got;
	}
	sl->off = off;
	sl->len = len;
	sl->k = q->next_k;
	q->next_k += (uint64_t)s->nconns;
	return 1;
}

/* A latency runs from just before the post, as perftest's does: one clock
 * read for the list, and building it is not timed; so does a post time. */
static void stamp_posts(void *arg, uint64_t seq, int n)
{
	struct qstate *q = arg;
	const struct rc_stream *s = q->e->s;
	struct rc_stamp t = s->lat_us ? rc_lat_stamp(&q->e->clk) : (struct rc_stamp){ 0 };
	double now = s->posted_s ? rc_now() : 0;

	for (uint64_t k = seq; k < seq + (uint64_t)n; k++) {
		q->slots[k % (uint64_t)q->e->depth].t = t;
		q->slots[k % (uint64_t)q->e->depth].tp = now;
	}
}

/* Fill the queue: the engine posts lists of up to `batch` work requests. */
static int post_some(struct engine *e, int qi, struct rc_err *err)
{
	const struct rc_stream *s = e->s;
	struct qstate *q = &e->q[qi];
	struct rc_pipe *p = &e->p[qi];
	int rc;

	while (q->more && rc_pipe_room(p, 0)) {
		uint64_t seq = rc_pipe_seq(p);
		struct slot *sl = &q->slots[seq % (uint64_t)e->depth];
		struct rc_wr w = { .op = s->op,
				   .lkey = s->lkey,
				   .rkey = s->rkey,
				   .imm = s->imm,
				   .compare_add = s->compare_add,
				   .swap = s->swap,
				   .user = seq };
		bool last;

		rc = make_piece(e, qi, sl, err);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			q->more = false;
			break;
		}
		/* Each queue signals its own last work request, or the
		 * unsignalled tail of a queue would never complete. */
		last = !q->more ||
		       (s->iters ? q->next_k >= s->iters : q->next_k * s->chunk >= s->total);
		if (last)
			q->more = false;
		w.laddr = (uintptr_t)slot_buf(e, qi, seq);
		w.len = (uint32_t)sl->len;
		w.raddr = s->raddr + sl->off;
		if ((rc = rc_pipe_add(p, &w, last, err)))
			return rc;
	}
	rc = rc_pipe_flush(p, err);
	return rc < 0 ? rc : 0;
}

static int complete_upto(struct engine *e, int qi, uint64_t user, struct rc_err *err)
{
	const struct rc_stream *s = e->s;
	struct qstate *q = &e->q[qi];
	struct rc_stamp t = s->lat_us ? rc_lat_stamp(&e->clk) : (struct rc_stamp){ 0 };
	uint64_t k, to = rc_pipe_complete(&e->p[qi], user, &k);
	double now = s->completed_s ? rc_now() : 0;

	for (; k < to; k++) {
		struct slot *sl = &q->slots[k % (uint64_t)e->depth];

		if (s->drain) {
			int rc = s->drain(s->arg, sl->off, slot_buf(e, qi, k), sl->len);

			if (rc)
				return rc_err_set(err, -rc, "writing the output failed: %s",
						  strerror(-rc));
		}
		/* The sample holds the tail of the post's clock read and the head
		 * of this one: a clock read's cost, no part of the operation
		 * (rc_lat_span takes it off). */
		if (s->lat_us) {
			double d = rc_lat_span(&e->clk, sl->t, t);

			s->lat_us[sl->k] = d * 1e6;
			e->moved += isnan(d);
		}
		if (s->posted_s) {
			s->posted_s[sl->k] = sl->tp;
			s->completed_s[sl->k] = now;
		}
		e->bytes += sl->len;
		e->ops++;
	}
	return 0;
}

/* The parameters a transfer cannot run with. */
static int stream_check(const struct rc_stream *s, struct rc_err *err)
{
	if (s->nconns < 1 || s->nconns > 64 || s->depth < 1 || !s->chunk)
		return rc_err_set(err, EINVAL, "invalid transfer parameters");
	if (s->chunk > (1u << 30))
		return rc_err_set(err, EINVAL, "a work request of %zu bytes is over 1 GiB",
				  s->chunk);
	if (s->tp && (!s->eps || s->timeout_ms <= 0))
		return rc_err_set(err, EINVAL,
				  "a transfer over %s needs its endpoints and a timeout",
				  s->tp->name);
	if ((s->drain || s->fill) && s->nconns != 1)
		return rc_err_set(err, EINVAL, "a streamed transfer needs exactly one connection");
	if (s->batch < 1 || s->batch > MAX_BATCH)
		return rc_err_set(err, EINVAL, "post batch must be 1..%d", MAX_BATCH);
	if (s->iters && s->total / s->chunk == 0) /* the span, (total / chunk) * chunk, is 0 */
		return rc_err_set(err, EINVAL, "the remote span is smaller than one message");
	return 0;
}

/* The engine of s: its depth and signalling, and a queue per connection. */
static int engine_init(struct engine *e, const struct rc_stream *s, struct rc_err *err)
{
	e->s = s;
	e->depth = s->depth;
	for (int i = 0; i < s->nconns; i++) {
		int sq = tp_of(s)->sq_depth(ep_of(s, i));

		if (e->depth > sq)
			e->depth = sq;
	}
	e->sig_every =
		(s->fill || s->drain || s->lat_us || s->signal_every < 1) ? 1 : s->signal_every;
	if (e->sig_every > e->depth)
		e->sig_every = e->depth;
	e->span = s->iters ? (s->total / s->chunk) * s->chunk : 0;
	e->q = calloc((size_t)s->nconns, sizeof(*e->q));
	e->p = calloc((size_t)s->nconns, sizeof(*e->p));
	if (!e->q || !e->p)
		return rc_err_set(err, ENOMEM, "out of memory");
	for (int i = 0; i < s->nconns; i++) {
		struct rc_pipe_opts po = { .depth = e->depth,
					   .signal_every = e->sig_every,
					   .batch = s->batch };

		rc_pipe_init(&e->p[i], tp_of(s), ep_of(s, i), &po);
		if (s->lat_us || s->posted_s) {
			e->p[i].before_post = stamp_posts;
			e->p[i].hook_arg = &e->q[i];
		}
		e->q[i].e = e;
		e->q[i].next_k = (uint64_t)i;
		e->q[i].more = true;
		e->q[i].slots = calloc((size_t)e->depth, sizeof(struct slot));
		if (!e->q[i].slots)
			return rc_err_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

static void engine_free(struct engine *e)
{
	free(e->p);
	if (!e->q)
		return;
	for (int i = 0; i < e->s->nconns; i++)
		free(e->q[i].slots);
	free(e->q);
}

/* Post what every queue has room for; *outstanding: the work requests in
 * flight then, *more: whether any queue has pieces left to post. */
static int post_all(struct engine *e, uint64_t *outstanding, bool *more, struct rc_err *err)
{
	*outstanding = 0;
	*more = false;
	for (int i = 0; i < e->s->nconns; i++) {
		if (e->q[i].more) {
			int rc = post_some(e, i, err);

			if (rc)
				return rc;
		}
		*more |= e->q[i].more;
		*outstanding += rc_pipe_outstanding(&e->p[i]);
	}
	return 0;
}

/* Wait for completions (outstanding are in flight) and count them done. */
static int reap(struct engine *e, uint64_t outstanding, struct rc_err *err)
{
	const struct rc_stream *s = e->s;
	struct rc_cqe wc[POLL_BATCH];
	int which = 0, n, rc;

	n = rc_pipe_poll(e->p, s->nconns, wc, POLL_BATCH, s->timeout_ms > 0 ? s->timeout_ms : -1,
			 &which, err);
	if (n == -ETIMEDOUT)
		return rc_err_set(err, ETIMEDOUT,
				  "no completion from %s within %d ms (%llu %s operations outstanding)",
				  tp_of(s)->peer(ep_of(s, 0)),
				  s->timeout_ms > 0 ? s->timeout_ms : s->conns[0]->timeout_ms,
				  (unsigned long long)outstanding, rc_op_name(s->op));
	if (n < 0)
		return n;
	for (int j = 0; j < n; j++) {
		rc = complete_upto(e, which, wc[j].user, err);
		if (rc)
			return rc;
	}
	if (s->progress)
		s->progress(s->progress_arg, e->bytes, s->iters ? s->iters * s->chunk : s->total);
	return 0;
}

/* The TSC's rate held over the run: its span from s0 to now within 1% (and
 * 100 us) of CLOCK_MONOTONIC's over the same two instants, each stamp read
 * with a monotonic reading close on each side of it (a thread held up
 * between two separate readings, as an emulated or a busy host holds it
 * for a millisecond, would look like a TSC that drifted). Not judged when
 * a stamp could not be bracketed or the two ends came from two CPUs. */
static int lat_held(const struct rc_lat_clk *c, bool have_s0, struct rc_stamp s0, double at0,
		    struct rc_err *err)
{
	struct rc_stamp s1;
	double at1, d;

	if (c->kind != RC_LAT_CLOCK_TSC || !have_s0 || rc_lat_stamp_at(c, &s1, &at1))
		return 0;
	d = rc_lat_span(c, s0, s1) + c->cost; /* the span, its stamp's cost put back */
	if (isnan(d) || fabs(d - (at1 - at0)) <= 0.01 * (at1 - at0) + 100e-6)
		return 0;
	return rc_err_opt(err, ERANGE,
			  "the time-stamp counter timed the run at %.6f s, CLOCK_MONOTONIC at "
			  "%.6f s: its rate is not steady here ({lat_clock} monotonic)",
			  d, at1 - at0);
}

int rc_stream_run(const struct rc_stream *s, struct rc_stream_result *res, struct rc_err *err)
{
	struct engine e = { .s = s };
	struct rc_stamp s0 = { 0 };
	bool have_s0 = false;
	double t0, at0 = 0;
	int rc;

	memset(res, 0, sizeof(*res));
	rc = stream_check(s, err);
	if (rc || (!s->iters && !s->total))
		return rc;
	rc = engine_init(&e, s, err);
	if (!rc && s->lat_us)
		rc = rc_lat_clk_init(&e.clk, s->lat_clock, err);
	if (!rc && s->lat_us)
		have_s0 = !rc_lat_stamp_at(&e.clk, &s0, &at0);
	t0 = rc_now();
	while (!rc) {
		uint64_t outstanding;
		bool more;

		rc = post_all(&e, &outstanding, &more, err);
		if (rc || (!outstanding && !more))
			break;
		rc = reap(&e, outstanding, err);
	}
	if (!rc)
		res->seconds = rc_now() - t0;
	if (!rc && s->lat_us)
		rc = lat_held(&e.clk, have_s0, s0, at0, err);
	res->bytes = e.bytes;
	res->ops = e.ops;
	res->clock_us = e.clk.cost * 1e6;
	res->lat_clock = e.clk.kind;
	res->lat_hz = e.clk.hz;
	res->lat_moved = e.moved;
	engine_free(&e);
	return rc;
}

/* The longest runs of operations rc_peak_op_seconds looks at, and how many
 * runs in all (a long benchmark looks at shorter runs). */
#define PEAK_RUN 4096
#define PEAK_WORK 100000000ULL

double rc_peak_op_seconds(const double *posted, const double *completed, uint64_t n)
{
	uint64_t run = n * PEAK_RUN <= PEAK_WORK ? PEAK_RUN : PEAK_WORK / n;
	double best;

	if (!n)
		return 0;
	if (run < 1)
		run = 1;
	best = (completed[n - 1] - posted[0]) / (double)n;
	for (uint64_t i = 0; i < n; i++)
		for (uint64_t j = i; j < n && j - i < run; j++) {
			double t = (completed[j] - posted[i]) / (double)(j - i + 1);

			if (t > 0 && t < best)
				best = t;
		}
	return best;
}
