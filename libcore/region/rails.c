// SPDX-License-Identifier: MIT
/*
 * A set of rails to one region: a client per rail (its own device, its own
 * address of the server). On one rail, the ordinary case, a transfer is the
 * client's stream; on several it is striped over them. Each rail has a
 * thread that takes its own chunks in turn (an even split), then helps the
 * rails with the most left, so a slow rail carries less; a rail that fails
 * gives its unfinished chunk back, and the others send it again.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/client.h>
#include <rdmactl/dev.h>
#include <rdmactl/err_core.h>
#include <rdmactl/dev_core.h>
#include <rdmactl/ops_core.h>

#include "client_int.h"

static int rail_open(const struct rc_rail_spec *sp, int i, const char *region,
		     const struct rc_client_opts *o, struct rc_client **out, struct rc_err *err)
{
	struct rc_client_opts ro = *o;
	struct rc_target t = { 0 };
	char bind[64];
	int rc;

	if (snprintf(t.host, sizeof(t.host), "%s", sp->host) >= (int)sizeof(t.host) ||
	    snprintf(t.port, sizeof(t.port), "%s", sp->port) >= (int)sizeof(t.port) ||
	    snprintf(t.region, sizeof(t.region), "%s", region ? region : "") >=
		    (int)sizeof(t.region))
		return rc_err_set(err, ENAMETOOLONG, "rail %d: address or region name too long",
				  i + 1);
	ro.conn.dev_name = sp->dev;
	ro.conn.bind_addr = sp->bind;
	if (!sp->bind && sp->dev) {
		rc = rc_dev_ipv4(sp->dev, bind, sizeof(bind), err);
		if (rc)
			return rc_err_wrap(err, -rc, "rail %d", i + 1);
		ro.conn.bind_addr = bind;
	}
	rc = rc_client_open(&t, &ro, out, err);
	if (rc)
		rc_err_wrap(err, -rc, "rail %d (%s%s%s%sto %s)", i + 1, sp->dev ? sp->dev : "",
			    sp->dev ? " " : "", ro.conn.bind_addr ? ro.conn.bind_addr : "",
			    ro.conn.bind_addr ? " " : "", sp->host);
	return rc;
}

int rc_rails_open(const struct rc_rail_spec *spec, int n, const char *region,
		  const struct rc_client_opts *o, struct rc_rails **out, struct rc_err *err)
{
	struct rc_rails *r;
	int rc = 0;

	if (n < 1 || n > RC_RAILS_MAX)
		return rc_err_set(err, EINVAL, "1 to %d rails, not %d", RC_RAILS_MAX, n);
	r = calloc(1, sizeof(*r));
	if (!r)
		return rc_err_set(err, ENOMEM, "out of memory");
	for (int i = 0; i < n && !rc; i++) {
		rc = rail_open(&spec[i], i, region, o, &r->cl[i], err);
		if (!rc)
			r->n++;
	}
	for (int i = 1; i < r->n && !rc; i++) {
		const struct rc_region_desc *a = &r->cl[0]->region, *b = &r->cl[i]->region;

		if (strcmp(a->name, b->name) || a->length != b->length || a->access != b->access)
			rc = rc_err_set(err, EINVAL,
					"rail %d serves region '%s' of %llu bytes (%s), rail 1 '%s' "
					"of %llu bytes (%s): not one region",
					i + 1, b->name, (unsigned long long)b->length,
					rc_access_name(b->access), a->name,
					(unsigned long long)a->length, rc_access_name(a->access));
	}
	if (rc) {
		rc_rails_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

int rc_rails_of(struct rc_client *cl, struct rc_rails **out, struct rc_err *err)
{
	struct rc_rails *r = calloc(1, sizeof(*r));

	if (!r)
		return rc_err_set(err, ENOMEM, "out of memory");
	r->cl[0] = cl;
	r->n = 1;
	r->borrowed = true;
	*out = r;
	return 0;
}

int rc_rails_close(struct rc_rails *r)
{
	int rc = 0;

	if (!r)
		return 0;
	for (int i = r->borrowed ? 1 : 0; i < r->n; i++) {
		int e = rc_client_close(r->cl[i]);

		if (e && !rc)
			rc = e;
	}
	free(r);
	return rc;
}

int rc_rails_count(const struct rc_rails *r)
{
	return r->n;
}

struct rc_client *rc_rails_client(const struct rc_rails *r, int i)
{
	return r->cl[i];
}

/* A transfer's shared state: the chunks not yet taken, those given back by
 * a rail that failed, what is done; under mu. */
