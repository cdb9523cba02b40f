// SPDX-License-Identifier: MIT
/*
 * register's GID choice (rc_gid_pick over what ibv_query_gid_ex reports)
 * and probe-topology's recommendation (read from sysfs) agree on every port
 * of every fixture tree. The entries are built as rdma-core builds them from
 * the same sysfs files: "IB/RoCE v1" is IB on an InfiniBand port, RoCE v1
 * on Ethernet.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/dev.h>
#include <rdmactl/topo.h>
#include <rdmactl/dev_core.h>

#include "check.h"

static const char *const trees[] = { "two-socket-8gpu", "shared-nic" };

static int entry_type(const char *sysfs_type, bool ib_link)
{
	if (!strcmp(sysfs_type, "RoCE v2"))
		return IBV_GID_TYPE_ROCE_V2;
	return ib_link ? IBV_GID_TYPE_IB : IBV_GID_TYPE_ROCE_V1;
}

static int check_port(const char *tree, const struct rc_topo_dev *d, const struct rc_topo_port *p)
{
	struct ibv_gid_entry e[RC_TOPO_MAX_GIDS];
	bool ib_link = !strcmp(p->link_layer, "InfiniBand");
	int best, chosen;

	for (int i = 0; i < p->ngids; i++) {
		memset(&e[i], 0, sizeof(e[i]));
		e[i].gid_index = (uint32_t)p->gids[i].index;
		e[i].port_num = (uint32_t)p->num;
		e[i].gid_type = (uint32_t)entry_type(p->gids[i].type, ib_link);
		CHECK(inet_pton(AF_INET6, p->gids[i].gid, e[i].gid.raw) == 1);
	}
	best = rc_gid_choose(ib_link, e, p->ngids);
	chosen = best < 0 ? -1 : (int)e[best].gid_index;
	if (chosen != p->rec_gid)
		fprintf(stderr,
			"%s: %s port %d: register picks GID %d, probe-topology recommends %d\n",
			tree, d->name, p->num, chosen, p->rec_gid);
	CHECK(chosen == p->rec_gid);
	return chosen >= 0;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : getenv("RDMACTL_FIXTURES");
	int ports = 0, chosen = 0, unusable = 0;

	if (!dir) {
		fprintf(stderr, "give the fixtures folder (RDMACTL_FIXTURES)\n");
		return 1;
	}
	for (size_t t = 0; t < sizeof(trees) / sizeof(trees[0]); t++) {
		struct rc_topo_opts o = { 0 };
		struct rc_topo *topo = NULL;
		char root[4400];
		struct rc_err e;

		snprintf(root, sizeof(root), "%s/%s", dir, trees[t]);
		o.root = root;
		if (rc_topo_load(&o, &topo, &e)) {
			fprintf(stderr, "cannot load %s: %s\n", root, e.msg);
			return 1;
		}
		for (int d = 0; d < topo->ndevs; d++)
			for (int p = 0; p < topo->devs[d].nports; p++) {
				int r = check_port(trees[t], &topo->devs[d],
						   &topo->devs[d].ports[p]);

				ports++;
				chosen += r == 1;
				unusable += r == 0;
			}
		rc_topo_free(topo);
	}
	/* The fixtures hold both kinds of port: a test over none proves nothing. */
	CHECK(ports > 10 && chosen > 0 && unusable > 0);
	/* The ranking itself, on a RoCE port. */
	static const unsigned char v4[16] = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 1 };
	static const unsigned char ll[16] = { 0xfe, 0x80, [15] = 1 };
	static const unsigned char gl[16] = { 0x20, 0x01, [15] = 1 };

	CHECK(rc_gid_rank(false, IBV_GID_TYPE_ROCE_V2, v4) <
	      rc_gid_rank(false, IBV_GID_TYPE_ROCE_V2, gl));
	CHECK(rc_gid_rank(false, IBV_GID_TYPE_ROCE_V2, gl) <
	      rc_gid_rank(false, IBV_GID_TYPE_ROCE_V2, ll));
	CHECK(rc_gid_rank(false, IBV_GID_TYPE_ROCE_V1, v4) < 0);
	CHECK(rc_gid_rank(true, IBV_GID_TYPE_IB, ll) == 0);
	CHECK_DONE();
}
