// SPDX-License-Identifier: MIT
/*
 * The topology read from the fixture trees of tests/fixtures/make-sysfs.sh
 * (ctest builds them first and passes their folder in RDMACTL_FIXTURES, or
 * give it as the first argument), bad trees, and a capture round trip.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdmactl/topo.h>

#include "cmds.h"

#define CHECK(cond) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			goto fail; \
		} \
	} while (0)

static char fixtures[4096];

static struct rc_topo *load(const char *name, bool hugepages)
{
	struct rc_topo_opts o = { .hugepages = hugepages };
	struct rc_topo *t = NULL;
	char root[4400];
	struct rc_err e;

	snprintf(root, sizeof(root), "%s/%s", fixtures, name);
	o.root = root;
	if (rc_topo_load(&o, &t, &e)) {
		fprintf(stderr, "cannot load %s: %s\n", root, e.msg);
		return NULL;
	}
	return t;
}

static int dev_index(const struct rc_topo *t, const char *name)
{
	for (int d = 0; d < t->ndevs; d++)
		if (!strcmp(t->devs[d].name, name))
			return d;
	return -1;
}

static int nfind(const struct rc_topo *t, const char *check)
{
	int n = 0;

	for (int i = 0; i < t->nfindings; i++)
		n += !strcmp(t->findings[i].check, check);
	return n;
}

static int test_two_socket(void)
{
	struct rc_topo *t = load("two-socket-8gpu", false);
	const struct rc_topo_port *p;

	CHECK(t);
	CHECK(t->ndevs == 9 && t->ngpus == 8 && t->nnuma == 2); /* the NVSwitch is no GPU */
	CHECK(!strcmp(t->devs[0].provider, "mlx5") && !strcmp(t->devs[0].driver, "mlx5_core"));
	CHECK(!strcmp(t->devs[0].fw_ver, "28.39.1002") && !strcmp(t->devs[0].node_type, "CA"));
	CHECK(!strcmp(t->devs[0].pci.addr, "0000:04:00.0") && t->devs[0].pci.numa_node == 0);
	CHECK(t->devs[0].pci.cur_width == 16 && !strcmp(t->devs[0].pci.max_speed, "32.0 GT/s PCIe"));
	p = &t->devs[0].ports[0];
	CHECK(t->devs[0].nports == 1 && p->num == 1 && !strcmp(p->state, "ACTIVE"));
	CHECK(!strcmp(p->phys_state, "LinkUp") && !strcmp(p->link_layer, "InfiniBand"));
	CHECK(p->rate_gbps == 400 && !strcmp(p->width, "4X") && !strcmp(p->speed, "NDR"));
	CHECK(p->lid == 1 && p->sm_lid == 1 && p->active_mtu == 4096);
	CHECK(p->ngids == 1 && !strcmp(p->gids[0].type, "IB") && p->rec_gid == 0);
	CHECK(!strcmp(p->netdev, "ibp04s0") && p->netdev_mtu == 2044 && p->naddrs == 1);
	CHECK(!strcmp(p->addrs[0], "10.1.0.1/16"));
	CHECK(!strcmp(t->gpus[0].name, "NVIDIA H100 80GB HBM3") && t->gpus[0].uuid[0]);
	/* The matrix: every class in one tree. */
	CHECK(t->matrix[0][0] == RC_PATH_PIX && t->matrix[0][1] == RC_PATH_PHB);
	CHECK(t->matrix[0][2] == RC_PATH_NODE && t->matrix[0][4] == RC_PATH_SYS);
	CHECK(t->matrix[4][5] == RC_PATH_PXB && t->matrix[4][6] == RC_PATH_NODE);
	CHECK(t->matrix[0][8] == RC_PATH_PHB && t->matrix[2][8] == RC_PATH_NODE);
	for (int g = 0; g < 8; g++) {
		CHECK(t->matrix[g][g] == RC_PATH_PIX);
		CHECK(t->rails[g].dev == g && t->rails[g].path == RC_PATH_PIX);
		CHECK(t->rails[g].shared == 1 && !t->rails[g].cross_socket);
	}
	/* The management NIC: Ethernet, RoCE v2 on its IPv4 address. */
	p = &t->devs[8].ports[0];
	CHECK(!strcmp(p->link_layer, "Ethernet") && p->ngids == 4 && p->rec_gid == 3);
	CHECK(!strcmp(p->gids[3].type, "RoCE v2") && !strcmp(p->gids[3].gid, "::ffff:192.168.10.5"));
	CHECK(!strcmp(p->gids[0].type, "RoCE v1") && !strcmp(p->gids[0].netdev, "eno1"));
	/* A healthy host: only the 1500-byte MTU is worth a word. */
	CHECK(t->nfindings == 1 && nfind(t, "mtu") == 1);
	CHECK(t->findings[0].severity == RC_SEV_INFO);
	rc_topo_free(t);
	return 0;
