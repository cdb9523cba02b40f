// SPDX-License-Identifier: MIT
/* A rank on several rails: rail i carries slice i of the blob over its own
 * group, the rails at once, a thread each (rc_mcast_run_rails). The groups
 * share nothing; the callbacks see the blob's own offsets. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/err_core.h>
#include <rdmactl/group_core.h>

#include "mcast_int.h"

struct rail_run {
	struct rc_group *g;
	const struct rc_mcast_opts *whole; /* the caller's, its callbacks */
	struct rc_mcast_opts o;            /* this rail's slice */
	uint64_t base;                     /* where the slice starts in the blob */
	struct rc_mcast_result *res;
	struct rc_err err;
	int rc;
};

static int slice_read(void *arg, uint64_t off, void *buf, size_t len, struct rc_err *err)
{
	const struct rail_run *r = arg;

	return r->whole->read(r->whole->arg, r->base + off, buf, len, err);
}

static int slice_consume(void *arg, uint64_t off, const void *buf, size_t len, struct rc_err *err)
{
	const struct rail_run *r = arg;

	return r->whole->consume(r->whole->arg, r->base + off, buf, len, err);
}

static void rail_main(void *arg)
{
	struct rail_run *r = arg;

	r->rc = rc_mcast_run(r->g, &r->o, r->res, &r->err);
}

/* A rail whose thread could not start fails; its peers hear why at once. */
static void rail_nostart(void *arg, int e)
{
	struct rail_run *r = arg;

	r->rc = rc_err_set(&r->err, e, "cannot start its thread: %s", strerror(e));
	rc_group_abort_err(r->g, &r->err, NULL);
}

/* Rail i's options: slice [size * i / n, size * (i + 1) / n) of the blob. */
static void slice_opts(struct rail_run *r, const struct rc_mcast_opts *o, uint64_t size, int i,
		       int n)
{
	uint64_t end = size / (uint64_t)n * (uint64_t)(i + 1) +
		       size % (uint64_t)n * (uint64_t)(i + 1) / (uint64_t)n;

	r->whole = o;
	r->base = size / (uint64_t)n * (uint64_t)i + size % (uint64_t)n * (uint64_t)i / (uint64_t)n;
	r->o = *o;
	r->o.size = end - r->base;
	r->o.read = o->read ? slice_read : NULL;
	r->o.consume = o->consume ? slice_consume : NULL;
	r->o.arg = r;
	r->o.corrupt = o->corrupt && o->corrupt_at - r->base < r->o.size;
	r->o.corrupt_at = o->corrupt_at - r->base;
}

int rc_mcast_run_rails(struct rc_group *const *g, int n, const struct rc_mcast_opts *o,
		       struct rc_mcast_result *res, struct rc_err *err)
{
	uint64_t size = o->size;
	struct rail_run *r;
	int rc = 0;

	if (n < 1)
		return rc_err_set(err, EINVAL, "no rail to run on");
	if (n == 1)
		return rc_mcast_run(g[0], o, res, err);
	if (o->nblocks)
		return rc_err_set(err, EINVAL,
				  "the times blocks are usable are told on one rail a rank only");
	/* every receiver learns the blob's size, where each slice starts */
	if ((rc = rc_group_bcast(g[0], o->shape.root, &size, sizeof(size), err)))
		return rc;
	if (!(r = calloc((size_t)n, sizeof(*r))))
		return rc_err_set(err, ENOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		r[i].g = g[i];
		r[i].res = &res[i];
		slice_opts(&r[i], o, size, i, n);
	}
	rc_group_rails_run(n, rail_main, r, sizeof(*r), rail_nostart);
	for (int i = 0; i < n && !rc; i++)
		if (r[i].rc)
			rc = rc_group_rail_err(g, i, r[i].rc, r[i].err.msg, err);
	free(r);
	return rc;
}