struct xfer {
	struct rc_rails *r;
	enum rc_op op;
	uint64_t off, len, stripe, nchunks;
	uint64_t head[RC_RAILS_MAX], tail[RC_RAILS_MAX]; /* each rail's own chunks left */
	uint64_t *back;                                  /* chunks given back, a stack */
	uint64_t nback;
	int busy;      /* chunks in flight */
	int alive;     /* rails not failed */
	uint64_t done; /* bytes */
	double start;
	const struct rc_rails_io *io;
	struct rc_rails_result *res;
	int local_rc; /* fill or drain failed: the transfer stops */
	struct rc_err local_err;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

/* One chunk's view of the caller's callbacks: its offsets, and whether one
 * of them failed (a local error, not the rail's). */
struct chunk_io {
	struct xfer *x;
	uint64_t base; /* the chunk's first byte, from the transfer's start */
	int cb_rc;
	uint64_t ops; /* work requests the chunk took */
};

static ssize_t chunk_fill(void *arg, uint64_t off, void *buf, size_t len)
{
	struct chunk_io *c = arg;
	ssize_t n = c->x->io->fill(c->x->io->arg, c->base + off, buf, len);

	if (n < 0 || (size_t)n != len)
		c->cb_rc = n < 0 ? (int)n : -ENODATA;
	return n;
}

static int chunk_drain(void *arg, uint64_t off, const void *buf, size_t len)
{
	struct chunk_io *c = arg;
	int rc = c->x->io->drain(c->x->io->arg, c->base + off, buf, len);

	if (rc)
		c->cb_rc = rc < 0 ? rc : -EIO;
	return rc;
}

/* A chunk of rail i's own (i, i + n, i + 2n...: an even split), from the
 * head; else one of the rail with the most left, from its tail (a rail that
 * finished early helps a slow one, or takes over a failed one's). */
static bool next_own(struct xfer *x, int i, uint64_t *chunk)
{
	uint64_t n = (uint64_t)x->r->n, most = 0;
	int from = -1;

	if (x->head[i] < x->tail[i]) {
		*chunk = (uint64_t)i + x->head[i]++ * n;
		return true;
	}
	for (int j = 0; j < x->r->n; j++)
		if (x->tail[j] - x->head[j] > most) {
			most = x->tail[j] - x->head[j];
			from = j;
		}
	if (from < 0)
		return false;
	*chunk = (uint64_t)from + --x->tail[from] * n;
	return true;
}

/* The next chunk for rail i, waiting while others are in flight (one may
 * yet be given back); false when there is none left or the transfer ends. */
static bool take(struct xfer *x, int i, uint64_t *chunk)
{
	for (;;) {
		if (x->local_rc)
			return false;
		if (x->nback) {
			*chunk = x->back[--x->nback];
			x->res->resent++;
			break;
		}
		if (next_own(x, i, chunk))
			break;
		if (!x->busy)
			return false;
		pthread_cond_wait(&x->cv, &x->mu);
	}
	x->busy++;
	return true;
}

/* One chunk on rail i: 0, or the rail's failure (cb_rc: the callbacks'). */
static int move_chunk(struct xfer *x, int i, struct staging *st, uint64_t chunk,
		      struct chunk_io *cio, struct rc_err *e)
{
	uint64_t at = chunk * x->stripe, n = x->len - at < x->stripe ? x->len - at : x->stripe;
	struct rc_client_io io = { .timeout_ms = x->io->timeout_ms, .arg = cio };
	struct rc_stream_result sr;
	int rc;

