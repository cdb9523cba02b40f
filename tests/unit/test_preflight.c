// SPDX-License-Identifier: MIT
/* preflight's verdict (libcore/sweep/preflight*.c) on crafted records: a
 * healthy set of three has no finding (and each planted fault is shown
 * found); one node's netdev MTU, one's rdma_cm RoCE mode, one's GID with no
 * netdev, one's rdma_ucm, one's locked-memory limit, each named with its
 * rank and reference; a tie names no majority; findings come errors first;
 * a hostile record is bounded; the expected figure of a rail. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/preflight.h>

#include "check.h"

#define W 3

static void healthy(struct rc_pf_node *n, int rank)
{
	memset(n, 0, sizeof(*n));
	n->rank = rank;
	n->loaded = 1;
	snprintf(n->hostname, sizeof(n->hostname), "node%d", rank);
	snprintf(n->dev, sizeof(n->dev), "mlx5_%d", rank);
	snprintf(n->kernel, sizeof(n->kernel), "6.1.0");
	snprintf(n->rdma_core, sizeof(n->rdma_core), "44.0");
	snprintf(n->rdmactl, sizeof(n->rdmactl), "0.1.0");
	snprintf(n->provider, sizeof(n->provider), "mlx5");
	snprintf(n->link_layer, sizeof(n->link_layer), "Ethernet");
	snprintf(n->state, sizeof(n->state), "ACTIVE");
	snprintf(n->rate, sizeof(n->rate), "100 Gb/sec (4X EDR)");
	n->rate_gbps = 100;
	n->port = 1;
	n->active_mtu = 4096;
	n->netdev_mtu = 9000;
	snprintf(n->netdev, sizeof(n->netdev), "eth%d", rank);
	snprintf(n->netdev_state, sizeof(n->netdev_state), "up");
	n->gid_index = 3;
	n->gid_found = 1;
	snprintf(n->gid_type, sizeof(n->gid_type), "RoCE v2");
	snprintf(n->gid_netdev, sizeof(n->gid_netdev), "eth%d", rank);
	n->roce_tos = -1;
	n->memlock_known = n->memlock_unlimited = 1;
	n->rdma_ucm = 1;
	n->huge_total = n->huge_free = -1;
	n->has_pci = 1;
	snprintf(n->nic_link.cur_speed, sizeof(n->nic_link.cur_speed), "16.0 GT/s PCIe");
	snprintf(n->nic_link.max_speed, sizeof(n->nic_link.max_speed), "16.0 GT/s PCIe");
	n->nic_link.cur_width = n->nic_link.max_width = 16;
}

static struct rc_pf_finding f[32];
static uint8_t differs[W * RC_PF_NSETTINGS];

static int judge(struct rc_pf_node *n, int world)
{
	struct rc_pf_limits lim = { .buffer = 64 << 20 };
	int nf = -1;

	CHECK(rc_pf_compare(n, world, &lim, f, 32, &nf, differs) == 0);
	return nf;
}

static void setting_differs(void)
{
	struct rc_pf_node n[W];

	for (int i = 0; i < W; i++)
		healthy(&n[i], i);
	CHECK(judge(n, W) == 0);
	n[1].netdev_mtu = 1500;
	n[1].active_mtu = 1024; /* follows it: not a finding of its own */
	CHECK(judge(n, W) == 1);
	CHECK_STR(f[0].check, "differs");
	CHECK_STR(f[0].setting, "netdev_mtu");
	CHECK(f[0].severity == RC_SEV_ERROR);
	CHECK(f[0].nranks == 1 && f[0].ranks[0] == 1);
	CHECK_STR(f[0].value, "1500");
	CHECK_STR(f[0].reference, "9000");
	CHECK_STR(f[0].nodes, "rank 1 (node1 mlx5_1)");
	CHECK(strstr(f[0].fix, "ip link set eth1 mtu 9000") != NULL);
	CHECK(differs[1 * RC_PF_NSETTINGS + RC_PF_NETDEV_MTU] && !differs[RC_PF_NETDEV_MTU]);
	healthy(&n[1], 1);
	/* the RoCE mode: unset is the kernel's RoCE v2, so one node set to v1 differs */
	snprintf(n[2].roce_mode, sizeof(n[2].roce_mode), "IB/RoCE v1");
	CHECK(judge(n, W) == 1);
	CHECK_STR(f[0].setting, "roce_mode");
	CHECK(f[0].ranks[0] == 2);
	CHECK(strstr(f[0].fix,
		     "echo 'RoCE v2' > /sys/kernel/config/rdma_cm/mlx5_2/ports/1/default_roce_mode") !=
	      NULL);
	healthy(&n[2], 2);
	/* two against one the other way: the majority is the reference */
	n[0].netdev_mtu = n[1].netdev_mtu = 1500;
	CHECK(judge(n, W) == 1);
	CHECK(f[0].ranks[0] == 2);
	CHECK_STR(f[0].reference, "1500");
	/* a tie of two: rank 0's value, said as no majority */
	CHECK(judge(n, 2) == 0);
	n[1].netdev_mtu = 9000;
	CHECK(judge(n, 2) == 1);
	CHECK(f[0].ranks[0] == 1 && strstr(f[0].message, "no majority"));
}

