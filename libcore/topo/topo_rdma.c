// SPDX-License-Identifier: MIT
/*
 * The RDMA side: /sys/class/infiniband/DEV, its ports, GID tables and
 * netdevs. On the live host libibverbs adds what sysfs lacks (the active
 * MTU, whether a userspace provider claims the device) and getifaddrs the
 * netdevs' addresses; a capture carries both in rdmactl/facts.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/dev.h>
#include <rdmactl/dev_core.h>
#include <rdmactl/topo_core.h>

#include "topo_int.h"

/* The kernel driver of a PCI function and the rdma-core provider that
 * serves it, where the names differ. */
static const struct {
	const char *driver, *provider;
} provider_map[] = {
	{ "mlx5_core", "mlx5" },  { "mlx4_core", "mlx4" }, { "ib_mthca", "mthca" },
	{ "bnxt_en", "bnxt_re" }, { "ice", "irdma" },      { "i40e", "irdma" },
	{ "idpf", "irdma" },      { "qede", "qedr" },      { "qed", "qedr" },
	{ "ib_qib", "qib" },      { "hns3", "hns" },       { "be2net", "ocrdma" },
	{ "mana", "mana" },
};

static void set_provider(struct rc_topo_dev *d)
{
	size_t n;

	if (d->parent_netdev[0]) {
		tp_copy(d->provider, sizeof(d->provider), "rxe");
		return;
	}
	if (!d->has_pci && !strcmp(d->node_type, "RNIC")) {
		tp_copy(d->provider, sizeof(d->provider), "siw");
		return;
	}
	for (size_t i = 0; i < sizeof(provider_map) / sizeof(provider_map[0]); i++) {
		if (!strcmp(d->driver, provider_map[i].driver)) {
			tp_copy(d->provider, sizeof(d->provider), provider_map[i].provider);
			return;
		}
	}
	if (d->driver[0]) {
		tp_copy(d->provider, sizeof(d->provider), d->driver);
		n = strlen(d->provider);
		if (n > 5 && !strcmp(d->provider + n - 5, "_core"))
			d->provider[n - 5] = '\0';
		return;
	}
	/* No driver link: the device name's stem (rxe0 -> rxe, siw_eth0 -> siw). */
	n = strcspn(d->name, "_0123456789");
	if (n >= sizeof(d->provider))
		n = sizeof(d->provider) - 1;
	memcpy(d->provider, d->name, n);
	d->provider[n] = '\0';
}

/* "4: ACTIVE" -> "ACTIVE" */
static void after_colon(char *s)
{
	char *c = strchr(s, ':');

	if (c)
		memmove(s, c + 1 + strspn(c + 1, " "), strlen(c + 1 + strspn(c + 1, " ")) + 1);
}

int rc_topo_parse_rate(const char *s, double *gbps, char *width, size_t wlen, char *speed,
		       size_t slen)
{
	char w[16] = "", sp[32] = "";
	char *end;
	double v;

	*gbps = 0;
	tp_copy(width, wlen, "");
	tp_copy(speed, slen, "");
	v = strtod(s, &end);
	if (end == s || v < 0 || strncmp(end, " Gb/sec", 7))
		return -EINVAL;
	*gbps = v;
	end = strchr(end, '(');
	if (end && sscanf(end, "(%15[^ )] %31[^)])", w, sp) >= 1) {
		tp_copy(width, wlen, w);
		tp_copy(speed, slen, sp);
	}
	return 0;
}

static bool gid_zero(const unsigned char *raw)
{
	for (int i = 0; i < 16; i++)
		if (raw[i])
			return false;
	return true;
}

/* The GID type as ibv_query_gid_ex reports it: -1 when sysfs did not say. */
static int gid_type(const struct rc_topo_gid *g)
{
	if (!strcmp(g->type, "IB"))
		return IBV_GID_TYPE_IB;
	if (!strcmp(g->type, "RoCE v1"))
		return IBV_GID_TYPE_ROCE_V1;
	if (!strcmp(g->type, "RoCE v2"))
		return IBV_GID_TYPE_ROCE_V2;
	return -1;
}

