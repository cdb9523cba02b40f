// SPDX-License-Identifier: MIT
/* The topology's pure parts: path classes, the rate file, the GID choice. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <rdmactl/parse.h>
#include <rdmactl/topo.h>
#include <rdmactl/parse_core.h>
#include <rdmactl/topo_core.h>

#define CHECK(cond) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			return 1; \
		} \
	} while (0)

#define SW0 "devices/pci0000:00/0000:00:01.0/0000:01:00.0"
#define TOP1 "devices/pci0000:80/0000:80:01.0/0000:81:00.0"

static int test_classify(void)
{
	/* One switch: GPU and NIC on two downstream ports. */
	CHECK(rc_topo_classify(SW0 "/0000:02:00.0/0000:03:00.0", 0,
			       SW0 "/0000:02:01.0/0000:04:00.0", 0, 2) == RC_PATH_PIX);
	/* Two functions of one device, or two devices below one port. */
	CHECK(rc_topo_classify(SW0 "/0000:02:00.0/0000:03:00.0", 0,
			       SW0 "/0000:02:00.0/0000:03:00.1", 0, 2) == RC_PATH_PIX);
	/* Sibling leaf switches below one top switch. */
	CHECK(rc_topo_classify(TOP1 "/0000:82:00.0/0000:83:00.0/0000:84:00.0/0000:85:00.0", 1,
			       TOP1 "/0000:82:01.0/0000:87:00.0/0000:88:01.0/0000:8a:00.0", 1,
			       2) == RC_PATH_PXB);
	/* One leaf of them. */
	CHECK(rc_topo_classify(TOP1 "/0000:82:00.0/0000:83:00.0/0000:84:00.0/0000:85:00.0", 1,
			       TOP1 "/0000:82:00.0/0000:83:00.0/0000:84:01.0/0000:86:00.0", 1,
			       2) == RC_PATH_PIX);
	/* Two root ports of one host bridge. */
	CHECK(rc_topo_classify(SW0 "/0000:02:00.0/0000:03:00.0", 0,
			       "devices/pci0000:00/0000:00:03.0/0000:09:00.0", 0, 2) == RC_PATH_PHB);
	/* Two host bridges of one NUMA node, then of two. */
	CHECK(rc_topo_classify(SW0 "/0000:02:00.0/0000:03:00.0", 0,
			       "devices/pci0000:40/0000:40:01.0/0000:41:00.0", 0,
			       2) == RC_PATH_NODE);
	CHECK(rc_topo_classify(SW0 "/0000:02:00.0/0000:03:00.0", 0,
			       "devices/pci0000:80/0000:80:01.0/0000:81:00.0", 1, 2) == RC_PATH_SYS);
	/* An unknown NUMA node: NODE on a one-node host, SYS where it matters. */
	CHECK(rc_topo_classify("devices/pci0000:00/0000:00:01.0/0000:01:00.0", -1,
			       "devices/pci0000:40/0000:40:01.0/0000:41:00.0", 0,
			       1) == RC_PATH_NODE);
	CHECK(rc_topo_classify("devices/pci0000:00/0000:00:01.0/0000:01:00.0", -1,
			       "devices/pci0000:40/0000:40:01.0/0000:41:00.0", 0, 2) == RC_PATH_SYS);
	/* Symmetric. */
	CHECK(rc_topo_classify(SW0 "/0000:02:01.0/0000:04:00.0", 0,
			       SW0 "/0000:02:00.0/0000:03:00.0", 0, 2) == RC_PATH_PIX);
	/* Absolute /sys paths work the same. */
	CHECK(rc_topo_classify("/sys/" SW0 "/0000:02:00.0/0000:03:00.0", 0,
			       "/sys/" SW0 "/0000:02:01.0/0000:04:00.0", 0, 2) == RC_PATH_PIX);
	/* No PCI parent. */
	CHECK(rc_topo_classify("devices/virtual/net/d0", -1, SW0, 0, 1) == RC_PATH_NA);
	CHECK(rc_topo_classify(NULL, 0, SW0, 0, 1) == RC_PATH_NA);
	CHECK(rc_topo_classify("", 0, "", 0, 1) == RC_PATH_NA);
	/* Behind Intel VMD: a domain of its own. */
	CHECK(rc_topo_classify(
		      "devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:1d.0/10000:e1:00.0", 0,
		      "devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:1d.0/10000:e1:00.1", 0,
		      1) == RC_PATH_PIX);
	CHECK(rc_topo_classify(
		      "devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:1d.0/10000:e1:00.0", 0,
		      "devices/pci0000:00/0000:00:01.0/0000:01:00.0", 0, 1) == RC_PATH_NODE);
	/* Malformed components are no bridges. */
	CHECK(rc_topo_classify("devices/pci0000:00/zz:00:01.0/0000:01:00.0", 0,
			       "devices/pci0000:00/0000:00:01.0/0000:01:00.1", 0, 1) == RC_PATH_PHB);
	CHECK(!strcmp(rc_topo_path_name(RC_PATH_PXB), "PXB"));
	CHECK(!strcmp(rc_topo_path_name(RC_PATH_NA), "N/A"));
	return 0;
}

