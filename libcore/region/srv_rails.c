// SPDX-License-Identifier: MIT
/* A region served on several rails: the same memory, registered once more
 * on the protection domain of another server's device (rdmactl-register(8),
 * --listen ADDR1,ADDR2), GPU memory by the path its first registration took.
 * Each rail's server runs on a thread of its own, with a migration state of
 * its own: a move through one rail would leave the others serving (and
 * registering) the memory it frees, so such a region is never moved live
 * (srv_mig_step.c refuses its TRACK, on every rail). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rdmactl/server.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/err_core.h>
#include <rdmactl/mem_core.h>

#include "server_int.h"

int rc_server_share_region(struct rc_server *s, struct rc_server *owner, int i, struct rc_err *err)
{
	struct rc_region *from, *r;
	int rc;

	if (i < 0 || i >= owner->nregions)
		return rc_err_set(err, EINVAL, "no region %d to share", i);
	from = &owner->regions[i];
	for (int k = 0; k < s->nregions; k++)
		if (!strcmp(s->regions[k].d.name, from->d.name))
			return rc_err_set(err, EEXIST, "a region named '%s' is already served",
					  from->d.name);
	if (s->nregions >= RC_MAX_REGIONS)
		return rc_err_set(err, ENOSPC, "at most %d regions per server", RC_MAX_REGIONS);
	r = &s->regions[s->nregions];
	memset(r, 0, sizeof(*r));
	r->mem = from->mem;
	r->shared = true;
	/* GPU memory: the path the first rail took, on this rail's PD (a
	 * dma-buf's fd, the device pointer, or the one bounce buffer). */
	rc = rc_mem_register(&r->mem, s->l->pd, rc_access_ibv(from->d.access), &r->mr, err);
	if (rc)
		return rc_err_wrap(err, -rc, "cannot register region '%s' (%zu bytes) on %s",
				   from->d.name, from->mem.len, s->l->dev_name);
	r->d = from->d;
	r->d.rkey = r->mr->rkey;
	snprintf(r->path, sizeof(r->path), "%s", from->path);
	from->rails = (from->rails ? from->rails : 1) + 1;
	r->rails = from->rails;
	s->nregions++;
	return 0;
}

/* A server on a set of rails: the caller's first server, and one per
 * further rail serving its regions, each on a thread of its own from
 * rc_server_rails_start to rc_server_rails_close; every rail's events go
 * out one at a time, through the first's callback. */
struct rc_server_rails {
	int n;
	struct rc_server *s[RC_RAILS_MAX]; /* [0]: the caller's */
	pthread_t tid[RC_RAILS_MAX];
	int started; /* threads: rails 1..started */
	int stop_fd;
	int rc[RC_RAILS_MAX];
	struct rc_err e[RC_RAILS_MAX];
	pthread_mutex_t mu;
	void (*on_event)(void *arg, const struct rc_server_event *ev); /* the first's */
	void *arg;
};

static void rails_event(void *arg, const struct rc_server_event *ev)
{
	struct rc_server_rails *sr = arg;

	pthread_mutex_lock(&sr->mu);
	if (sr->on_event)
		sr->on_event(sr->arg, ev);
	pthread_mutex_unlock(&sr->mu);
}

/* Rail i's server: o's, on its own address and device, serving the
 * first's regions; the first writes the files back. */
static int rail_server(struct rc_server_rails *sr, const struct rc_server_opts *so,
		       const struct rc_rail_listen *rl, int i, struct rc_err *err)
{
	struct rc_server_opts o = *so;
	struct rc_server *first = sr->s[0];
	int rc;

	o.addr = rl->addr;
	o.port = rl->port;
	o.dev_name = rl->dev;
	o.flush_every_ms = 0;
	o.on_event = rails_event;
	o.arg = sr;
	if ((rc = rc_server_create(&o, &sr->s[i], err)))
		return rc_err_wrap(err, -rc, "rail %d (%s:%s)", i + 1, o.addr, o.port);
	sr->n++;
	for (int r = 0; r < first->nregions; r++)
		if ((rc = rc_server_share_region(sr->s[i], first, r, err)))
			return rc_err_wrap(err, -rc, "rail %d (%s)", i + 1, sr->s[i]->l->dev_name);
	return 0;
}

