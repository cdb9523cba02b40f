// SPDX-License-Identifier: MIT
/*
 * preflight: each setting across the nodes. The value most nodes hold is
 * the reference (on a tie, the lowest rank's); the nodes of each other
 * value make one finding, with why that setting matters and how to set it.
 * Unknown values are left out of the count.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preflight_int.h"

static void name_nodes(const struct judge *j, const int *ranks, int nr, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int k = 0; k < nr && at < len; k++) {
		const struct rc_pf_node *n = &j->nodes[ranks[k]];
		int w;

		if (k == 4) {
			snprintf(buf + at, len - at, ", and %d more", nr - k);
			return;
		}
		w = snprintf(buf + at, len - at, "%srank %d (%s%s%s%s%s)", k ? ", " : "", ranks[k],
			     n->hostname, n->host[0] ? " " : "", n->host, n->dev[0] ? " " : "",
			     n->dev);
		if (w < 0)
			return;
		at += (size_t)w;
	}
}

void pf_add(struct judge *j, const struct say *s, const int *ranks, int nr, const char *fmt, ...)
{
	struct rc_pf_finding *f;
	va_list ap;

	if (s->sev != j->pass)
		return;
	for (int k = 0; j->differs && s->setting >= 0 && k < nr; k++)
		j->differs[(size_t)ranks[k] * RC_PF_NSETTINGS + (size_t)s->setting] = 1;
	if (j->nf++ >= j->cap)
		return;
	f = &j->f[j->nf - 1];
	memset(f, 0, sizeof(*f));
	f->severity = s->sev;
	snprintf(f->check, sizeof(f->check), "%s", s->check);
	snprintf(f->setting, sizeof(f->setting), "%s",
		 s->setting >= 0 ? rc_pf_setting_name(s->setting) : "");
	f->nranks = nr;
	for (int k = 0; k < nr && k < 64; k++)
		f->ranks[k] = ranks[k];
	name_nodes(j, ranks, nr, f->nodes, sizeof(f->nodes));
	snprintf(f->value, sizeof(f->value), "%s", s->value ? s->value : "");
	snprintf(f->reference, sizeof(f->reference), "%s", s->reference ? s->reference : "");
	snprintf(f->why, sizeof(f->why), "%s", s->why);
	snprintf(f->fix, sizeof(f->fix), "%s", s->fix);
	va_start(ap, fmt);
	vsnprintf(f->message, sizeof(f->message), fmt, ap);
	va_end(ap);
}

struct rule {
	int setting;
	enum rc_topo_sev sev;
	const char *why;
};

static const struct rule rules[] = {
	{ RC_PF_LINK_LAYER, RC_SEV_ERROR,
	  "InfiniBand and Ethernet (RoCE) ports cannot reach each other" },
	{ RC_PF_GID_TYPE, RC_SEV_ERROR,
	  "RoCE v1 and v2 do not interoperate: a QP between them never reaches RTR" },
	{ RC_PF_ROCE_MODE, RC_SEV_ERROR,
	  "rdma_cm takes the RoCE version from this default: nodes that differ send v1 to v2 peers and their connections fail (some libraries then fall back to TCP)" },
	{ RC_PF_NETDEV_MTU, RC_SEV_ERROR,
	  "the RoCE MTU follows the netdev's: the smaller one caps every path through it, and a fabric set for the larger drops its frames or fails the QP at RTR ('check mtu')" },
	{ RC_PF_ACTIVE_MTU, RC_SEV_WARNING,
	  "connections run at the smaller RDMA MTU of their two ends: fewer bytes a packet, lower bandwidth" },
	{ RC_PF_RATE, RC_SEV_WARNING,
	  "a slower port holds every collective through it to its speed" },
	{ RC_PF_ROCE_TOS, RC_SEV_WARNING,
	  "the ToS picks the traffic class: traffic in another class loses its PFC and ECN protection (drops, retransmissions)" },
	{ RC_PF_PKEY, RC_SEV_ERROR,
	  "ports in different partitions cannot talk to each other: the QP fails at RTR or its packets are dropped (a P_Key mismatch)" },
	{ RC_PF_TCLASS, RC_SEV_WARNING,
	  "the traffic class picks the switch queue: a node in another class loses its PFC and ECN protection (drops, retransmissions)" },
	{ RC_PF_ECN, RC_SEV_WARNING,
	  "RoCE congestion control needs ECN marking noticed (np) and answered (rp) on every node: one without it keeps sending into a congested queue, and PFC pauses spread" },
	{ RC_PF_RAIL_PLAN, RC_SEV_WARNING,
	  "a node whose GPUs reach other NICs, or over longer PCIe paths, runs its rails unlike the others: a NIC list tuned for the majority misroutes traffic there" },
	{ RC_PF_NIC_MODEL, RC_SEV_WARNING,
	  "unlike NIC models differ in rate, limits and offloads: the job tunes for one and the others hold it back" },
	{ RC_PF_DRIVER, RC_SEV_WARNING,
	  "NIC drivers differ in defaults and fixes: the odd one out is the first suspect of a hang" },
	{ RC_PF_PROVIDER, RC_SEV_WARNING,
	  "unlike NICs differ in limits and offloads: the job tunes for one of them" },
	{ RC_PF_FW, RC_SEV_WARNING,
	  "firmware releases differ in defaults and known bugs: the odd one out is the first suspect of a hang" },
	{ RC_PF_RDMACTL, RC_SEV_WARNING, "rdmactl releases may not speak the same group protocol" },
	{ RC_PF_RDMA_CORE, RC_SEV_WARNING,
	  "rdma-core releases differ in providers and defaults (libibverbs, librdmacm)" },
	{ RC_PF_KERNEL, RC_SEV_INFO, "kernels differ in RDMA drivers and their defaults" },
	{ RC_PF_MEMLOCK, RC_SEV_INFO,
	  "ranks with a lower limit can register less: a job sized on the others fails there" },
	{ RC_PF_HUGEPAGES, RC_SEV_INFO,
	  "a job that asks for hugepages fails, or falls back to small pages, where fewer are reserved" },
};

/* The fixes of the NIC's model, partition, QoS and rail plan; false for
 * another setting. */