static void node_checks(void)
{
	struct rc_pf_node n[W];

	for (int i = 0; i < W; i++)
		healthy(&n[i], i);
	n[0].gid_found = 0;
	n[1].rdma_ucm = 0;
	n[2].memlock_unlimited = 0;
	n[2].memlock = 8 << 20;
	n[2].cap_ipc_lock = 0;
	CHECK(judge(n, W) == 4); /* and the memlock values differ: a note */
	CHECK_STR(f[0].check, "gid_netdev");
	CHECK(f[0].ranks[0] == 0);
	CHECK_STR(f[1].check, "rdma_ucm");
	CHECK(f[1].ranks[0] == 1);
	CHECK_STR(f[2].check, "memlock");
	CHECK(f[2].severity == RC_SEV_ERROR && f[2].ranks[0] == 2);
	CHECK(f[3].severity == RC_SEV_INFO && !strcmp(f[3].setting, "memlock"));
	/* errors first: a warning planted on rank 0 comes after them */
	n[0].nic_link.cur_width = 8;
	CHECK(judge(n, W) == 5);
	CHECK(f[3].severity == RC_SEV_WARNING && !strcmp(f[3].check, "pcie_link"));
	/* the CAP_IPC_LOCK holder's small limit is a warning */
	n[2].cap_ipc_lock = 1;
	CHECK(judge(n, W) == 5);
	CHECK(f[2].severity == RC_SEV_WARNING && !strcmp(f[2].check, "pcie_link"));
	CHECK(f[3].severity == RC_SEV_WARNING && !strcmp(f[3].check, "memlock"));
}

static void hostile(void)
{
	struct rc_pf_node n;
	char v[64];

	memset(&n, 'A', sizeof(n));
	n.rate_gbps = NAN;
	n.nic_link.cur_width = -5;
	n.ngpus = 1 << 30;
	rc_pf_node_bound(&n);
	CHECK(strlen(n.hostname) == sizeof(n.hostname) - 1);
	CHECK(strlen(n.nic_link.cur_speed) < sizeof(n.nic_link.cur_speed));
	CHECK(n.rate_gbps == 0 && n.nic_link.cur_width == 0 && n.ngpus <= 64);
	CHECK(n.loaded == 0 && n.netdev_mtu <= (1 << 20));
	for (int s = 0; s < RC_PF_NSETTINGS; s++)
		rc_pf_value(&n, s, v, sizeof(v));
	n.hostname[3] = '\n';
	rc_pf_node_bound(&n);
	CHECK(n.hostname[3] == '?');
	/* an unread record is one finding, and compares nothing */
	CHECK(judge(&n, 1) == 1);
	CHECK_STR(f[0].check, "facts");
}

static void expected(void)
{
	struct rc_pf_node a, b;

	healthy(&a, 0);
	healthy(&b, 1);
	/* 100 Gbit/s at MTU 4096 with 82 bytes of RoCE v2 headers */
	CHECK(fabs(rc_pf_expected_gbit(&a, &b) - 100.0 * 4096 / 4178) < 1e-9);
	/* a Gen4 x4 slot caps it: 16 GT/s x 4 x 128/130 x 256/280 */
	b.nic_link.cur_width = 4;
	CHECK(fabs(rc_pf_expected_gbit(&a, &b) - 16.0 * 4 * 128 / 130 * 256 / 280) < 1e-9);
	a.rate_gbps = b.rate_gbps = 0;
	CHECK(rc_pf_expected_gbit(&a, &b) == 0);
}

/* Two rails a node: rail 1 is compared with the others' rail 1, the
 * node's own settings on rail 0 only, and a finding names the node once. */
static void rails(void)
{
	static struct rc_pf_node n[2 * W];
	static uint8_t d[2 * W * RC_PF_NSETTINGS];
	struct rc_pf_limits lim = { .buffer = 64 << 20 };
	int nf = -1;

	for (int i = 0; i < 2 * W; i++) {
		healthy(&n[i], i / 2);
		n[i].rail = i % 2;
		n[i].rails = 2;
	}
	/* rail 1 on another MTU everywhere: like with like, no finding */
	for (int i = 1; i < 2 * W; i += 2)
		n[i].netdev_mtu = 4200;
	/* a host setting held by a rail > 0 is not the node's */
	snprintf(n[3].kernel, sizeof(n[3].kernel), "5.4.0");
	CHECK(rc_pf_compare(n, 2 * W, &lim, f, 32, &nf, d) == 0 && nf == 0);
	/* node 2's rail 1 differs: named as rank 2, its record marked */
	n[5].netdev_mtu = 1500;
	CHECK(rc_pf_compare(n, 2 * W, &lim, f, 32, &nf, d) == 0 && nf == 1);
	CHECK_STR(f[0].setting, "netdev_mtu");
	CHECK(f[0].nranks == 1 && f[0].ranks[0] == 2);
	CHECK_STR(f[0].reference, "4200");
	CHECK(strstr(f[0].message, "on their rail 1") != NULL);
	CHECK(d[5 * RC_PF_NSETTINGS + RC_PF_NETDEV_MTU] &&
	      !d[4 * RC_PF_NSETTINGS + RC_PF_NETDEV_MTU]);
	/* a node's own check (rdma_ucm) once, from its rail 0 */
	n[5].netdev_mtu = 4200;
	n[2].rdma_ucm = n[3].rdma_ucm = 0;
	CHECK(rc_pf_compare(n, 2 * W, &lim, f, 32, &nf, d) == 0 && nf == 1);
	CHECK(!strcmp(f[0].check, "rdma_ucm") && f[0].ranks[0] == 1);
}

int main(void)
{
	setting_differs();
	rails();
	node_checks();
	hostile();
	expected();
	CHECK_DONE();
}