int rc_server_rails_open(struct rc_server *s, const struct rc_rail_listen *rails, int n,
			 struct rc_server_rails **out, struct rc_err *err)
{
	struct rc_server_rails *sr;
	int rc = 0;

	if (n < 1 || n > RC_RAILS_MAX)
		return rc_err_set(err, EINVAL, "1 to %d rails, not %d", RC_RAILS_MAX, n);
	if (!(sr = calloc(1, sizeof(*sr))))
		return rc_err_set(err, ENOMEM, "out of memory");
	sr->s[0] = s;
	sr->n = 1;
	sr->stop_fd = -1;
	pthread_mutex_init(&sr->mu, NULL);
	*out = sr;
	if (n == 1)
		return 0;
	sr->on_event = s->o.on_event;
	sr->arg = s->o.arg;
	s->o.on_event = rails_event; /* the rails' threads beside it: one at a time */
	s->o.arg = sr;
	for (int i = 1; i < n && !rc; i++)
		rc = rail_server(sr, &s->o, &rails[i], i, err);
	return rc;
}

int rc_server_rails_count(const struct rc_server_rails *sr)
{
	return sr->n;
}

struct rc_server *rc_server_rails_server(const struct rc_server_rails *sr, int i)
{
	return sr->s[i];
}

/* What rail_thread runs: rail i's server, until stop_fd. */
struct rail_run {
	struct rc_server_rails *sr;
	int i;
};

static void *rail_thread(void *p)
{
	struct rc_server_rails *sr = ((struct rail_run *)p)->sr;
	int i = ((struct rail_run *)p)->i;

	free(p);
	sr->rc[i] = rc_server_run(sr->s[i], sr->stop_fd, &sr->e[i]);
	return NULL;
}

int rc_server_rails_start(struct rc_server_rails *sr, struct rc_err *err)
{
	if (sr->n < 2)
		return 0;
	if ((sr->stop_fd = eventfd(0, EFD_CLOEXEC)) < 0)
		return rc_err_set(err, errno, "eventfd: %s", strerror(errno));
	for (int i = 1; i < sr->n; i++) {
		struct rail_run *p = malloc(sizeof(*p));
		int rc = p ? 0 : ENOMEM;

		if (p) {
			*p = (struct rail_run){ .sr = sr, .i = i };
			if ((rc = pthread_create(&sr->tid[i], NULL, rail_thread, p)))
				free(p);
		}
		if (rc)
			return rc_err_set(err, rc, "cannot start rail %d's server: %s", i + 1,
					  strerror(rc));
		sr->started = i;
	}
	return 0;
}

/* First failure kept: into err, returns rc (0: none yet, then this one). */
static int first_err(int rc, struct rc_err *err, int r, const struct rc_err *e, int rail)
{
	if (!r || rc)
		return rc;
	return rc_err_set(err, -r, "rail %d: %s", rail, e->msg);
}

int rc_server_rails_close(struct rc_server_rails *sr, struct rc_err *err)
{
	uint64_t one = 1;
	int rc = 0;

	if (!sr)
		return 0;
	if (sr->stop_fd >= 0 && write(sr->stop_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
		rc = rc_err_set(err, errno, "cannot stop the rails' servers: %s", strerror(errno));
	for (int i = 1; i <= sr->started; i++) {
		pthread_join(sr->tid[i], NULL);
		rc = first_err(rc, err, sr->rc[i], &sr->e[i], i + 1);
	}
	if (sr->stop_fd >= 0)
		close(sr->stop_fd);
	for (int i = sr->n - 1; i >= 1; i--) {
		struct rc_err e;

		rc = first_err(rc, err, rc_server_destroy(sr->s[i], &e), &e, i + 1);
	}
	if (sr->n > 1) { /* the first's own callback back */
		sr->s[0]->o.on_event = sr->on_event;
		sr->s[0]->o.arg = sr->arg;
	}
	pthread_mutex_destroy(&sr->mu);
	free(sr);
	return rc;
}
