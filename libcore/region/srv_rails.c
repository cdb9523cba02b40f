// SPDX-License-Identifier: MIT
/* A region served on several rails: the same memory, registered once more
 * on the protection domain of another server's device (rdmactl-register(8),
 * --listen ADDR1,ADDR2). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rdmactl/server.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/mem_core.h>

#include "server_int.h"

int rc_server_share_region(struct rc_server *s, const struct rc_region *from, struct rc_err *err)
{
	struct rc_region *r;

	if (from->mem.kind == RC_MEM_CUDA)
		return rc_err_set(err, ENOTSUP,
				  "region '%s': GPU memory is served on one rail only (for now)",
				  from->d.name);
	for (int i = 0; i < s->nregions; i++)
		if (!strcmp(s->regions[i].d.name, from->d.name))
			return rc_err_set(err, EEXIST, "a region named '%s' is already served",
					  from->d.name);
	if (s->nregions >= RC_MAX_REGIONS)
		return rc_err_set(err, ENOSPC, "at most %d regions per server", RC_MAX_REGIONS);
	r = &s->regions[s->nregions];
	memset(r, 0, sizeof(*r));
	r->mem = from->mem;
	r->shared = true;
	errno = 0;
	r->mr = ibv_reg_mr(s->l->pd, from->mem.buf, from->mem.len, rc_access_ibv(from->d.access));
	if (!r->mr) {
		int e = errno ? errno : EIO;

		return rc_err_set(err, e, "cannot register region '%s' (%zu bytes) on %s: %s",
				  from->d.name, from->mem.len, s->l->dev_name, strerror(e));
	}
	r->d = from->d;
	r->d.rkey = r->mr->rkey;
	snprintf(r->path, sizeof(r->path), "%s", from->path);
	s->nregions++;
	return 0;
}
