// SPDX-License-Identifier: MIT
/*
 * The PCIe side: a function's files, the NVIDIA GPUs (found from PCI, no
 * driver needed), the path class between two functions, the GPU x NIC
 * matrix and the rail plan.
 *
 * A function's resolved sysfs path is its chain from the root complex:
 *   devices/pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0/0000:83:00.0
 *           host bridge  root port    switch up    switch down  endpoint
 * The deepest function two chains share (their lowest common ancestor)
 * says how far apart they are.
 */
#define _GNU_SOURCE /* qsort_r */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/parse.h>
#include <rdmactl/parse_core.h>
#include <rdmactl/topo_core.h>

#include "topo_int.h"

const char *rc_topo_path_name(enum rc_topo_path p)
{
	switch (p) {
	case RC_PATH_PIX:
		return "PIX";
	case RC_PATH_PXB:
		return "PXB";
	case RC_PATH_PHB:
		return "PHB";
	case RC_PATH_NODE:
		return "NODE";
	case RC_PATH_SYS:
		return "SYS";
	case RC_PATH_NA:
		return "N/A";
	}
	return "N/A";
}

#define CHAIN_MAX 32

struct chain {
	char rc[32]; /* the first host bridge: pci0000:80 */
	int n;
	char bdf[CHAIN_MAX][16];
};

static void chain_parse(const char *path, struct chain *c)
{
	const char *s = path;

	memset(c, 0, sizeof(*c));
	while (*s) {
		size_t len;

		s += strspn(s, "/");
		len = strcspn(s, "/");
		if (!len)
			break;
		/* A host bridge starts the chain. A nested one (Intel VMD's
		 * pci10000:e0 below 0000:00:0e.0) starts it again: its domain is
		 * a root complex of its own, which keeps the class conservative. */
		if (len > 3 && len < sizeof(c->rc) && !strncmp(s, "pci", 3) &&
		    !rc_pci_addr_valid(s, len)) {
			snprintf(c->rc, sizeof(c->rc), "%.*s", (int)len, s);
			c->n = 0;
		} else if (c->rc[0] && rc_pci_addr_valid(s, len) && c->n < CHAIN_MAX) {
			snprintf(c->bdf[c->n++], sizeof(c->bdf[0]), "%.*s", (int)len, s);
		}
		/* Anything else (virtio0, net, infiniband) is no bridge. */
		s += len;
	}
}

enum rc_topo_path rc_topo_classify(const char *path_a, int numa_a, const char *path_b, int numa_b,
				   int nnuma)
{
	struct chain a, b;
	int k = 0, da, db;

	if (!path_a || !path_b)
		return RC_PATH_NA;
	chain_parse(path_a, &a);
	chain_parse(path_b, &b);
	if (!a.n || !b.n)
		return RC_PATH_NA;
	if (strcmp(a.rc, b.rc)) {
		if (numa_a == numa_b)
			return RC_PATH_NODE;
		/* One node unknown: on a one-node host it can only be that one. */
		if (numa_a < 0 || numa_b < 0)
			return nnuma <= 1 ? RC_PATH_NODE : RC_PATH_SYS;
		return RC_PATH_SYS;
	}
	while (k < a.n && k < b.n && !strcmp(a.bdf[k], b.bdf[k]))
		k++;
	if (!k)
		return RC_PATH_PHB; /* different root ports of one host bridge */
	/* Functions strictly between the common ancestor and each device: at
	 * most one on each side (a switch's downstream ports below its upstream
	 * port, or a shared bridge) is one switch. */
	da = a.n - 1 - k;
	db = b.n - 1 - k;
	return da <= 1 && db <= 1 ? RC_PATH_PIX : RC_PATH_PXB;
}

static void read_str(const struct rc_topo *t, const char *dir, const char *file, char *buf,
		     size_t len)
{
	char rel[RC_TOPO_PATH_MAX + 64];

	buf[0] = '\0';
	if (tp_fmt(rel, sizeof(rel), "%s/%s", dir, file) || tp_read(t, rel, buf, len))
		buf[0] = '\0';
}

