// SPDX-License-Identifier: MIT
/*
 * preflight's record of one rank: filled from the topology the loader read
 * (no file of its own is read here), bounded when it comes from a peer,
 * and its settings as text for the comparison and the grid. The expected
 * figure of a rail from two records.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/preflight.h>

/* Bounded copy: what does not fit is cut. */
static void copy(char *dst, size_t len, const char *src)
{
	size_t l = strnlen(src, len - 1);

	memcpy(dst, src, l);
	dst[l] = '\0';
}

#define COPY(dst, src) copy((dst), sizeof(dst), (src))

static const char *const setting_names[RC_PF_NSETTINGS] = {
	[RC_PF_KERNEL] = "kernel",
	[RC_PF_RDMA_CORE] = "rdma_core",
	[RC_PF_RDMACTL] = "rdmactl",
	[RC_PF_PROVIDER] = "provider",
	[RC_PF_FW] = "firmware",
	[RC_PF_LINK_LAYER] = "link_layer",
	[RC_PF_STATE] = "port_state",
	[RC_PF_RATE] = "rate",
	[RC_PF_ACTIVE_MTU] = "active_mtu",
	[RC_PF_NETDEV_MTU] = "netdev_mtu",
	[RC_PF_GID_TYPE] = "gid_type",
	[RC_PF_ROCE_MODE] = "roce_mode",
	[RC_PF_ROCE_TOS] = "roce_tos",
	[RC_PF_MEMLOCK] = "memlock",
	[RC_PF_HUGEPAGES] = "hugepages",
	[RC_PF_RDMA_UCM] = "rdma_ucm",
	[RC_PF_NIC_PCIE] = "nic_pcie",
	[RC_PF_GPU_PCIE] = "gpu_pcie",
	[RC_PF_NIC_MODEL] = "nic_model",
	[RC_PF_DRIVER] = "driver",
	[RC_PF_PKEY] = "pkey",
	[RC_PF_TCLASS] = "traffic_class",
	[RC_PF_ECN] = "roce_ecn",
	[RC_PF_IOMMU] = "iommu",
	[RC_PF_ACS] = "acs",
	[RC_PF_RAIL_PLAN] = "rail_plan",
};

const char *rc_pf_setting_name(int s)
{
	return s >= 0 && s < RC_PF_NSETTINGS ? setting_names[s] : "?";
}

static void link_of(const struct rc_topo_pci *p, struct rc_pf_link *l)
{
	COPY(l->addr, p->addr);
	COPY(l->cur_speed, p->cur_speed);
	COPY(l->max_speed, p->max_speed);
	l->cur_width = p->cur_width > 0 ? p->cur_width : 0;
	l->max_width = p->max_width > 0 ? p->max_width : 0;
}

static const struct rc_topo_dev *pick_dev(const struct rc_topo *t, const char *name)
{
	for (int d = 0; d < t->ndevs; d++) {
		const struct rc_topo_dev *dv = &t->devs[d];

		if (name && !strcmp(dv->name, name))
			return dv;
		for (int p = 0; !name && p < dv->nports; p++)
			if (!strcmp(dv->ports[p].state, "ACTIVE"))
				return dv;
	}
	return !name && t->ndevs ? &t->devs[0] : NULL;
}

static const struct rc_topo_port *pick_port(const struct rc_topo_dev *d, int port)
{
	for (int p = 0; p < d->nports; p++)
		if (port ? d->ports[p].num == port : !strcmp(d->ports[p].state, "ACTIVE"))
			return &d->ports[p];
	return !port && d->nports ? &d->ports[0] : NULL;
}

static void fill_gid(const struct rc_topo_port *p, int gid_index, struct rc_pf_node *n)
{
	n->gid_index = gid_index >= 0 ? gid_index : p->rec_gid;
	for (int i = 0; i < p->ngids; i++) {
		const struct rc_topo_gid *g = &p->gids[i];

		if (g->index != n->gid_index)
			continue;
		n->gid_found = 1;
		COPY(n->gid_type, g->type);
		COPY(n->gid, g->gid);
		COPY(n->gid_netdev, g->netdev);
	}
}

