// SPDX-License-Identifier: MIT
/*
 * A rendezvous without RDMA, for the etcd tests (tests/cli/rendezvous.bats):
 *   rdv_probe URL RANK WORLD ADDR:PORT TIMEOUT_MS [HOLD_MS]
 * publishes ADDR:PORT as RANK, waits for all, prints "RANK ADDR:PORT" for
 * each, holds its claim HOLD_MS more, then leaves. Exit 0, or 1 with the
 * error on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <rdmactl/group.h>
#include <rdmactl/group_core.h>

#include "cmds.h"

int main(int argc, char **argv)
{
	struct rc_endpoint self, all[RC_GROUP_MAX];
	struct rc_rdv *r;
	struct rc_err e;
	int rank, world, timeout;

	cmds_config_load(); /* the etcd settings, RDMACTL_ETCD_* */
	if (argc < 6) {
		fprintf(stderr, "usage: rdv_probe URL RANK WORLD ADDR:PORT TIMEOUT_MS [HOLD_MS]\n");
		return 2;
	}
	rank = atoi(argv[2]);
	world = atoi(argv[3]);
	timeout = atoi(argv[5]);
	if (rc_endpoint_parse(argv[4], &self) || world < 1 || world > RC_GROUP_MAX) {
		fprintf(stderr, "rdv_probe: bad endpoint or world\n");
		return 2;
	}
	gethostname(self.hostname, sizeof(self.hostname) - 1);
	if (rc_rdv_open(argv[1], rank, world, timeout, &r, &e)) {
		fprintf(stderr, "rdv_probe: %s\n", e.msg);
		return 1;
	}
	if (rc_rdv_exchange(r, &self, all, &e)) {
		fprintf(stderr, "rdv_probe: %s\n", e.msg);
		rc_rdv_close(r);
		return 1;
	}
	for (int i = 0; i < world; i++)
		printf("%d %s:%s %s\n", i, all[i].host, all[i].port, all[i].hostname);
	fflush(stdout);
	if (argc > 6)
		usleep((useconds_t)atoi(argv[6]) * 1000);
	rc_rdv_close(r);
	return 0;
}