static int gid_rank(const struct rc_topo_port *p, const struct rc_topo_gid *g)
{
	return rc_gid_rank(!strcmp(p->link_layer, "InfiniBand"), gid_type(g), g->raw);
}

int rc_topo_pick_gid(const struct rc_topo_port *p)
{
	int best = -1, best_rank = 99;

	for (int i = 0; i < p->ngids; i++) {
		int r = gid_rank(p, &p->gids[i]);

		if (r >= 0 && r < best_rank) {
			best_rank = r;
			best = p->gids[i].index;
		}
	}
	return best;
}

static int load_gids(const struct rc_topo *t, const char *pdir, struct rc_topo_port *p)
{
	char rel[RC_TOPO_PATH_MAX], buf[128];
	struct tp_names n;
	int rc;

	if (tp_fmt(rel, sizeof(rel), "%s/gids", pdir))
		return -ENAMETOOLONG;
	if ((rc = tp_list(t, rel, &n)))
		return rc == -ENOENT ? 0 : rc;
	p->gids = calloc((size_t)(n.n ? n.n : 1), sizeof(*p->gids));
	if (!p->gids) {
		tp_names_free(&n);
		return -ENOMEM;
	}
	for (int i = 0; i < n.n && p->ngids < RC_TOPO_MAX_GIDS; i++) {
		struct rc_topo_gid *g = &p->gids[p->ngids];
		char *end;
		long idx = strtol(n.v[i], &end, 10);

		if (*end || end == n.v[i] || idx < 0 || idx >= 65536)
			continue;
		if (tp_fmt(rel, sizeof(rel), "%s/gids/%s", pdir, n.v[i]) ||
		    tp_read(t, rel, buf, sizeof(buf)) || inet_pton(AF_INET6, buf, g->raw) != 1 ||
		    gid_zero(g->raw))
			continue;
		g->index = (int)idx;
		inet_ntop(AF_INET6, g->raw, g->gid, sizeof(g->gid));
		if (!tp_fmt(rel, sizeof(rel), "%s/gid_attrs/types/%s", pdir, n.v[i]) &&
		    !tp_read(t, rel, buf, sizeof(buf))) {
			/* The kernel says "IB/RoCE v1" for both; the link layer tells. */
			if (!strcmp(buf, "IB/RoCE v1"))
				tp_copy(g->type, sizeof(g->type),
					strcmp(p->link_layer, "InfiniBand") ? "RoCE v1" : "IB");
			else
				tp_copy(g->type, sizeof(g->type), buf);
		} else if (!strcmp(p->link_layer, "InfiniBand")) {
			tp_copy(g->type, sizeof(g->type), "IB");
		}
		if (tp_fmt(rel, sizeof(rel), "%s/gid_attrs/ndevs/%s", pdir, n.v[i]) ||
		    tp_read(t, rel, g->netdev, sizeof(g->netdev)))
			g->netdev[0] = '\0';
		p->ngids++;
	}
	tp_names_free(&n);
	return 0;
}

/* The IPoIB (or Ethernet) netdev of a PCI device's port: its dev_port is
 * the port number minus one. */
static void netdev_of_pci(const struct rc_topo *t, const struct rc_topo_dev *d, int port, char *out,
			  size_t len)
{
	char rel[RC_TOPO_PATH_MAX + 64];
	struct tp_names n;
	long dev_port;

	if (!d->has_pci || tp_fmt(rel, sizeof(rel), "%s/net", d->pci.path) || tp_list(t, rel, &n))
		return;
	for (int i = 0; i < n.n; i++) {
		if (tp_fmt(rel, sizeof(rel), "%s/net/%s/dev_port", d->pci.path, n.v[i]) ||
		    tp_read_int(t, rel, &dev_port))
			dev_port = 0;
		if (dev_port == port - 1) {
			tp_copy(out, len, n.v[i]);
			break;
		}
	}
	tp_names_free(&n);
}