static void fill_port(const struct rc_topo_port *p, int gid_index, struct rc_pf_node *n)
{
	n->port = p->num;
	COPY(n->link_layer, p->link_layer);
	COPY(n->state, p->state);
	COPY(n->rate, p->rate);
	n->rate_gbps = p->rate_gbps;
	n->active_mtu = p->active_mtu;
	n->netdev_mtu = p->netdev_mtu;
	COPY(n->netdev, p->netdev);
	COPY(n->netdev_state, p->netdev_state);
	COPY(n->roce_mode, p->roce_mode);
	n->roce_tos = p->roce_tos;
	fill_gid(p, gid_index, n);
}

static void fill_host(const struct rc_topo *t, const char *rdmactl, struct rc_pf_node *n)
{
	const struct rc_topo_facts *f = &t->facts;

	n->loaded = 1;
	COPY(n->hostname, f->hostname);
	COPY(n->kernel, f->kernel);
	COPY(n->rdma_core, f->rdma_core);
	COPY(n->rdmactl, rdmactl ? rdmactl : "");
	n->memlock_known = f->memlock_known;
	n->memlock_unlimited = f->memlock_unlimited;
	n->memlock = f->memlock;
	n->cap_ipc_lock = f->cap_ipc_lock;
	n->rdma_ucm = f->rdma_ucm;
	n->peermem = f->peermem_loaded;
	n->ngpus = t->ngpus;
	n->huge_total = n->huge_free = f->nhuge ? 0 : -1;
	for (int i = 0; i < f->nhuge; i++) {
		n->huge_total += f->huge[i].total > 0 ? f->huge[i].total : 0;
		n->huge_free += f->huge[i].free > 0 ? f->huge[i].free : 0;
	}
	for (int g = 0; g < t->ngpus; g++) {
		const struct rc_topo_pci *p = &t->gpus[g].pci;

		if (p->cur_width > 0 && p->max_width > 0 && p->cur_width < p->max_width &&
		    !n->gpus_slow++)
			link_of(p, &n->gpu_link);
	}
}

/* The rail plan as text, and ACS and the IOMMU on its GPU-NIC paths. */
static void fill_rails(const struct rc_topo *t, struct rc_pf_node *n)
{
	size_t at = 0;

	n->nrails = 0;
	for (int g = 0; g < t->ngpus; g++) {
		const struct rc_topo_rail *r = &t->rails[g];
		int w;

		if (at < sizeof(n->rail_plan)) {
			w = snprintf(n->rail_plan + at, sizeof(n->rail_plan) - at, "%sGPU%d %s %s",
				     g ? ", " : "", g, r->dev >= 0 ? t->devs[r->dev].name : "none",
				     rc_topo_path_name(r->path));
			at += w > 0 ? (size_t)w : 0;
		}
		if (r->dev < 0)
			continue;
		n->nrails++;
		n->acs_unknown += r->acs == -1;
		if (r->acs == 1 && !n->acs_redirect++)
			snprintf(n->acs_at, sizeof(n->acs_at), "%s (GPU%d-%s)", r->acs_at, g,
				 t->devs[r->dev].name);
	}
}

static bool translating(const char *type)
{
	return !strncmp(type, "DMA", 3);
}

/* The IOMMU of the functions on the rails (the node's device's without a
 * GPU): the first translating kind, else "identity", else "off" when the
 * host has no IOMMU group. */
static void fill_iommu(const struct rc_topo *t, const struct rc_topo_dev *d, struct rc_pf_node *n)
{
	const char *kind = d->has_pci ? d->pci.iommu_type : "";

	for (int g = 0; g < t->ngpus && !translating(kind); g++) {
		const struct rc_topo_rail *r = &t->rails[g];

		if (r->dev < 0)
			continue;
		if (translating(t->gpus[g].pci.iommu_type) || !kind[0])
			kind = t->gpus[g].pci.iommu_type;
		if (translating(t->devs[r->dev].pci.iommu_type) || !kind[0])
			kind = t->devs[r->dev].pci.iommu_type;
	}
	if (!kind[0] && t->facts.iommu == 0)
		kind = "off";
	COPY(n->iommu, kind);
}