static int test_rate(void)
{
	char w[8], s[16];
	double g;

	CHECK(!rc_topo_parse_rate("400 Gb/sec (4X NDR)", &g, w, sizeof(w), s, sizeof(s)));
	CHECK(g == 400 && !strcmp(w, "4X") && !strcmp(s, "NDR"));
	CHECK(!rc_topo_parse_rate("2.5 Gb/sec (1X SDR)", &g, w, sizeof(w), s, sizeof(s)));
	CHECK(g == 2.5 && !strcmp(w, "1X") && !strcmp(s, "SDR"));
	CHECK(!rc_topo_parse_rate("10 Gb/sec (4X)", &g, w, sizeof(w), s, sizeof(s)));
	CHECK(g == 10 && !strcmp(w, "4X") && !s[0]);
	CHECK(!rc_topo_parse_rate("25 Gb/sec", &g, w, sizeof(w), s, sizeof(s)));
	CHECK(g == 25 && !w[0] && !s[0]);
	CHECK(rc_topo_parse_rate("", &g, w, sizeof(w), s, sizeof(s)));
	CHECK(rc_topo_parse_rate("Unknown", &g, w, sizeof(w), s, sizeof(s)) && g == 0);
	CHECK(rc_topo_parse_rate("-1 Gb/sec", &g, w, sizeof(w), s, sizeof(s)));
	/* Too long a width or speed is cut, never overflows. */
	CHECK(!rc_topo_parse_rate("1 Gb/sec (123456789012345678 12345678901234567890123456789012345)",
				  &g, w, sizeof(w), s, sizeof(s)));
	CHECK(strlen(w) < sizeof(w) && strlen(s) < sizeof(s));
	return 0;
}

static void set_gid(struct rc_topo_gid *g, int idx, const char *type, unsigned char b0,
		    unsigned char b1, int v4)
{
	memset(g, 0, sizeof(*g));
	g->index = idx;
	snprintf(g->type, sizeof(g->type), "%s", type);
	g->raw[0] = b0;
	g->raw[1] = b1;
	if (v4) {
		g->raw[0] = g->raw[1] = 0;
		g->raw[10] = g->raw[11] = 0xff;
		g->raw[12] = 198;
	}
	g->raw[15] = 1;
}

static int test_pick_gid(void)
{
	struct rc_topo_gid gids[5];
	struct rc_topo_port p = { .gids = gids };

	snprintf(p.link_layer, sizeof(p.link_layer), "Ethernet");
	set_gid(&gids[0], 0, "RoCE v1", 0xfe, 0x80, 0);
	set_gid(&gids[1], 1, "RoCE v2", 0xfe, 0x80, 0);
	set_gid(&gids[2], 2, "RoCE v1", 0, 0, 1);
	set_gid(&gids[3], 5, "RoCE v2", 0x20, 0x01, 0);
	set_gid(&gids[4], 7, "RoCE v2", 0, 0, 1);
	p.ngids = 5;
	CHECK(rc_topo_pick_gid(&p) == 7); /* RoCE v2 with an IPv4 address */
	p.ngids = 4;
	CHECK(rc_topo_pick_gid(&p) == 5); /* then a global RoCE v2 */
	p.ngids = 3;
	CHECK(rc_topo_pick_gid(&p) == 1); /* then a link-local one */
	p.ngids = 1;
	CHECK(rc_topo_pick_gid(&p) == -1); /* never RoCE v1 */
	p.ngids = 0;
	CHECK(rc_topo_pick_gid(&p) == -1);
	snprintf(p.link_layer, sizeof(p.link_layer), "InfiniBand");
	set_gid(&gids[0], 0, "IB", 0xfe, 0x80, 0);
	p.ngids = 1;
	CHECK(rc_topo_pick_gid(&p) == 0);
	return 0;
}

static int test_pci_order(void)
{
	/* strverscmp reads "3b" as 3 then b, so it sorts 3b before 34. */
	CHECK(rc_pci_addr_cmp("0000:34:00.0", "0000:3b:00.0") < 0);
	CHECK(rc_pci_addr_cmp("0000:3b:00.0", "0000:34:00.0") > 0);
	CHECK(rc_pci_addr_cmp("0000:85:00.0", "0000:8a:00.0") < 0);
	CHECK(rc_pci_addr_cmp("0000:9a:00.0", "0000:a1:00.0") < 0);
	CHECK(rc_pci_addr_cmp("0000:ff:1f.7", "0001:00:00.0") < 0); /* domain first */
	CHECK(rc_pci_addr_cmp("0000:18:00.0", "0000:18:01.0") < 0); /* then device */
	CHECK(rc_pci_addr_cmp("0000:18:00.1", "0000:18:00.0") > 0); /* then function */
	/* NVML's spelling: an 8-digit domain, capitals. */
	CHECK(rc_pci_addr_cmp("00000000:3B:00.0", "0000:3b:00.0") == 0);
	CHECK(rc_pci_addr_cmp("10000:e0:00.0", "0000:e0:00.0") > 0); /* VMD domain */
	CHECK(rc_pci_addr_cmp("0000:34:00.0", "virtual") < 0);
	return 0;
}