static bool fix_more(int s, const struct rc_pf_node *n, const char *ref, char *buf, size_t len)
{
	switch (s) {
	case RC_PF_NIC_MODEL:
		snprintf(buf, len,
			 "run the job on like NICs, or leave %s out (NCCL_IB_HCA=^%s, UCX_NET_DEVICES without it)",
			 n->dev, n->dev);
		return true;
	case RC_PF_PKEY:
		snprintf(buf, len,
			 "make %s port %d a full member of partition %s as on the other nodes (the subnet manager's partitions.conf), and give the job that partition's index (NCCL_IB_PKEY, UCX_IB_PKEY)",
			 n->dev, n->port, ref);
		return true;
	case RC_PF_TCLASS:
		snprintf(buf, len,
			 "echo %s > /sys/class/infiniband/%s/tc/%d/traffic_class (or NCCL_IB_TC=%s for the job)",
			 ref, n->dev, n->port, ref);
		return true;
	case RC_PF_ECN:
		snprintf(buf, len,
			 "set %s's RoCE ECN as on the other nodes (%s): echo 1 (or 0) > /sys/class/net/%s/ecn/roce_np/enable/PRIO and .../roce_rp/enable/PRIO for each priority; where the driver has no such knobs, run the job on like NICs",
			 n->netdev[0] ? n->netdev : n->dev, ref,
			 n->netdev[0] ? n->netdev : "NETDEV");
		return true;
	case RC_PF_RAIL_PLAN:
		snprintf(buf, len,
			 "compare 'rdmactl probe-topology' there with a node of the majority (slots, NICs down, BIOS bifurcation); until fixed, give that node its own NIC order (NCCL_IB_HCA, UCX_NET_DEVICES) from its plan");
		return true;
	default:
		return false;
	}
}

static void fix_for(int s, const struct rc_pf_node *n, const char *ref, char *buf, size_t len)
{
	const char *mode = ref[0] ? ref : "RoCE v2";

	if (fix_more(s, n, ref, buf, len))
		return;
	switch (s) {
	case RC_PF_NETDEV_MTU:
		snprintf(buf, len,
			 "ip link set %s mtu %s there (and the switch ports to match)%s%s%s%s%s%s",
			 n->netdev, ref,
			 strcmp(n->provider, "rxe") ? "" : "; then rdma link delete ",
			 strcmp(n->provider, "rxe") ? "" : n->dev,
			 strcmp(n->provider, "rxe") ? "" : "; rdma link add ",
			 strcmp(n->provider, "rxe") ? "" : n->dev,
			 strcmp(n->provider, "rxe") ? "" : " type rxe netdev ",
			 strcmp(n->provider, "rxe") ? "" : n->netdev);
		break;
	case RC_PF_ACTIVE_MTU:
		snprintf(buf, len,
			 "give %s the netdev MTU of the other nodes (the RDMA MTU follows it); on InfiniBand, the partition's MTU in the subnet manager",
			 n->netdev[0] ? n->netdev : n->dev);
		break;
	case RC_PF_ROCE_MODE:
		snprintf(buf, len,
			 "mkdir -p /sys/kernel/config/rdma_cm/%s; echo '%s' > /sys/kernel/config/rdma_cm/%s/ports/%d/default_roce_mode",
			 n->dev, mode, n->dev, n->port);
		break;
	case RC_PF_ROCE_TOS:
		snprintf(buf, len,
			 "mkdir -p /sys/kernel/config/rdma_cm/%s; echo %s > /sys/kernel/config/rdma_cm/%s/ports/%d/default_roce_tos",
			 n->dev, ref, n->dev, n->port);
		break;
	case RC_PF_GID_TYPE:
		snprintf(buf, len,
			 "use a %s GID on every node (NCCL_IB_GID_INDEX, UCX_IB_GID_INDEX; 'rdmactl probe-topology -d %s' lists them)",
			 ref, n->dev);
		break;
	case RC_PF_LINK_LAYER:
	case RC_PF_PROVIDER:
	case RC_PF_RATE:
		snprintf(buf, len,
			 "%s, or leave the device out (NCCL_IB_HCA=^%s, UCX_NET_DEVICES without it)",
			 s == RC_PF_RATE
				 ? "check the cable, the transceiver and the switch port's speed"
			 : s == RC_PF_PROVIDER
				 ? "run the job on like NICs"
				 : "set the port's link type to match (mlxconfig LINK_TYPE_P1)",
			 n->dev);
		break;
	case RC_PF_FW:
		snprintf(buf, len, "update %s's firmware to %s", n->dev, ref);
		break;
	case RC_PF_MEMLOCK:
		snprintf(buf, len, "set the same limit everywhere (ulimit -l)");
		break;
	case RC_PF_HUGEPAGES:
		snprintf(buf, len,
			 "reserve %s hugepages there too (/sys/kernel/mm/hugepages/*/nr_hugepages)",
			 ref);
		break;
	default:
		snprintf(buf, len, "install %s %s there, as on the other nodes",
			 rc_pf_setting_name(s), ref);
	}
}

