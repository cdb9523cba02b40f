// SPDX-License-Identifier: MIT
/* A rank's alltoall on its set of rails, the one place that tells one rail
 * from several: one rail runs the exchange (a2a.c) on the caller's thread;
 * several run slice i of every block over the group of rail i, the rails
 * at once, a thread each, starting each iteration together (a2a_sync.c).
 * The groups share nothing, so a rail's thread touches only its own group,
 * buffers and result, and the barrier; the caller's progress hears rail 0
 * alone. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/err_core.h>
#include <rdmactl/group_core.h>
#include <rdmactl/a2a_core.h>

#include "a2a_int.h"

struct rail_run {
	struct rc_group *g;
	struct rc_a2a_opts o;
	struct a2a_sync *sync;
	struct rc_a2a_result *res;
	struct rc_err err;
	int rc;
};

static void rail_main(void *arg)
{
	struct rail_run *r = arg;

	r->rc = a2a_run_sync(r->g, &r->o, r->sync, r->res, &r->err);
	if (r->rc)
		a2a_sync_fail(r->sync, r->o.slice);
}

/* A rail whose thread could not start fails, and its peers hear why at
 * once (rc_group_abort), and so do this rank's other rails. */
static void rail_nostart(void *arg, int e)
{
	struct rail_run *r = arg;

	r->rc = rc_err_set(&r->err, e, "cannot start its thread: %s", strerror(e));
	rc_group_abort_err(r->g, &r->err, NULL);
	a2a_sync_fail(r->sync, r->o.slice);
}

int rc_a2a_run_rails(struct rc_group *const *g, int n, const struct rc_a2a_opts *o,
		     struct rc_a2a_result *res, struct rc_err *err)
{
	struct a2a_sync sync = { .mu = PTHREAD_MUTEX_INITIALIZER,
				 .cv = PTHREAD_COND_INITIALIZER,
				 .n = n,
				 .failed = -1 };
	struct rail_run *r;
	int rc = 0;

	if (n < 1)
		return rc_err_set(err, EINVAL, "no rail to run on");
	if (n > 1 && o->bg)
		return rc_err_set(err, EINVAL, "a background runs beside one rail, not %d", n);
	if (n == 1)
		return a2a_run_sync(g[0], o, NULL, res, err);
	if (!(r = calloc((size_t)n, sizeof(*r))))
		return rc_err_set(err, ENOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		r[i].g = g[i];
		r[i].sync = &sync;
		r[i].o = *o;
		r[i].o.slice = i;
		r[i].o.slices = n;
		r[i].res = &res[i];
		if (i) { /* one line of progress: rail 0's; the test hook: its slice */
			r[i].o.progress = NULL;
			r[i].o.progress_arg = NULL;
			r[i].o.corrupt.on = false;
		}
	}
	rc_group_rails_run(n, rail_main, r, sizeof(*r), rail_nostart);
	/* the rail that failed first (a2a_sync_fail), not one it released */
	if (sync.failed >= 0)
		rc = rc_group_rail_err(g, sync.failed, r[sync.failed].rc, r[sync.failed].err.msg,
				       err);
	free(r);
	return rc;
}

int rc_a2a_run(struct rc_group *g, const struct rc_a2a_opts *o, struct rc_a2a_result *res,
	       struct rc_err *err)
{
	return rc_a2a_run_rails(&g, 1, o, res, err);
}