fail:
	rc_topo_free(t);
	return 1;
}

static int test_shared_nic(void)
{
	struct rc_topo *t = load("shared-nic", true);
	int rxe, m1;

	CHECK(t);
	CHECK(t->ndevs == 3 && t->ngpus == 3);
	rxe = dev_index(t, "rxe0");
	m1 = dev_index(t, "mlx5_1");
	CHECK(rxe == 2 && m1 == 1);
	CHECK(!strcmp(t->devs[rxe].provider, "rxe") && !t->devs[rxe].has_pci);
	CHECK(!strcmp(t->devs[rxe].parent_netdev, "d0") &&
	      !strcmp(t->devs[rxe].ports[0].netdev, "d0"));
	CHECK(t->devs[rxe].ports[0].rec_gid == 3 && t->devs[rxe].ports[0].netdev_mtu == 9000);
	for (int g = 0; g < 3; g++)
		CHECK(t->matrix[g][rxe] == RC_PATH_NA);
	CHECK(t->rails[0].dev == 0 && t->rails[1].dev == 0 && t->rails[0].shared == 3);
	/* mlx5_1 is as close to GPU2 as mlx5_0, but its port is down. */
	CHECK(t->rails[2].dev == 0 && t->rails[2].dev != m1);
	CHECK(t->rails[2].path == RC_PATH_SYS && t->rails[2].cross_socket);
	CHECK(t->devs[m1].ports[0].rec_gid == -1);
	CHECK(nfind(t, "memlock") == 1 && nfind(t, "port_down") == 1);
	CHECK(nfind(t, "roce_v2_gid") == 1 && nfind(t, "gpudirect") == 1);
	CHECK(nfind(t, "pcie_link") == 1 && nfind(t, "rail_shared") == 1);
	CHECK(nfind(t, "rail_cross_socket") == 1 && nfind(t, "hugepages") == 1);
	CHECK(nfind(t, "mtu") == 1); /* mlx5_0 at 1024 on a 9000 netdev; rxe0 is fine */
	for (int i = 1; i < t->nfindings; i++)
		CHECK(t->findings[i - 1].severity >= t->findings[i].severity);
	rc_topo_free(t);
	t = load("shared-nic", false);
	CHECK(t && nfind(t, "hugepages") == 0);
	rc_topo_free(t);
	return 0;
fail:
	rc_topo_free(t);
	return 1;
}

static int gpu_at(const struct rc_topo *t, const char *addr)
{
	for (int g = 0; g < t->ngpus; g++)
		if (!strcmp(t->gpus[g].pci.addr, addr))
			return g;
	return -1;
}

/* Point the fake NVML (RDMACTL_NVML_LIB, from ctest) at a configuration
 * beside the trees, or at none. */