static int read_num(const struct rc_topo *t, const char *dir, const char *file)
{
	char rel[RC_TOPO_PATH_MAX + 64];
	long v;

	if (tp_fmt(rel, sizeof(rel), "%s/%s", dir, file) || tp_read_int(t, rel, &v) || v < -1 ||
	    v > 65535)
		return -1;
	return (int)v;
}

int tp_load_pci(const struct rc_topo *t, const char *rel, struct rc_topo_pci *p)
{
	char link[RC_TOPO_PATH_MAX + 16];
	const char *base;
	int rc;

	memset(p, 0, sizeof(*p));
	p->numa_node = p->cur_width = p->max_width = -1;
	rc = tp_resolve_rel(t, rel, p->path, sizeof(p->path));
	if (rc)
		return rc;
	base = strrchr(p->path, '/');
	base = base ? base + 1 : p->path;
	if (!rc_pci_addr_valid(base, strlen(base)) || strncmp(p->path, "devices/", 8))
		return -ENODEV; /* a parent that is no PCI function */
	tp_copy(p->addr, sizeof(p->addr), base);
	read_str(t, p->path, "vendor", p->vendor, sizeof(p->vendor));
	read_str(t, p->path, "device", p->device, sizeof(p->device));
	read_str(t, p->path, "class", p->class_code, sizeof(p->class_code));
	read_str(t, p->path, "local_cpulist", p->cpulist, sizeof(p->cpulist));
	read_str(t, p->path, "current_link_speed", p->cur_speed, sizeof(p->cur_speed));
	read_str(t, p->path, "max_link_speed", p->max_speed, sizeof(p->max_speed));
	p->numa_node = read_num(t, p->path, "numa_node");
	p->cur_width = read_num(t, p->path, "current_link_width");
	p->max_width = read_num(t, p->path, "max_link_width");
	if (!tp_fmt(link, sizeof(link), "%s/driver", p->path) &&
	    tp_link_base(t, link, p->driver, sizeof(p->driver)))
		p->driver[0] = '\0';
	/* Speeds of links that never trained read "Unknown"; widths 0. */
	if (!strcmp(p->cur_speed, "Unknown"))
		p->cur_speed[0] = '\0';
	return 0;
}

/* NVSwitch: an NVIDIA function of class "other bridge" (0x0680). */
static bool is_nvswitch(const struct rc_topo_pci *p)
{
	unsigned long cls;
	char *end;

	if (strcasecmp(p->vendor, "0x10de"))
		return false;
	cls = strtoul(p->class_code, &end, 16);
	return end != p->class_code && (cls >> 8) == 0x0680;
}

static bool is_nvidia_gpu(const struct rc_topo_pci *p)
{
	unsigned long cls;
	char *end;

	if (strcasecmp(p->vendor, "0x10de"))
		return false;
	cls = strtoul(p->class_code, &end, 16);
	/* VGA (0x0300xx) or 3D controller (0x0302xx): not the audio function,
	 * not NVSwitch bridges. */
	return end != p->class_code && ((cls >> 8) == 0x0300 || (cls >> 8) == 0x0302);
}

/* "gpu ADDR UUID NAME..." from a capture: what NVML said there. */
static void gpu_fact(void *arg, const char *key, const char *val)
{
	struct rc_topo *t = arg;
	char addr[32], uuid[96];
	int off = 0;

	if (sscanf(val, "%31s %95s %n", addr, uuid, &off) < 2)
		return;
	for (int g = 0; g < t->ngpus; g++) {
		if (rc_pci_addr_cmp(t->gpus[g].pci.addr, addr))
			continue;
		if (strcmp(uuid, "-"))
			tp_copy(t->gpus[g].uuid, sizeof(t->gpus[g].uuid), uuid);
		if (off > 0)
			tp_copy(t->gpus[g].name, sizeof(t->gpus[g].name), val + off);
	}
}

static int gpu_index_of(const struct rc_topo *t, const char *addr)
{
	for (int g = 0; g < t->ngpus; g++)
		if (!rc_pci_addr_cmp(t->gpus[g].pci.addr, addr))
			return g;
	return -1;
}

/* "nvml ADDR INDEX SWITCH_LINKS" and "nvlink ADDR PEER N" from a capture:
 * NVML's index and NVLinks where it ran. */