static void fill_nic(const struct rc_topo_dev *d, const struct rc_topo_port *p, struct rc_pf_node *n)
{
	const char *v = d->pci.vendor, *dv = d->pci.device;

	if (d->has_pci && v[0] && dv[0])
		snprintf(n->nic_model, sizeof(n->nic_model), "%s:%s%s%.16s",
			 strncmp(v, "0x", 2) ? v : v + 2, strncmp(dv, "0x", 2) ? dv : dv + 2,
			 d->hca_type[0] ? " " : "", d->hca_type);
	else
		snprintf(n->nic_model, sizeof(n->nic_model), "%s", d->hca_type);
	n->pkey = p->pkey0;
	n->tclass = p->tclass;
	n->ecn_np = p->ecn_np;
	n->ecn_rp = p->ecn_rp;
}

int rc_pf_node_fill(const struct rc_topo *t, const char *dev, int port, int gid_index,
		    const char *rdmactl, struct rc_pf_node *n, struct rc_err *err)
{
	const struct rc_topo_dev *d = pick_dev(t, dev);
	const struct rc_topo_port *p;

	n->gid_index = -1;
	n->roce_tos = -1;
	n->netdev_mtu = -1;
	n->pkey = n->tclass = n->ecn_np = n->ecn_rp = -1;
	fill_host(t, rdmactl, n);
	fill_rails(t, n);
	if (!d && dev)
		return rc_err_set(err, ENODEV, "no RDMA device named %s", dev);
	if (!d)
		return rc_err_set(err, ENODEV, "no RDMA device");
	COPY(n->dev, d->name);
	COPY(n->provider, d->provider);
	COPY(n->driver, d->driver);
	COPY(n->fw_ver, d->fw_ver);
	n->has_pci = d->has_pci;
	if (d->has_pci)
		link_of(&d->pci, &n->nic_link);
	if (!(p = pick_port(d, port)))
		return rc_err_set(err, ENODEV, "%s has no port %d", d->name, port);
	fill_port(p, gid_index, n);
	fill_nic(d, p, n);
	fill_iommu(t, d, n);
	return 0;
}

/* The NIC closest to GPU g by PCIe path, whatever its ports' state (PCI
 * order on a tie); -1 none. */
static int closest_nic(const struct rc_topo *t, int g)
{
	int best = -1;

	for (int i = 0; i < t->nnic_pci; i++) {
		int d = t->nic_pci_order[i];

		if (t->matrix[g][d] != RC_PATH_NA &&
		    (best < 0 || t->matrix[g][d] < t->matrix[g][best]))
			best = d;
	}
	return best;
}

/* Device d as the next rail, unless it is one already. */
static void add_rail(const struct rc_topo *t, int d, const char *rdmactl, struct rc_pf_node *n,
		     int cap, int *k)
{
	struct rc_err e;

	if (d < 0 || *k >= cap)
		return;
	for (int i = 0; i < *k; i++)
		if (!strcmp(n[i].dev, t->devs[d].name))
			return;
	memset(&n[*k], 0, sizeof(n[*k]));
	if (!rc_pf_node_fill(t, t->devs[d].name, 0, -1, rdmactl, &n[*k], &e)) {
		n[*k].rail = *k;
		++*k;
	}
}

int rc_pf_node_fill_rails(const struct rc_topo *t, const char *dev, int port, int gid_index,
			  const char *rdmactl, struct rc_pf_node *n, int cap, int *nrails,
			  struct rc_err *err)
{
	int rc = rc_pf_node_fill(t, dev, port, gid_index, rdmactl, &n[0], err), k = 1;

