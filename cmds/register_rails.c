// SPDX-License-Identifier: MIT
/* rdmactl register's report of its rails (--listen ADDR1,ADDR2, -d
 * DEV1,DEV2): each rail of a region, and each rail's counters. The rails
 * themselves, a server each serving the first's regions, are libcore's
 * (rc_server_rails). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <rdmactl/server.h>

#include "register.h"

/* One rail of a region: its device, where it listens, its rkey. */
static void rail_entry(struct out *o, struct rc_server *s, const struct rc_region *r, bool first)
{
	const struct rc_listener *l = rc_server_listener(s);
	char rkey[16];

	snprintf(rkey, sizeof(rkey), "0x%x", r->d.rkey);
	out_obj_begin(o, NULL);
	out_str(o, "device", first ? " %s" : ", %s", rc_listener_device(l));
	out_str(o, "address", " %s", rc_listener_addr(l));
	out_u64(o, "port", ":%llu", rc_listener_port(l));
	out_str(o, "gid", NULL, rc_server_gid(s)->str);
	out_u64(o, "rkey", NULL, r->d.rkey);
	out_str(o, "rkey_hex", " rkey %s", rkey);
	out_obj_end(o);
}

void register_rails_print(struct ctx *ctx, const struct register_args *a, struct rc_server *s, int i)
{
	struct out *o = &ctx->out;

	if (!a->rails || rc_server_rails_count(a->rails) < 2)
		return;
	out_arr_begin(o, "rails");
	out_text(o, " rails");
	rail_entry(o, s, rc_server_region(s, i), true);
	for (int k = 1; k < rc_server_rails_count(a->rails); k++) {
		struct rc_server *r = rc_server_rails_server(a->rails, k);

		rail_entry(o, r, rc_server_region(r, i), false);
	}
	out_arr_end(o);
}
