// SPDX-License-Identifier: MIT
/* A region served on several rails: the same memory, registered once more
 * on the protection domain of another server's device (rdmactl-register(8),
 * --listen ADDR1,ADDR2), GPU memory by the path its first registration took.
 * Each rail's server runs on a thread of its own, with a migration state of
 * its own: a move through one rail would leave the others serving (and
 * registering) the memory it frees, so such a region is never moved live
 * (srv_mig_step.c refuses its TRACK, on every rail). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

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