static bool fake_nvml(const char *cfg)
{
	static char path[4400];
	const char *lib = getenv("RDMACTL_NVML_LIB");

	if (!cfg) {
		unsetenv("RDMACTL_FAKE_NVML");
		return true;
	}
	if (!lib || !*lib) {
		fprintf(stderr,
			"RDMACTL_NVML_LIB is not set: run under ctest, or point it at libfakenvml.so\n");
		return false;
	}
	snprintf(path, sizeof(path), "%s/%s", fixtures, cfg);
	return !setenv("RDMACTL_FAKE_NVML", path, 1);
}

/* Hex bus numbers: GPUs numbered as numbers (34, 3b, 85, 8a), not names. */
static int test_hex_bus(void)
{
	struct rc_topo *t = NULL;
	static const char *const order[] = { "0000:34:00.0", "0000:3b:00.0", "0000:85:00.0",
					     "0000:8a:00.0" };
	int m0, m1;

	CHECK(fake_nvml(NULL));
	t = load("hex-bus", false);
	CHECK(t && t->ngpus == 4 && t->ndevs == 2 && !t->nvml);
	for (int g = 0; g < 4; g++) {
		CHECK(!strcmp(t->gpus[g].pci.addr, order[g]));
		CHECK(t->gpus[g].nvml_index == -1);
	}
	CHECK(!strcmp(t->gpus[0].uuid, "GPU-hexb0000-0000-0000-0000-340000000000"));
	m0 = dev_index(t, "mlx5_0");
	m1 = dev_index(t, "mlx5_1");
	CHECK(m0 == 0 && m1 == 1); /* NICs stay in name order... */
	CHECK(t->nnic_pci == 2 && t->nic_pci_order[0] == m1 && t->nic_pci_order[1] == m0);
	CHECK(t->gpu_matrix[0][1] == RC_PATH_PIX && t->gpu_matrix[2][3] == RC_PATH_PIX);
	CHECK(t->gpu_matrix[0][2] == RC_PATH_SYS && t->gpu_matrix[3][1] == RC_PATH_SYS);
	CHECK(t->matrix[0][m1] == RC_PATH_PIX && t->matrix[0][m0] == RC_PATH_SYS);
	CHECK(t->rails[0].dev == m1 && t->rails[1].dev == m1);
	CHECK(t->rails[2].dev == m0 && t->rails[3].dev == m0);
	for (int g = 0; g < 4; g++) {
		CHECK(t->rails[g].shared == 2 && t->rails[g].shared_by_design);
		CHECK(t->rails[g].best_dev == t->rails[g].dev && t->rails[g].path == RC_PATH_PIX);
		for (int h = 0; h < 4; h++)
			CHECK(t->nvlinks[g][h] == 0); /* no NVML: no counts */
	}
	CHECK(nfind(t, "rail_shared") == 2 && nfind(t, "gpu_order") == 0);
	rc_topo_free(t);
	/* NVML agrees with PCI order and adds NV4 between switch mates. */
	CHECK(fake_nvml("hex-bus.nvml"));
	t = load("hex-bus", false);
	CHECK(t && t->nvml);
	for (int g = 0; g < 4; g++)
		CHECK(t->gpus[g].nvml_index == g && t->gpus[g].nvswitch_links == 0);
	CHECK(!strcmp(t->gpus[1].uuid, "GPU-nvml0000-0000-0000-0000-3b0000000000"));
	CHECK(!strcmp(t->gpus[1].name, "NVIDIA A100-SXM4-80GB"));
	CHECK(t->nvlinks[0][1] == 4 && t->nvlinks[1][0] == 4 && t->nvlinks[2][3] == 4);
	CHECK(t->nvlinks[0][2] == 0 && t->nvlinks[1][3] == 0 && t->nvlinks[0][0] == 0);
	CHECK(nfind(t, "gpu_order") == 0);
	rc_topo_free(t);
	/* NVML numbers 3b before 34: a finding names both. */
	CHECK(fake_nvml("hex-bus-misordered.nvml"));
	t = load("hex-bus", false);
	CHECK(t && t->gpus[0].nvml_index == 1 && t->gpus[1].nvml_index == 0);
	CHECK(!strcmp(t->gpus[0].pci.addr, "0000:34:00.0"));
	CHECK(nfind(t, "gpu_order") == 1);
	for (int i = 0; i < t->nfindings; i++)
		if (!strcmp(t->findings[i].check, "gpu_order"))
			CHECK(strstr(t->findings[i].message, "GPU0 (0000:34:00.0) is NVML 1") &&
			      strstr(t->findings[i].message, "GPU1 (0000:3b:00.0) is NVML 0"));
	fake_nvml(NULL);
	rc_topo_free(t);
	return 0;
fail:
	fake_nvml(NULL);
	rc_topo_free(t);
	return 1;
}

