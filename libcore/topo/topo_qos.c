// SPDX-License-Identifier: MIT
/*
 * The facts a job's nodes must agree on beyond the link: each NIC's model
 * (hca_type), each port's default partition key (pkeys/0), its RoCE
 * traffic class (mlx5's tc/N/traffic_class) and the RoCE ECN knobs of its
 * netdev (mlx5's ecn/roce_np and ecn/roce_rp, enable/PRIO), the IOMMU
 * group and kind of every GPU and NIC (iommu_group, kernel/iommu_groups/N/
 * type) and ACS on the PCIe path between each GPU and the NIC of its rail
 * (the ACS extended capability in each bridge's config). rc_topo_load
 * calls it once the rail plan is made. What a tree or a driver does not
 * have stays unknown (-1, "").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topo_int.h"

#define PCI_EXT_CAP_ACS 0x0d
#define ACS_RR 0x04 /* P2P request redirect */
#define ACS_CR 0x08 /* P2P completion redirect */
#define ECN_PRIOS 8

/* Bytes of a PCI function's config space; how many were read, or < 0. */
static int read_config(const struct rc_topo *t, const char *dir, unsigned char *buf, size_t len)
{
	char rel[RC_TOPO_PATH_MAX + 16], abs[RC_TOPO_PATH_MAX * 2];
	size_t got = 0;
	int fd, rc;

	if ((rc = tp_fmt(rel, sizeof(rel), "%s/config", dir)) ||
	    (rc = tp_resolve(t, rel, abs, sizeof(abs))))
		return rc;
	if ((fd = open(abs, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	return (int)got;
}

/* The ACS control register of the function at dir, -1 when it has no ACS
 * capability, -2 when its extended config cannot be read. */
static int acs_ctrl_of(const struct rc_topo *t, const char *dir)
{
	unsigned char cfg[4096];
	int n = read_config(t, dir, cfg, sizeof(cfg));
	unsigned off = 0x100;

	if (n < 0x104)
		return -2;
	for (int hops = 0; off >= 0x100 && off + 8 <= (unsigned)n && hops < 64; hops++) {
		uint32_t hdr = cfg[off] | cfg[off + 1] << 8 | (uint32_t)cfg[off + 2] << 16 |
			       (uint32_t)cfg[off + 3] << 24;

		if (!hdr || hdr == 0xffffffffu)
			break;
		if ((hdr & 0xffff) == PCI_EXT_CAP_ACS)
			return cfg[off + 6] | cfg[off + 7] << 8;
		off = (hdr >> 20) & 0xffc;
	}
	return -1;
}

static void load_iommu(const struct rc_topo *t, struct rc_topo_pci *p)
{
	char rel[RC_TOPO_PATH_MAX + 64];

	p->iommu_group[0] = p->iommu_type[0] = '\0';
	if (!p->addr[0] || tp_fmt(rel, sizeof(rel), "%s/iommu_group", p->path) ||
	    tp_link_base(t, rel, p->iommu_group, sizeof(p->iommu_group))) {
		p->iommu_group[0] = '\0';
		return;
	}
	if (tp_fmt(rel, sizeof(rel), "kernel/iommu_groups/%s/type", p->iommu_group) ||
	    tp_read(t, rel, p->iommu_type, sizeof(p->iommu_type)))
		p->iommu_type[0] = '\0';
}

/* A bit per priority whose knob reads 1; -1 when the folder is not there. */
static int ecn_mask(const struct rc_topo *t, const char *netdev, const char *which)
{
	char rel[256];
	int mask = 0;
	long v;

	if (tp_fmt(rel, sizeof(rel), "class/net/%s/ecn/%s/enable", netdev, which) ||
	    !tp_is_dir(t, rel))
		return -1;
	for (int prio = 0; prio < ECN_PRIOS; prio++)
		if (!tp_fmt(rel, sizeof(rel), "class/net/%s/ecn/%s/enable/%d", netdev, which, prio) &&
		    !tp_read_int(t, rel, &v) && v == 1)
			mask |= 1 << prio;
	return mask;
}

/* "Global tclass=106" (mlx5), or a bare number; -1 (not set) stays -1. */
static int read_tclass(const struct rc_topo *t, const char *dev, int port)
{
	char rel[256], buf[64];
	const char *s;
	char *end;
	long v;

	if (tp_fmt(rel, sizeof(rel), "class/infiniband/%s/tc/%d/traffic_class", dev, port) ||
	    tp_read(t, rel, buf, sizeof(buf)))
		return -1;
	s = strrchr(buf, '=');
	s = s ? s + 1 : buf;
	v = strtol(s, &end, 0);
	return end != s && v >= 0 && v <= 255 ? (int)v : -1;
}

static void load_port(const struct rc_topo *t, const struct rc_topo_dev *d, struct rc_topo_port *p)
{
	char rel[256];
	long v;

	p->pkey0 = -1;
	if (!tp_fmt(rel, sizeof(rel), "class/infiniband/%s/ports/%d/pkeys/0", d->name, p->num) &&
	    !tp_read_int(t, rel, &v) && v >= 0 && v <= 0xffff)
		p->pkey0 = (int)v;
	p->tclass = read_tclass(t, d->name, p->num);
	p->ecn_np = p->ecn_rp = -1;
	if (p->netdev[0]) {
		p->ecn_np = ecn_mask(t, p->netdev, "roce_np");
		p->ecn_rp = ecn_mask(t, p->netdev, "roce_rp");
	}
}

/* Length of the leading path components a and b share. */
static size_t common_dir(const char *a, const char *b)
{
	size_t i = 0, last = 0;

	while (a[i] && a[i] == b[i]) {
		i++;
		if (a[i] == '/' || (!a[i] && b[i] == '/'))
			last = i;
	}
	if (!a[i] && !b[i])
		last = i;
	return last;
}

/* The bridges from the common ancestor (its path's first `from` bytes)
 * down to the function at path, the function itself left out: the first
 * one that redirects peer-to-peer is named; one not readable makes the
 * answer unknown. */
static void acs_down(const struct rc_topo *t, const char *path, size_t from, struct rc_topo_rail *r)
{
	char dir[RC_TOPO_PATH_MAX];
	size_t len = strlen(path);

	for (size_t at = from; r->acs != 1 && at < len && at < sizeof(dir); at++) {
		const char *base;
		int ctrl;

		if (path[at] != '/')
			continue;
		memcpy(dir, path, at);
		dir[at] = '\0';
		base = strrchr(dir, '/');
		base = base ? base + 1 : dir;
		if (!strncmp(base, "pci", 3) || !strcmp(dir, "devices"))
			continue; /* a host bridge: no config of its own */
		ctrl = acs_ctrl_of(t, dir);
		if (ctrl >= 0 && (ctrl & (ACS_RR | ACS_CR))) {
			r->acs = 1;
			tp_copy(r->acs_at, sizeof(r->acs_at), base);
		} else if (ctrl == -2) {
			r->acs = -1;
		}
	}
}

static void rail_acs(const struct rc_topo *t, struct rc_topo_rail *r)
{
	const char *g, *n;
	size_t c;

	r->acs = -2;
	r->acs_at[0] = '\0';
	if (r->dev < 0 || r->path > RC_PATH_PHB)
		return;
	g = t->gpus[r->gpu].pci.path;
	n = t->devs[r->dev].pci.path;
	c = common_dir(g, n);
	r->acs = 0;
	acs_down(t, g, c, r);
	acs_down(t, n, c, r);
}

void tp_load_qos(struct rc_topo *t)
{
	char rel[RC_TOPO_PATH_MAX + 16];

	t->facts.iommu = tp_is_dir(t, "kernel/iommu_groups") ? 0 : -1;
	if (!t->facts.iommu) {
		struct tp_names n;

		if (!tp_list(t, "kernel/iommu_groups", &n)) {
			t->facts.iommu = n.n > 0;
			tp_names_free(&n);
		}
	}
	for (int d = 0; d < t->ndevs; d++) {
		struct rc_topo_dev *dv = &t->devs[d];

		if (tp_fmt(rel, sizeof(rel), "class/infiniband/%s/hca_type", dv->name) ||
		    tp_read(t, rel, dv->hca_type, sizeof(dv->hca_type)))
			dv->hca_type[0] = '\0';
		for (int p = 0; p < dv->nports; p++)
			load_port(t, dv, &dv->ports[p]);
		dv->pci.acs_ctrl = -2;
		if (dv->has_pci)
			load_iommu(t, &dv->pci);
	}
	for (int g = 0; g < t->ngpus; g++) {
		t->gpus[g].pci.acs_ctrl = -2;
		load_iommu(t, &t->gpus[g].pci);
	}
	for (int g = 0; g < t->ngpus; g++)
		rail_acs(t, &t->rails[g]);
}