	cio->x = x;
	cio->base = at;
	cio->cb_rc = 0;
	if (x->op == RC_OP_WRITE) {
		io.fill = chunk_fill;
		rc = client_stream_with(x->r->cl[i], st, RC_OP_WRITE, x->off + at, n, &io, &sr, e);
	} else {
		io.drain = chunk_drain;
		rc = client_stream_with(x->r->cl[i], st, RC_OP_READ, x->off + at, n, &io, &sr, e);
	}
	cio->ops = sr.ops;
	if (!rc && sr.bytes != n && !cio->cb_rc)
		cio->cb_rc = -ENODATA;
	return rc;
}

/* Rail i failed (e says why): it takes no more chunks. Under mu. */
static void rail_failed(struct xfer *x, int i, const struct rc_err *e)
{
	struct rc_rail_result *rr = &x->res->rail[i];

	rr->failed = true;
	rr->failed_at_s = rc_now() - x->start;
	snprintf(rr->error, sizeof(rr->error), "%.255s", e->msg);
	x->alive--;
	if (x->res->failed_rail < 0) {
		x->res->failed_rail = i;
		x->res->failed_at_s = rr->failed_at_s;
		x->res->bytes_after_failure = x->done; /* subtracted at the end */
	}
	pthread_cond_broadcast(&x->cv);
}

/* After a chunk: count it, or give it back and mark the rail failed (or
 * stop the transfer on a local error). Under mu. Returns whether the rail
 * goes on. */
static bool chunk_end(struct xfer *x, int i, uint64_t chunk, int rc, const struct chunk_io *cio,
		      const struct rc_err *e)
{
	struct rc_rail_result *rr = &x->res->rail[i];
	uint64_t at = chunk * x->stripe, n = x->len - at < x->stripe ? x->len - at : x->stripe;

	x->busy--;
	pthread_cond_broadcast(&x->cv);
	if (cio->cb_rc) {
		if (!x->local_rc) {
			x->local_rc = cio->cb_rc;
			if (cio->cb_rc == -ENODATA)
				rc_err_set(&x->local_err, ENODATA,
					   "the input ended before byte %llu of %llu",
					   (unsigned long long)(at + n), (unsigned long long)x->len);
			else
				rc_err_set(&x->local_err, -cio->cb_rc, "%s the data: %s",
					   x->op == RC_OP_WRITE ? "cannot read" : "cannot store",
					   strerror(-cio->cb_rc));
		}
		return false;
	}
	if (rc) {
		rr->errors++;
		x->back[x->nback++] = chunk;
		rail_failed(x, i, e);
		return false;
	}
	rr->bytes += n;
	rr->chunks++;
	rr->ops += cio->ops;
	x->done += n;
	if (x->io->progress)
		x->io->progress(x->io->progress_arg, x->done, x->len);
	return true;
}

struct rail_arg {
	struct xfer *x;
	int i;
};

static void *rail_main(void *p)
{
	struct rail_arg *a = p;
	struct xfer *x = a->x;
	struct staging st;
	struct rc_err se = { 0 };
	uint64_t chunk;
	bool go = true;

	/* one staging buffer for all the rail's chunks */
	go = !staging_get(x->r->cl[a->i], &st, (size_t)RC_CLIENT_CHUNK * RC_CLIENT_DEPTH,
			  "a rail's staging buffer", &se);
	pthread_mutex_lock(&x->mu);
	if (!go)
		rail_failed(x, a->i, &se);
	while (go && take(x, a->i, &chunk)) {
		struct chunk_io cio;
		struct rc_err e = { 0 };
		int rc;

		double t0;

		pthread_mutex_unlock(&x->mu);
		t0 = rc_now();
		rc = move_chunk(x, a->i, &st, chunk, &cio, &e);
		t0 = rc_now() - t0;
		pthread_mutex_lock(&x->mu);
		x->res->rail[a->i].busy_s += t0;
		go = chunk_end(x, a->i, chunk, rc, &cio, &e);
	}
	pthread_mutex_unlock(&x->mu);
	if (st.mr)
		staging_put(&st);
	return NULL;
}

/* The error of a transfer that every rail failed: each rail's reason. */
static int all_failed(const struct xfer *x, struct rc_err *err)
{
	int rc = rc_err_set(err, EIO, "every rail failed");

	for (int i = 0; i < x->r->n; i++)
		rc_err_append(err, EIO, "rail %d (%s): %s", i + 1, rc_client_device(x->r->cl[i]),
			      x->res->rail[i].error);
	return rc;
}

static int run_rails(struct xfer *x, struct rc_err *err)
{
	struct rail_arg args[RC_RAILS_MAX];
	pthread_t th[RC_RAILS_MAX];
	int started = 0, rc = 0;

	for (int i = 0; i < x->r->n; i++) {
		args[i] = (struct rail_arg){ .x = x, .i = i };
		rc = pthread_create(&th[i], NULL, rail_main, &args[i]);
		if (rc) {
			rc = rc_err_set(err, rc, "cannot start a thread for rail %d: %s", i + 1,
					strerror(rc));
			/* the rails started take every chunk: this one only fails */
			pthread_mutex_lock(&x->mu);
			x->local_rc = -rc;
			x->local_err = *err;
			pthread_mutex_unlock(&x->mu);
			break;
		}
		started++;
	}
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	return rc;
}

/* One rail: the client's stream, the whole transfer rail 0's one chunk. */
static int one_rail(struct rc_rails *r, enum rc_op op, uint64_t off, uint64_t len,
		    const struct rc_rails_io *io, struct rc_rails_result *res, struct rc_err *err)
{
	struct rc_client_io cio = { .fill = io->fill,
				    .drain = io->drain,
				    .arg = io->arg,
				    .progress = io->progress,
				    .progress_arg = io->progress_arg,
				    .timeout_ms = io->timeout_ms,
				    .rewind = io->rewind };
	struct rc_rail_result *rr = &res->rail[0];
	int rc = op == RC_OP_READ ? rc_client_read(r->cl[0], off, len, &cio, &res->total, err)
				  : rc_client_write(r->cl[0], off, len, &cio, &res->total, err);

	rr->bytes = res->total.bytes;
	rr->ops = res->total.ops;
	rr->chunks = res->total.bytes ? 1 : 0;
	rr->busy_s = res->total.seconds;
	if (rc) {
		rr->failed = true;
		rr->failed_at_s = res->total.seconds;
		snprintf(rr->error, sizeof(rr->error), "%.255s", err->msg);
		res->failed_rail = 0;
		res->failed_at_s = res->total.seconds;
	}
	return rc;
}

int rc_rails_transfer(struct rc_rails *r, enum rc_op op, uint64_t off, uint64_t len, uint64_t stripe,
		      const struct rc_rails_io *io, struct rc_rails_result *res, struct rc_err *err)
{
	struct xfer x = { .r = r,
			  .op = op,
			  .off = off,
			  .len = len,
			  .stripe = stripe,
			  .io = io,
			  .res = res };
	int rc;

	memset(res, 0, sizeof(*res));
	res->n = r->n;
	res->stripe = stripe;
	res->failed_rail = -1;
	if (op != RC_OP_WRITE && op != RC_OP_READ)
		return rc_err_set(err, EINVAL, "rails move data by WRITE or READ, not %s",
				  rc_op_name(op));
	if (r->n == 1)
		return one_rail(r, op, off, len, io, res, err);
	if (!stripe)
		return rc_err_set(err, EINVAL, "a stripe of 0 bytes");
	x.nchunks = (len + stripe - 1) / stripe;
	for (int i = 0; i < r->n; i++)
		x.tail[i] = x.nchunks > (uint64_t)i
				    ? (x.nchunks - (uint64_t)i + (uint64_t)r->n - 1) / (uint64_t)r->n
				    : 0;
	x.back = calloc((size_t)r->n + 1, sizeof(*x.back));
	if (!x.back)
		return rc_err_set(err, ENOMEM, "out of memory");
	x.alive = r->n;
	pthread_mutex_init(&x.mu, NULL);
	pthread_cond_init(&x.cv, NULL);
	x.start = rc_now();
	rc = run_rails(&x, err);
	res->total.seconds = rc_now() - x.start;
	res->total.bytes = x.done;
	for (int i = 0; i < r->n; i++)
		res->total.ops += res->rail[i].ops;
	if (res->failed_rail >= 0)
		res->bytes_after_failure = x.done - res->bytes_after_failure;
	pthread_cond_destroy(&x.cv);
	pthread_mutex_destroy(&x.mu);
	free(x.back);
	if (!rc && x.local_rc) {
		*err = x.local_err;
		rc = x.local_rc;
	}
	if (!rc && x.done < len)
		rc = all_failed(&x, err);
	return rc;
}