/* A capture keeps what NVML said: read back without NVML, the same
 * indices, switch links and NV# counts. */
static int test_capture_nvml(const char *name, const char *cfg)
{
	char tmp[] = "/tmp/rdmactl-test-capnvml.XXXXXX", src[4400], dst[256];
	struct rc_topo *a = NULL, *b = NULL;
	struct rc_topo_opts o = { 0 };
	struct rc_err e;
	int nfiles = 0;

	CHECK(fake_nvml(cfg) && mkdtemp(tmp));
	a = load(name, false);
	CHECK(a && a->nvml);
	snprintf(src, sizeof(src), "%s/%s", fixtures, name);
	snprintf(dst, sizeof(dst), "%s/cap", tmp);
	CHECK(!rc_topo_capture(src, dst, &nfiles, &e));
	fake_nvml(NULL);
	o.root = dst;
	CHECK(!rc_topo_load(&o, &b, &e) && b->nvml);
	CHECK(!memcmp(a->nvlinks, b->nvlinks, sizeof(a->nvlinks)));
	for (int g = 0; g < a->ngpus; g++) {
		CHECK(a->gpus[g].nvml_index == b->gpus[g].nvml_index);
		CHECK(a->gpus[g].nvswitch_links == b->gpus[g].nvswitch_links);
	}
	rc_topo_free(a);
	rc_topo_free(b);
	rc_topo_rmtree(tmp);
	return 0;
fail:
	fake_nvml(NULL);
	rc_topo_free(a);
	rc_topo_free(b);
	rc_topo_rmtree(tmp);
	return 1;
}

/* NVSwitch bridges are no GPUs; NV18 between every pair through them. */
static int test_nvswitch(void)
{
	struct rc_topo *t = NULL;
	struct rc_topo_gpudirect gd;

	CHECK(fake_nvml(NULL));
	t = load("nvswitch-4gpu", false);
	CHECK(t && t->ngpus == 4 && t->nvswitches == 2 && t->ndevs == 4);
	CHECK(gpu_at(t, "0000:05:00.0") < 0 && gpu_at(t, "0000:85:00.0") < 0);
	CHECK(gpu_at(t, "0000:03:00.0") == 0 && gpu_at(t, "0000:86:00.0") == 3);
	CHECK(t->gpu_matrix[0][1] == RC_PATH_PIX && t->gpu_matrix[1][2] == RC_PATH_SYS);
	CHECK(t->nvlinks[0][1] == 0);
	rc_topo_free(t);
	CHECK(fake_nvml("nvswitch-4gpu.nvml"));
	t = load("nvswitch-4gpu", false);
	CHECK(t && t->nvml && t->ngpus == 4);
	for (int g = 0; g < 4; g++) {
		CHECK(t->gpus[g].nvswitch_links == 18 && t->gpus[g].nvml_index == g);
		CHECK(!strcmp(t->gpus[g].name, "NVIDIA H100 80GB HBM3"));
		for (int h = 0; h < 4; h++)
			CHECK(t->nvlinks[g][h] == (g == h ? 0 : 18));
		/* Two GPUs and two NICs per switch: one NIC each, all PIX. */
		CHECK(t->rails[g].dev == g && t->rails[g].path == RC_PATH_PIX);
		CHECK(t->rails[g].shared == 1 && !t->rails[g].shared_by_design);
	}
	/* dma-buf: open kernel modules on 6.8 and mlx5; no nvidia-peermem. */
	rc_topo_gpudirect(t, 0, 0, &gd);
	CHECK(gd.dmabuf && !gd.peermem && gd.ready && gd.path == RC_PATH_PIX);
	CHECK(strstr(gd.advice, "good"));
	rc_topo_gpudirect(t, 0, 2, &gd);
	CHECK(gd.ready && gd.path == RC_PATH_SYS && strstr(gd.advice, "slow"));
	CHECK(nfind(t, "gpudirect") == 0 && t->nfindings == 0);
	fake_nvml(NULL);
	rc_topo_free(t);
	return 0;
fail:
	fake_nvml(NULL);
	rc_topo_free(t);
	return 1;
}