static void add_addr(struct rc_topo_port *p, const char *a)
{
	for (int i = 0; i < p->naddrs; i++)
		if (!strcmp(p->addrs[i], a))
			return;
	if (p->naddrs < RC_TOPO_MAX_ADDRS)
		tp_copy(p->addrs[p->naddrs++], sizeof(p->addrs[0]), a);
}

/* "ifaddr IF ADDR/PREFIX" */
static void ifaddr_fact(void *arg, const char *key, const char *val)
{
	struct rc_topo_port *p = arg;
	char ifname[64], addr[64];

	if (sscanf(val, "%63s %63s", ifname, addr) == 2 && !strcmp(ifname, p->netdev))
		add_addr(p, addr);
}

static int prefix_len(const struct sockaddr *mask)
{
	const unsigned char *b;
	int n = 0, len;

	if (!mask)
		return 0;
	if (mask->sa_family == AF_INET) {
		b = (const unsigned char *)&((const struct sockaddr_in *)mask)->sin_addr;
		len = 4;
	} else {
		b = ((const struct sockaddr_in6 *)mask)->sin6_addr.s6_addr;
		len = 16;
	}
	for (int i = 0; i < len; i++)
		n += __builtin_popcount(b[i]);
	return n;
}

static void live_addrs(struct ifaddrs *ifa, struct rc_topo_port *p)
{
	for (; ifa; ifa = ifa->ifa_next) {
		char a[INET6_ADDRSTRLEN], s[64];
		const void *src;

		if (!ifa->ifa_addr || strcmp(ifa->ifa_name, p->netdev))
			continue;
		if (ifa->ifa_addr->sa_family == AF_INET)
			src = &((const struct sockaddr_in *)ifa->ifa_addr)->sin_addr;
		else if (ifa->ifa_addr->sa_family == AF_INET6)
			src = &((const struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr;
		else
			continue;
		if (!inet_ntop(ifa->ifa_addr->sa_family, src, a, sizeof(a)))
			continue;
		snprintf(s, sizeof(s), "%s/%d", a, prefix_len(ifa->ifa_netmask));
		add_addr(p, s);
	}
}

struct mtu_fact {
	const char *dev;
	struct rc_topo_port *p;
};

/* "active_mtu DEV PORT BYTES" */
static void mtu_fact(void *arg, const char *key, const char *val)
{
	struct mtu_fact *m = arg;
	char dev[RC_TOPO_NAME_MAX];
	int port, mtu;

	if (sscanf(val, "%63s %d %d", dev, &port, &mtu) == 3 && !strcmp(dev, m->dev) &&
	    port == m->p->num && mtu > 0 && mtu <= 65536)
		m->p->active_mtu = mtu;
}

struct load_ctx {
	struct ifaddrs *ifa;      /* live */
	struct ibv_device **list; /* live */
	int nlist;
};

static int load_port(struct rc_topo *t, struct load_ctx *lc, struct rc_topo_dev *d,
		     const char *pname, struct rc_err *err)
{
	struct rc_topo_port *p = &d->ports[d->nports];
	char pdir[RC_TOPO_PATH_MAX], rel[RC_TOPO_PATH_MAX];
	long v;
	int rc;

	memset(p, 0, sizeof(*p));
	p->num = atoi(pname);
	p->lid = p->sm_lid = p->netdev_mtu = -1;
	p->rec_gid = -1;
	p->verify.gid_index = -1;
	if (tp_fmt(pdir, sizeof(pdir), "class/infiniband/%s/ports/%s", d->name, pname))
		return rc_err_set(err, ENAMETOOLONG, "%s: port path too long", d->name);
	if (tp_fmt(rel, sizeof(rel), "%s/state", pdir) ||
	    tp_read(t, rel, p->state, sizeof(p->state)))
		return rc_err_set(err, ENOENT, "%s port %s has no readable state file (%s/%s)",
				  d->name, pname, t->root, rel);
	after_colon(p->state);
	if (!tp_fmt(rel, sizeof(rel), "%s/phys_state", pdir) &&
	    !tp_read(t, rel, p->phys_state, sizeof(p->phys_state)))
		after_colon(p->phys_state);
	if (tp_fmt(rel, sizeof(rel), "%s/link_layer", pdir) ||
	    tp_read(t, rel, p->link_layer, sizeof(p->link_layer)))
		tp_copy(p->link_layer, sizeof(p->link_layer), "");
	if (!tp_fmt(rel, sizeof(rel), "%s/rate", pdir) && !tp_read(t, rel, p->rate, sizeof(p->rate)))
		rc_topo_parse_rate(p->rate, &p->rate_gbps, p->width, sizeof(p->width), p->speed,
				   sizeof(p->speed));
	if (!strcmp(p->link_layer, "InfiniBand")) {
		if (!tp_fmt(rel, sizeof(rel), "%s/lid", pdir) && !tp_read_int(t, rel, &v) &&
		    v >= 0 && v <= 0xffff)
			p->lid = (int)v;
		if (!tp_fmt(rel, sizeof(rel), "%s/sm_lid", pdir) && !tp_read_int(t, rel, &v) &&
		    v >= 0 && v <= 0xffff)
			p->sm_lid = (int)v;
	}
	if ((rc = load_gids(t, pdir, p)))
		return rc_err_set(err, -rc, "%s port %d: cannot read its GID table: %s", d->name,
				  p->num, tp_why(rc));
	p->rec_gid = rc_topo_pick_gid(p);
	for (int i = 0; i < p->ngids && !p->netdev[0]; i++)
		tp_copy(p->netdev, sizeof(p->netdev), p->gids[i].netdev);
	if (!p->netdev[0])
		tp_copy(p->netdev, sizeof(p->netdev), d->parent_netdev);
	if (!p->netdev[0])
		netdev_of_pci(t, d, p->num, p->netdev, sizeof(p->netdev));
	if (p->netdev[0]) {
		if (!tp_fmt(rel, sizeof(rel), "class/net/%s/mtu", p->netdev) &&
		    !tp_read_int(t, rel, &v) && v > 0 && v < 1 << 20)
			p->netdev_mtu = (int)v;
		if (tp_fmt(rel, sizeof(rel), "class/net/%s/operstate", p->netdev) ||
		    tp_read(t, rel, p->netdev_state, sizeof(p->netdev_state)))
			p->netdev_state[0] = '\0';
		if (t->live) {
			live_addrs(lc->ifa, p);
			p->addrs_known = lc->ifa != NULL;
		} else {
			p->addrs_known = !tp_facts_each(t, "ifaddr", ifaddr_fact, p);
		}
	}
	if (!t->live) {
		struct mtu_fact m = { d->name, p };

		tp_facts_each(t, "active_mtu", mtu_fact, &m);
	}
	d->nports++;
	return 0;
}

/* Live: does a userspace provider claim the device, and what MTU is
 * active on each port (sysfs does not say). */
static void live_verbs(struct load_ctx *lc, struct rc_topo_dev *d)
{
	struct ibv_context *ctx = NULL;

	d->verbs = 0;
	for (int i = 0; i < lc->nlist; i++) {
		if (strcmp(ibv_get_device_name(lc->list[i]), d->name))
			continue;
		d->verbs = 1;
		ctx = ibv_open_device(lc->list[i]);
		break;
	}
	if (!ctx)
		return;
	for (int p = 0; p < d->nports; p++) {
		struct ibv_port_attr pa;

		if (!ibv_query_port(ctx, (uint8_t)d->ports[p].num, &pa) && pa.active_mtu >= 1 &&
		    pa.active_mtu <= 5)
			d->ports[p].active_mtu = 128 << pa.active_mtu;
	}
	ibv_close_device(ctx);
}

static int load_dev(struct rc_topo *t, struct load_ctx *lc, const char *name, struct rc_err *err)
{
	struct rc_topo_dev *d = &t->devs[t->ndevs];
	char base[RC_TOPO_PATH_MAX], rel[RC_TOPO_PATH_MAX];
	struct tp_names ports;
	int rc = 0;

	memset(d, 0, sizeof(*d));
	d->verbs = -1;
	tp_copy(d->name, sizeof(d->name), name);
	if (tp_fmt(base, sizeof(base), "class/infiniband/%s", name))
		return rc_err_set(err, ENAMETOOLONG, "device name too long: %s", name);
	if (!tp_is_dir(t, base))
		return rc_err_set(err, ENOENT, "%s/%s is not a directory (a dangling link?)",
				  t->root, base);
#define READ(file, field) \
	do { \
		if (tp_fmt(rel, sizeof(rel), "%s/" file, base) || \
		    tp_read(t, rel, d->field, sizeof(d->field))) \
			d->field[0] = '\0'; \
	} while (0)
	READ("node_guid", node_guid);
	READ("fw_ver", fw_ver);
	READ("node_type", node_type);
	READ("parent", parent_netdev);
#undef READ
	after_colon(d->node_type);
	if (tp_fmt(rel, sizeof(rel), "%s/device", base))
		return rc_err_set(err, ENAMETOOLONG, "path too long");
	d->has_pci = !tp_load_pci(t, rel, &d->pci);
	if (d->has_pci)
		tp_copy(d->driver, sizeof(d->driver), d->pci.driver);
	set_provider(d);
	if (tp_fmt(rel, sizeof(rel), "%s/ports", base) || tp_list(t, rel, &ports))
		return rc_err_set(err, ENOENT,
				  "%s has no ports directory (%s/%s/ports): not a complete RDMA device",
				  name, t->root, base);
	for (int i = 0; i < ports.n && !rc; i++) {
		/* Port 0 is a switch's management port; hosts number from 1. */
		if (!isdigit((unsigned char)ports.v[i][0]))
			continue;
		if (d->nports >= RC_TOPO_MAX_PORTS)
			break;
		rc = load_port(t, lc, d, ports.v[i], err);
	}
	tp_names_free(&ports);
	if (!rc && !d->nports)
		rc = rc_err_set(err, ENOENT, "%s has no ports under %s/%s/ports", name, t->root,
				base);
	if (!rc && t->live)
		live_verbs(lc, d);
	if (rc) {
		for (int p = 0; p < d->nports; p++)
			free(d->ports[p].gids);
		d->nports = 0;
	}
	return rc;
}

int tp_load_devs(struct rc_topo *t, struct rc_err *err)
{
	struct load_ctx lc = { 0 };
	struct tp_names n;
	int rc = tp_list(t, "class/infiniband", &n);

	if (rc == -ENOENT)
		return 0; /* no RDMA device at all: a finding, not a failure */
	if (rc)
		return rc_err_set(err, -rc, "cannot list %s/class/infiniband: %s", t->root,
				  tp_why(rc));
	if (t->live) {
		if (getifaddrs(&lc.ifa))
			lc.ifa = NULL;
		lc.list = ibv_get_device_list(&lc.nlist);
		if (!lc.list)
			lc.nlist = 0;
	}
	rc = 0;
	for (int i = 0; i < n.n && !rc; i++) {
		struct rc_err e;

		if (t->ndevs >= RC_TOPO_MAX_DEVS) {
			t->devs_left_out = n.n - i;
			break;
		}
		rc = load_dev(t, &lc, n.v[i], &e);
		if (!rc) {
			t->ndevs++;
		} else if (t->live) {
			/* A real host has odd devices: say so and go on. */
			tp_add_finding(t, RC_SEV_ERROR, "device",
				       "look at the device's sysfs directory and dmesg",
				       "%s skipped: %s", n.v[i], e.msg);
			rc = 0;
		} else if (err) {
			*err = e;
		}
	}
	tp_names_free(&n);
	if (lc.list)
		ibv_free_device_list(lc.list);
	if (lc.ifa)
		freeifaddrs(lc.ifa);
	return rc;
}