/* Sum and busiest NIC of a plan; -1 when a usable GPU got nothing. */
static long plan_score(int ng, int nn, const int *cost, const int *a, int *maxload)
{
	int load[8] = { 0 };
	long sum = 0;

	*maxload = 0;
	for (int g = 0; g < ng; g++) {
		if (a[g] < 0)
			continue;
		if (a[g] >= nn || cost[g * nn + a[g]] < 0)
			return -1;
		sum += cost[g * nn + a[g]];
		if (++load[a[g]] > *maxload)
			*maxload = load[a[g]];
	}
	return sum;
}

/* Every plan, the best by (sum, busiest NIC). */
static void exhaustive(int ng, int nn, const int *cost, long *best_sum, int *best_load)
{
	int a[8], total = 1;

	for (int g = 0; g < ng; g++)
		total *= nn;
	*best_sum = -1;
	for (int code = 0; code < total; code++) {
		int c = code, ml, bad = 0;
		long s;

		for (int g = 0; g < ng; g++, c /= nn) {
			a[g] = c % nn;
			if (cost[g * nn + a[g]] < 0) {
				bool any = false;

				for (int n = 0; n < nn; n++)
					any |= cost[g * nn + n] >= 0;
				if (any)
					bad = 1;
				a[g] = -1;
			}
		}
		if (bad)
			continue;
		s = plan_score(ng, nn, cost, a, &ml);
		if (s >= 0 &&
		    (*best_sum < 0 || s < *best_sum || (s == *best_sum && ml < *best_load))) {
			*best_sum = s;
			*best_load = ml;
		}
	}
}

static int test_assign(void)
{
	int a[8], ml;

	/* Greedy in GPU order (closest NIC, ties to the least loaded, then the
	 * first) puts GPU0 and GPU1 on NIC0 and leaves NIC2 idle. Optimal, by
	 * hand: GPU0 -> NIC1, GPU1 -> NIC0, GPU2 -> NIC2, sum 0, one each. */
	static const int c1[] = { 0, 0, 2, 0, 2, 2, 2, 0, 0 };
	CHECK(!rc_topo_assign(3, 3, c1, a));
	CHECK(a[0] == 1 && a[1] == 0 && a[2] == 2);
	/* Two GPUs equally close to two NICs, the second GPU only to NIC0:
	 * greedy gives both NIC0; optimal GPU0 -> NIC1. */
	static const int c2[] = { 0, 0, 0, 3 };
	CHECK(!rc_topo_assign(2, 2, c2, a));
	CHECK(a[0] == 1 && a[1] == 0);
	/* The sum comes first: sharing a PIX NIC beats a SYS one of its own. */
	static const int c3[] = { 0, 4, 0, 4 };
	CHECK(!rc_topo_assign(2, 2, c3, a));
	CHECK(a[0] == 0 && a[1] == 0);
	/* More GPUs than NICs, all equal: the load is spread 2 and 1. */
	static const int c4[] = { 0, 0, 0, 0, 0, 0 };
	CHECK(!rc_topo_assign(3, 2, c4, a));
	CHECK(plan_score(3, 2, c4, a, &ml) == 0 && ml == 2);
	/* A GPU that can use no NIC gets none; the others are still placed. */
	static const int c5[] = { -1, -1, 1, 0 };
	CHECK(!rc_topo_assign(2, 2, c5, a));
	CHECK(a[0] == -1 && a[1] == 1);
	CHECK(!rc_topo_assign(0, 2, NULL, NULL));
	CHECK(rc_topo_assign(-1, 2, c5, a) == -EINVAL);
	/* Against every plan, on repeatable pseudo-random small cases. */
	unsigned int seed = 12345;

	for (int round = 0; round < 400; round++) {
		int ng = 1 + round % 6, nn = 1 + (round / 6) % 4, cost[24];
		long want, got;
		int want_load = 0;

		for (int i = 0; i < ng * nn; i++) {
			seed = seed * 1103515245u + 12345u;
			cost[i] = (int)((seed >> 16) % 7) - 1; /* -1 unusable, 0..5 */
		}
		CHECK(!rc_topo_assign(ng, nn, cost, a));
		exhaustive(ng, nn, cost, &want, &want_load);
		got = plan_score(ng, nn, cost, a, &ml);
		if (want >= 0) {
			if (got != want || ml != want_load)
				fprintf(stderr,
					"round %d: %d GPUs x %d NICs: sum %ld load %d, best %ld load %d\n",
					round, ng, nn, got, ml, want, want_load);
			CHECK(got == want && ml == want_load);
		}
	}
	return 0;
}

int main(void)
{
	int failed = 0;

	failed += test_pci_order();
	failed += test_assign();

	failed += test_classify();
	failed += test_rate();
	failed += test_pick_gid();
	if (failed)
		fprintf(stderr, "%d test group(s) failed\n", failed);
	return failed ? 1 : 0;
}