static void nvml_fact(void *arg, const char *key, const char *val)
{
	struct rc_topo *t = arg;
	char a[32], b[32];
	int g, h, n, m;

	if (!strcmp(key, "nvml") && sscanf(val, "%31s %d %d", a, &n, &m) == 3 &&
	    (g = gpu_index_of(t, a)) >= 0 && n >= 0 && n < 4096 && m >= 0 && m < 1024) {
		t->gpus[g].nvml_index = n;
		t->gpus[g].nvswitch_links = m;
		t->nvml = true;
	} else if (!strcmp(key, "nvlink") && sscanf(val, "%31s %31s %d", a, b, &n) == 3 &&
		   (g = gpu_index_of(t, a)) >= 0 && (h = gpu_index_of(t, b)) >= 0 && g != h &&
		   n > 0 && n < 1024) {
		t->nvlinks[g][h] = n;
		t->nvml = true;
	}
}

static int cmp_gpu(const void *a, const void *b)
{
	return rc_pci_addr_cmp(((const struct rc_topo_gpu *)a)->pci.addr,
			       ((const struct rc_topo_gpu *)b)->pci.addr);
}

int tp_load_gpus(struct rc_topo *t, struct rc_err *err)
{
	struct tp_names n;
	char rel[256];
	int rc = tp_list(t, "bus/pci/devices", &n);

	if (rc == -ENOENT)
		return 0; /* no PCI at all: no GPUs */
	if (rc)
		return rc_err_set(err, -rc, "cannot list %s/bus/pci/devices: %s", t->root,
				  tp_why(rc));
	for (int i = 0; i < n.n; i++) {
		struct rc_topo_pci p;

		if (tp_fmt(rel, sizeof(rel), "bus/pci/devices/%s", n.v[i]) ||
		    tp_load_pci(t, rel, &p))
			continue;
		if (is_nvswitch(&p))
			t->nvswitches++;
		if (!is_nvidia_gpu(&p))
			continue;
		if (t->ngpus >= RC_TOPO_MAX_GPUS)
			break;
		t->gpus[t->ngpus].nvml_index = -1;
		t->gpus[t->ngpus++].pci = p;
	}
	tp_names_free(&n);
	/* GPU n is the n-th in PCI bus order, as nvidia-smi numbers them. */
	qsort(t->gpus, (size_t)t->ngpus, sizeof(t->gpus[0]), cmp_gpu);
	tp_facts_each(t, "gpu", gpu_fact, t);
	tp_facts_each(t, "nvml", nvml_fact, t);
	tp_facts_each(t, "nvlink", nvml_fact, t);
	return 0;
}

static int numa_of(const struct rc_topo_pci *p)
{
	return p->numa_node;
}

static int cmp_nic(const void *a, const void *b, void *arg)
{
	const struct rc_topo *t = arg;

	return rc_pci_addr_cmp(t->devs[*(const int *)a].pci.addr, t->devs[*(const int *)b].pci.addr);
}

void tp_compute_paths(struct rc_topo *t)
{
	for (int g = 0; g < t->ngpus; g++) {
		const struct rc_topo_pci *gp = &t->gpus[g].pci;

		for (int d = 0; d < t->ndevs; d++)
			t->matrix[g][d] =
				t->devs[d].has_pci
					? rc_topo_classify(gp->path, numa_of(gp),
							   t->devs[d].pci.path,
							   numa_of(&t->devs[d].pci), t->nnuma)
					: RC_PATH_NA;
		for (int h = 0; h < t->ngpus; h++)
			t->gpu_matrix[g][h] =
				rc_topo_classify(gp->path, numa_of(gp), t->gpus[h].pci.path,
						 numa_of(&t->gpus[h].pci), t->nnuma);
	}
	t->nnic_pci = 0;
	for (int d = 0; d < t->ndevs; d++)
		if (t->devs[d].has_pci)
			t->nic_pci_order[t->nnic_pci++] = d;
	qsort_r(t->nic_pci_order, (size_t)t->nnic_pci, sizeof(int), cmp_nic, t);
	tp_plan_rails(t);
}