/* GPUDirect on a host with neither dma-buf nor nvidia-peermem, and rxe. */
static int test_gpudirect_not_ready(void)
{
	struct rc_topo *t = load("shared-nic", false);
	struct rc_topo_gpudirect gd;
	int rxe;

	CHECK(t);
	rxe = dev_index(t, "rxe0");
	rc_topo_gpudirect(t, 0, 0, &gd);
	CHECK(!gd.dmabuf && !gd.peermem && !gd.ready && strstr(gd.dmabuf_why, "proprietary"));
	CHECK(strstr(gd.advice, "bounce"));
	rc_topo_gpudirect(t, 0, rxe, &gd);
	CHECK(!gd.ready && gd.path == RC_PATH_NA && strstr(gd.dmabuf_why, "no PCI"));
	/* All three GPUs share the one active NIC: by design. */
	CHECK(t->rails[2].shared_by_design && t->rails[2].best_dev == 0);
	rc_topo_free(t);
	return 0;
fail:
	rc_topo_free(t);
	return 1;
}

static int write_file(const char *path, const char *s)
{
	FILE *fp = fopen(path, "w");

	if (!fp)
		return -1;
	fputs(s, fp);
	return fclose(fp);
}

static int test_bad_trees(void)
{
	struct rc_topo_opts o = { 0 };
	struct rc_topo *t = NULL;
	char tmp[] = "/tmp/rdmactl-test-topo.XXXXXX", p[256];
	struct rc_err e;

	CHECK(mkdtemp(tmp));
	o.root = "/nonexistent/sysfs";
	CHECK(rc_topo_load(&o, &t, &e) == -ENOENT && !t && strstr(e.msg, "/nonexistent/sysfs"));
	o.root = tmp; /* empty: no sysfs tree */
	CHECK(rc_topo_load(&o, &t, &e) == -ENOENT && strstr(e.msg, "not a sysfs tree"));
	snprintf(p, sizeof(p), "%s/class", tmp);
	CHECK(!mkdir(p, 0755));
	snprintf(p, sizeof(p), "%s/class/infiniband", tmp);
	CHECK(!mkdir(p, 0755));
	CHECK(!rc_topo_load(&o, &t, &e) && t->ndevs == 0 && t->nfindings >= 1);
	CHECK(!strcmp(t->findings[0].check, "no_devices"));
	rc_topo_free(t);
	t = NULL;
	snprintf(p, sizeof(p), "%s/class/infiniband/bad0", tmp);
	CHECK(!mkdir(p, 0755));
	CHECK(rc_topo_load(&o, &t, &e) == -ENOENT && strstr(e.msg, "bad0 has no ports"));
	snprintf(p, sizeof(p), "%s/class/infiniband/bad0/ports", tmp);
	CHECK(!mkdir(p, 0755));
	snprintf(p, sizeof(p), "%s/class/infiniband/bad0/ports/1", tmp);
	CHECK(!mkdir(p, 0755));
	CHECK(rc_topo_load(&o, &t, &e) == -ENOENT && strstr(e.msg, "no readable state"));
	snprintf(p, sizeof(p), "%s/class/infiniband/bad0/ports/1/state", tmp);
	CHECK(!write_file(p, "4: ACTIVE\n"));
	CHECK(!rc_topo_load(&o, &t, &e) && t->ndevs == 1 && t->devs[0].ports[0].ngids == 0);
	CHECK(!strcmp(t->devs[0].provider, "bad"));
	rc_topo_free(t);
	rc_topo_rmtree(tmp);
	return 0;
fail:
	rc_topo_free(t);
	rc_topo_rmtree(tmp);
	return 1;
}