/* The reference of vals (n of VAL_MAX): the most held known value, on a tie
 * the lowest rank's; -1 when fewer than two nodes know it. */
static int reference(const char (*vals)[VAL_MAX], int n, int *count)
{
	int best = -1, known = 0;

	*count = 0;
	for (int i = 0; i < n; i++) {
		int c = 0;

		if (!vals[i][0])
			continue;
		known++;
		for (int k = 0; k < n; k++)
			c += !strcmp(vals[i], vals[k]);
		if (c > *count) {
			*count = c;
			best = i;
		}
	}
	return known < 2 ? -1 : best;
}

/* A known value other than the reference's. */
static bool others(const char (*vals)[VAL_MAX], int n, int ref)
{
	for (int i = 0; i < n; i++)
		if (vals[i][0] && strcmp(vals[i], vals[ref]))
			return true;
	return false;
}

/* Each value other than the reference: its nodes, one finding. */
static void differing(struct judge *j, const struct rule *r, const char (*vals)[VAL_MAX], int ref,
		      int count, int *ranks)
{
	for (int i = 0; i < j->n; i++) {
		char fix[320];
		int nr = 0;
		bool first = true;

		if (!vals[i][0] || !strcmp(vals[i], vals[ref]))
			continue;
		for (int k = 0; k < i && first; k++)
			first = strcmp(vals[k], vals[i]) != 0;
		if (!first)
			continue;
		for (int k = i; k < j->n; k++)
			if (!strcmp(vals[k], vals[i]))
				ranks[nr++] = k;
		fix_for(r->setting, &j->nodes[i], vals[ref], fix, sizeof(fix));
		pf_add(j,
		       &(struct say){ r->sev, "differs", r->setting, vals[i], vals[ref], r->why,
				      fix },
		       ranks, nr, "%s is %s where %d of %d nodes have %s%s",
		       rc_pf_setting_name(r->setting), vals[i], count, j->n, vals[ref],
		       count * 2 > j->n
			       ? ""
			       : " (no majority: the lowest rank's value is the reference)");
	}
}

int pf_compare_settings(struct judge *j)
{
	char(*vals)[VAL_MAX] = calloc((size_t)j->n, VAL_MAX);
	int *ranks = calloc((size_t)j->n, sizeof(int));
	bool netdev_mtu_differs = false, driver_differs = false;

	if (!vals || !ranks) {
		free(vals);
		free(ranks);
		return -ENOMEM;
	}
	for (size_t r = 0; r < sizeof(rules) / sizeof(rules[0]); r++) {
		int ref, count;

		for (int i = 0; i < j->n; i++)
			if (j->nodes[i].loaded)
				rc_pf_value(&j->nodes[i], rules[r].setting, vals[i], VAL_MAX);
			else
				vals[i][0] = '\0';
		if ((ref = reference(vals, j->n, &count)) < 0)
			continue;
		if (rules[r].setting == RC_PF_NETDEV_MTU)
			netdev_mtu_differs = others(vals, j->n, ref);
		if (rules[r].setting == RC_PF_DRIVER)
			driver_differs = others(vals, j->n, ref);
		/* the provider is named after the driver: one cause, one finding */
		if (rules[r].setting == RC_PF_PROVIDER && driver_differs)
			continue;
		/* the netdev's MTU is the cause; the RDMA MTU only follows it */
		if (rules[r].setting == RC_PF_ACTIVE_MTU && netdev_mtu_differs)
			continue;
		differing(j, &rules[r], (const char(*)[VAL_MAX])vals, ref, count, ranks);
	}
	free(vals);
	free(ranks);
	return 0;
}