	if (cap > RC_PF_RAILS_MAX)
		cap = RC_PF_RAILS_MAX;
	/* each GPU's NIC in the plan, and the closer one the plan passed
	 * over (its ports down): that one is named too */
	for (int g = 0; !rc && g < t->ngpus; g++) {
		add_rail(t, closest_nic(t, g), rdmactl, n, cap, &k);
		add_rail(t, t->rails[g].dev, rdmactl, n, cap, &k);
	}
	for (int i = 0; i < k; i++)
		n[i].rails = k;
	*nrails = k;
	return rc;
}

static void term(char *s, size_t len)
{
	s[len - 1] = '\0';
	for (char *c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c == 0x7f)
			*c = '?';
}

#define TERM(s) term((s), sizeof(s))

static int32_t clamp(int32_t v, int32_t lo, int32_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static void bound_link(struct rc_pf_link *l)
{
	TERM(l->addr);
	TERM(l->cur_speed);
	TERM(l->max_speed);
	l->cur_width = clamp(l->cur_width, 0, 64);
	l->max_width = clamp(l->max_width, 0, 64);
}

void rc_pf_node_bound(struct rc_pf_node *n)
{
	TERM(n->error);
	TERM(n->host);
	TERM(n->hostname);
	TERM(n->kernel);
	TERM(n->rdma_core);
	TERM(n->rdmactl);
	TERM(n->dev);
	TERM(n->provider);
	TERM(n->driver);
	TERM(n->fw_ver);
	TERM(n->link_layer);
	TERM(n->state);
	TERM(n->rate);
	TERM(n->netdev);
	TERM(n->netdev_state);
	TERM(n->gid_type);
	TERM(n->gid);
	TERM(n->gid_netdev);
	TERM(n->roce_mode);
	TERM(n->nic_model);
	TERM(n->acs_at);
	TERM(n->iommu);
	TERM(n->rail_plan);
	n->pkey = clamp(n->pkey, -1, 0xffff);
	n->tclass = clamp(n->tclass, -1, 255);
	n->ecn_np = clamp(n->ecn_np, -1, 0xff);
	n->ecn_rp = clamp(n->ecn_rp, -1, 0xff);
	n->nrails = clamp(n->nrails, 0, RC_TOPO_MAX_GPUS);
	n->rail = clamp(n->rail, 0, RC_PF_RAILS_MAX - 1);
	n->rails = clamp(n->rails, 1, RC_PF_RAILS_MAX);
	n->acs_redirect = clamp(n->acs_redirect, 0, n->nrails);
	n->acs_unknown = clamp(n->acs_unknown, 0, n->nrails);
	bound_link(&n->nic_link);
	bound_link(&n->gpu_link);
	n->loaded = n->loaded == 1;
	n->memlock_known = n->memlock_known == 1;
	n->memlock_unlimited = n->memlock_unlimited == 1;
	n->cap_ipc_lock = clamp(n->cap_ipc_lock, -1, 1);
	n->rdma_ucm = clamp(n->rdma_ucm, -1, 1);
	n->peermem = n->peermem == 1;
	n->ngpus = clamp(n->ngpus, 0, RC_TOPO_MAX_GPUS);
	n->gpus_slow = clamp(n->gpus_slow, 0, n->ngpus);
	n->port = clamp(n->port, 0, 255);
	n->active_mtu = clamp(n->active_mtu, 0, 1 << 16);
	n->netdev_mtu = clamp(n->netdev_mtu, -1, 1 << 20);
	n->gid_index = clamp(n->gid_index, -1, RC_TOPO_MAX_GIDS);
	n->gid_found = n->gid_found == 1;
	n->roce_tos = clamp(n->roce_tos, -1, 255);
	n->has_pci = n->has_pci == 1;
	if (!(n->rate_gbps >= 0 && n->rate_gbps <= 1e5)) /* NaN too */
		n->rate_gbps = 0;
	if (n->huge_total < -1)
		n->huge_total = -1;
	if (n->huge_free < -1)
		n->huge_free = -1;
}

static void link_text(const struct rc_pf_link *l, char *buf, size_t len)
{
	if (!l->cur_width && !l->cur_speed[0])
		snprintf(buf, len, "%s", "");
	else
		snprintf(buf, len, "%s x%d of %s x%d", l->cur_speed[0] ? l->cur_speed : "?",
			 l->cur_width, l->max_speed[0] ? l->max_speed : "?", l->max_width);
}

static void memlock_text(const struct rc_pf_node *n, char *buf, size_t len)
{
	if (!n->memlock_known)
		snprintf(buf, len, "%s", "");
	else if (n->memlock_unlimited)
		snprintf(buf, len, "%s", "unlimited");
	else
		snprintf(buf, len, "%llu KiB", (unsigned long long)(n->memlock >> 10));
}

static bool roce(const struct rc_pf_node *n)
{
	return !strcmp(n->link_layer, "Ethernet");
}

/* "0-7", "3,5", "none": the priorities of mask. */
static void prios(int mask, char *buf, size_t len)
{
	size_t at = 0;

	snprintf(buf, len, "%s", mask ? "" : "none");
	for (int p = 0; p < 8 && at < len; p++) {
		int q = p, w;

		if (!(mask & 1 << p))
			continue;
		while (q < 7 && mask & 1 << (q + 1))
			q++;
		w = q > p ? snprintf(buf + at, len - at, "%s%d-%d", at ? "," : "", p, q)
			  : snprintf(buf + at, len - at, "%s%d", at ? "," : "", p);
		at += w > 0 ? (size_t)w : 0;
		p = q;
	}
}

static void ecn_text(const struct rc_pf_node *n, char *buf, size_t len)
{
	char np[24], rp[24];

	if (!roce(n))
		return;
	if (n->ecn_np < 0 && n->ecn_rp < 0) {
		snprintf(buf, len, "%s", "absent");
		return;
	}
	prios(n->ecn_np > 0 ? n->ecn_np : 0, np, sizeof(np));
	prios(n->ecn_rp > 0 ? n->ecn_rp : 0, rp, sizeof(rp));
	snprintf(buf, len, "np %s, rp %s", np, rp);
}

/* The settings of the NIC's model, its partition and QoS, and the paths. */
static void value_more(const struct rc_pf_node *n, int s, char *buf, size_t len)
{
	switch (s) {
	case RC_PF_NIC_MODEL:
		snprintf(buf, len, "%s", n->nic_model);
		break;
	case RC_PF_DRIVER:
		snprintf(buf, len, "%s", n->driver);
		break;
	case RC_PF_PKEY:
		if (n->pkey >= 0)
			snprintf(buf, len, "0x%04x", n->pkey);
		break;
	case RC_PF_TCLASS:
		if (n->tclass >= 0)
			snprintf(buf, len, "%d", n->tclass);
		break;
	case RC_PF_ECN:
		ecn_text(n, buf, len);
		break;
	case RC_PF_IOMMU:
		snprintf(buf, len, "%s", n->iommu);
		break;
	case RC_PF_ACS:
		if (n->acs_redirect)
			snprintf(buf, len, "redirect on %d of %d paths", n->acs_redirect, n->nrails);
		else if (n->nrails && !n->acs_unknown)
			snprintf(buf, len, "%s", "off");
		break;
	case RC_PF_RAIL_PLAN:
		snprintf(buf, len, "%s", n->rail_plan);
		break;
	default:
		break;
	}
}

void rc_pf_value(const struct rc_pf_node *n, int s, char *buf, size_t len)
{
	buf[0] = '\0';
	switch (s) {
	case RC_PF_KERNEL:
		snprintf(buf, len, "%s", n->kernel);
		break;
	case RC_PF_RDMA_CORE:
		snprintf(buf, len, "%s", n->rdma_core);
		break;
	case RC_PF_RDMACTL:
		snprintf(buf, len, "%s", n->rdmactl);
		break;
	case RC_PF_PROVIDER:
		snprintf(buf, len, "%s", n->provider);
		break;
	case RC_PF_FW:
		snprintf(buf, len, "%s", n->fw_ver);
		break;
	case RC_PF_LINK_LAYER:
		snprintf(buf, len, "%s", n->link_layer);
		break;
	case RC_PF_STATE:
		snprintf(buf, len, "%s", n->state);
		break;
	case RC_PF_RATE:
		snprintf(buf, len, "%s", n->rate);
		break;
	case RC_PF_ACTIVE_MTU:
		if (n->active_mtu > 0)
			snprintf(buf, len, "%d", n->active_mtu);
		break;
	case RC_PF_NETDEV_MTU:
		if (n->netdev_mtu > 0)
			snprintf(buf, len, "%d", n->netdev_mtu);
		break;
	case RC_PF_GID_TYPE:
		snprintf(buf, len, "%s", n->gid_type);
		break;
	/* not set in configfs: the kernel's default, on RoCE */
	case RC_PF_ROCE_MODE:
		snprintf(buf, len, "%s", n->roce_mode[0] ? n->roce_mode : roce(n) ? "RoCE v2" : "");
		break;
	case RC_PF_ROCE_TOS:
		if (n->roce_tos >= 0 || roce(n))
			snprintf(buf, len, "%d", n->roce_tos >= 0 ? n->roce_tos : 0);
		break;
	case RC_PF_MEMLOCK:
		memlock_text(n, buf, len);
		break;
	case RC_PF_HUGEPAGES:
		if (n->huge_total >= 0)
			snprintf(buf, len, "%lld", (long long)n->huge_total);
		break;
	case RC_PF_RDMA_UCM:
		if (n->rdma_ucm >= 0)
			snprintf(buf, len, "%s", n->rdma_ucm ? "loaded" : "missing");
		break;
	case RC_PF_NIC_PCIE:
		link_text(&n->nic_link, buf, len);
		break;
	case RC_PF_GPU_PCIE:
		if (n->ngpus)
			snprintf(buf, len, "%d of %d below max", n->gpus_slow, n->ngpus);
		break;
	default:
		value_more(n, s, buf, len);
		break;
	}
}

double rc_pf_pcie_gbit(const struct rc_pf_link *l)
{
	double gts = l->cur_speed[0] ? strtod(l->cur_speed, NULL) : 0;
	double enc = gts >= 8 ? 128.0 / 130.0 : 0.8;

	if (gts <= 0 || l->cur_width <= 0)
		return 0;
	/* a 256-byte TLP carries about 24 bytes of headers and framing */
	return gts * l->cur_width * enc * 256.0 / 280.0;
}

static double wire_share(const struct rc_pf_node *a, const struct rc_pf_node *b)
{
	int mtu = a->active_mtu > 0 ? a->active_mtu : 1024;
	bool ib = !strcmp(a->link_layer, "InfiniBand");

	if (b->active_mtu > 0 && b->active_mtu < mtu)
		mtu = b->active_mtu;
	/* RoCE v2: Ethernet 14 + FCS 4 + preamble and gap 20, IPv4 20, UDP 8,
	 * BTH 12, ICRC 4; InfiniBand: LRH 8, BTH 12, ICRC 4, VCRC 2 */
	return (double)mtu / (mtu + (ib ? 26 : 82));
}

double rc_pf_expected_gbit(const struct rc_pf_node *a, const struct rc_pf_node *b)
{
	double rate = a->rate_gbps, x;

	if (b->rate_gbps > 0 && (rate <= 0 || b->rate_gbps < rate))
		rate = b->rate_gbps;
	if (rate <= 0)
		return 0;
	rate *= wire_share(a, b);
	if ((x = rc_pf_pcie_gbit(&a->nic_link)) > 0 && x < rate)
		rate = x;
	if ((x = rc_pf_pcie_gbit(&b->nic_link)) > 0 && x < rate)
		rate = x;
	return rate;
}