/* A capture of a tree reads back as the tree itself. */
static int test_capture_roundtrip(const char *name)
{
	struct rc_topo *a = load(name, false), *b = NULL;
	char tmp[] = "/tmp/rdmactl-test-cap.XXXXXX", src[4400], dst[256];
	struct rc_topo_opts o = { 0 };
	struct rc_err e;
	int nfiles = 0;

	CHECK(a && mkdtemp(tmp));
	snprintf(src, sizeof(src), "%s/%s", fixtures, name);
	snprintf(dst, sizeof(dst), "%s/cap", tmp);
	CHECK(!rc_topo_capture(src, dst, &nfiles, &e) && nfiles > 10);
	CHECK(rc_topo_capture(src, dst, &nfiles, &e) == -EEXIST); /* never overwrites */
	o.root = dst;
	CHECK(!rc_topo_load(&o, &b, &e));
	CHECK(a->ndevs == b->ndevs && a->ngpus == b->ngpus && a->nnuma == b->nnuma);
	CHECK(a->nfindings == b->nfindings);
	CHECK(!memcmp(a->matrix, b->matrix, sizeof(a->matrix)));
	CHECK(!memcmp(a->rails, b->rails, sizeof(a->rails)));
	for (int d = 0; d < a->ndevs; d++) {
		CHECK(!strcmp(a->devs[d].pci.path, b->devs[d].pci.path));
		CHECK(!strcmp(a->devs[d].provider, b->devs[d].provider));
		for (int p = 0; p < a->devs[d].nports; p++) {
			const struct rc_topo_port *pa = &a->devs[d].ports[p],
						  *pb = &b->devs[d].ports[p];

			CHECK(pa->ngids == pb->ngids && pa->rec_gid == pb->rec_gid);
			CHECK(pa->active_mtu == pb->active_mtu && pa->naddrs == pb->naddrs);
			CHECK(!strcmp(pa->netdev, pb->netdev));
		}
	}
	rc_topo_free(a);
	rc_topo_free(b);
	rc_topo_rmtree(tmp);
	return 0;
fail:
	rc_topo_free(a);
	rc_topo_free(b);
	rc_topo_rmtree(tmp);
	return 1;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : getenv("RDMACTL_FIXTURES");
	int failed = 0;

	if (!dir || !*dir) {
		fprintf(stderr,
			"test_topo_fixtures: set RDMACTL_FIXTURES (tests/fixtures/make-sysfs.sh OUTDIR)\n");
		return 1;
	}
	snprintf(fixtures, sizeof(fixtures), "%s", dir);
	cmds_config_load(); /* RDMACTL_NVML_LIB, from ctest */
	failed += test_two_socket();
	failed += test_shared_nic();
	failed += test_bad_trees();
	failed += test_capture_roundtrip("two-socket-8gpu");
	failed += test_capture_roundtrip("shared-nic");
	failed += test_hex_bus();
	failed += test_nvswitch();
	failed += test_gpudirect_not_ready();
	failed += test_capture_roundtrip("hex-bus");
	failed += test_capture_roundtrip("nvswitch-4gpu");
	failed += test_capture_nvml("hex-bus", "hex-bus-misordered.nvml");
	failed += test_capture_nvml("nvswitch-4gpu", "nvswitch-4gpu.nvml");
	if (failed)
		fprintf(stderr, "%d test(s) failed\n", failed);
	return failed ? 1 : 0;
}
