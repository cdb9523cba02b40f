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
		w = snprintf(buf + at, len - at, "%srank %d (%s%s%s%s%s)", k ? ", " : "", n->rank,
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
	/* the records are in rank order: a node's rails name it once */
	for (int k = 0; k < nr; k++) {
		int rank = j->nodes[ranks[k]].rank;

		if (f->nranks && f->ranks[(f->nranks < 64 ? f->nranks : 64) - 1] == rank)
			continue;
		if (f->nranks < 64)
			f->ranks[f->nranks] = rank;
		f->nranks++;
	}
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

/* A known value of one rail: its text and the record it is of. */
struct val {
	const char *v;
	int row;
};

/* The records holding one value: vs[start..start+count-1], its first. */
struct run {
	int start, count, first;
};

static int by_value(const void *a, const void *b)
{
	const struct val *x = a, *y = b;
	int c = strcmp(x->v, y->v);

	return c ? c : x->row - y->row;
}

static int by_first(const void *a, const void *b)
{
	return ((const struct run *)a)->first - ((const struct run *)b)->first;
}

/* The values in runs, in the order of their first record; the reference is
 * the run most records hold (on a tie, the lowest record's). Returns the
 * number of runs, *ref the reference's. */
static int runs_of(struct val *vs, int m, struct run *runs, int *ref)
{
	int nr = 0;

	qsort(vs, (size_t)m, sizeof(*vs), by_value);
	for (int i = 0; i < m; i++)
		if (!i || strcmp(vs[i].v, vs[i - 1].v))
			runs[nr++] = (struct run){ i, 1, vs[i].row };
		else
			runs[nr - 1].count++;
	qsort(runs, (size_t)nr, sizeof(*runs), by_first);
	*ref = 0;
	for (int k = 1; k < nr; k++)
		if (runs[k].count > runs[*ref].count)
			*ref = k;
	return nr;
}

/* Each value of rail `rail` other than the reference: its records, one
 * finding. n: the records of that rail. */
static void differing(struct judge *j, const struct rule *r, const struct val *vs,
		      const struct run *runs, int nr, int ref, int n, int rail, int *rows)
{
	const struct run *R = &runs[ref];
	const char *refv = vs[R->start].v;

	for (int k = 0; k < nr; k++) {
		const char *v = vs[runs[k].start].v;
		char fix[320], on[32] = "";

		if (k == ref)
			continue;
		for (int i = 0; i < runs[k].count; i++)
			rows[i] = vs[runs[k].start + i].row;
		if (rail)
			snprintf(on, sizeof(on), " on their rail %d", rail);
		fix_for(r->setting, &j->nodes[runs[k].first], refv, fix, sizeof(fix));
		pf_add(j, &(struct say){ r->sev, "differs", r->setting, v, refv, r->why, fix },
		       rows, runs[k].count, "%s is %s where %d of %d nodes have %s%s%s",
		       rc_pf_setting_name(r->setting), v, R->count, n, refv, on,
		       R->count * 2 > n
			       ? ""
			       : " (no majority: the lowest rank's value is the reference)");
	}
}

/* Settings of the node, not of a rail: its rail 0 carries them. */
static bool of_host(int s)
{
	return s == RC_PF_KERNEL || s == RC_PF_RDMA_CORE || s == RC_PF_RDMACTL ||
	       s == RC_PF_MEMLOCK || s == RC_PF_HUGEPAGES || s == RC_PF_RAIL_PLAN;
}

struct cmp_buf {
	char (*vals)[VAL_MAX];
	struct val *vs;
	struct run *runs;
	int *rows;
};

/* Setting r of rail `rail` across the nodes; true when some node differs. */
static bool compare_one(struct judge *j, const struct rule *r, int rail, bool report,
			struct cmp_buf *b)
{
	int m = 0, n = 0, nr, ref;

	for (int i = 0; i < j->n; i++) {
		if (j->nodes[i].rail != rail)
			continue;
		n++;
		b->vals[i][0] = '\0';
		if (j->nodes[i].loaded)
			rc_pf_value(&j->nodes[i], r->setting, b->vals[i], VAL_MAX);
		if (b->vals[i][0])
			b->vs[m++] = (struct val){ b->vals[i], i };
	}
	if (m < 2)
		return false;
	nr = runs_of(b->vs, m, b->runs, &ref);
	if (report)
		differing(j, r, b->vs, b->runs, nr, ref, n, rail, b->rows);
	return nr > 1;
}

int pf_compare_settings(struct judge *j)
{
	struct cmp_buf b = { calloc((size_t)j->n, VAL_MAX), calloc((size_t)j->n, sizeof(*b.vs)),
			     calloc((size_t)j->n, sizeof(*b.runs)),
			     calloc((size_t)j->n, sizeof(int)) };
	bool netdev_mtu_differs = false, driver_differs = false;
	int rails = 1;

	if (!b.vals || !b.vs || !b.runs || !b.rows) {
		free(b.vals);
		free(b.vs);
		free(b.runs);
		free(b.rows);
		return -ENOMEM;
	}
	for (int i = 0; i < j->n; i++)
		if (j->nodes[i].rail >= rails)
			rails = j->nodes[i].rail + 1;
	for (size_t r = 0; r < sizeof(rules) / sizeof(rules[0]); r++) {
		int s = rules[r].setting;
		/* the provider is named after the driver, the RDMA MTU follows
		 * the netdev's: one cause, one finding */
		bool report = !(s == RC_PF_PROVIDER && driver_differs) &&
			      !(s == RC_PF_ACTIVE_MTU && netdev_mtu_differs);

		for (int rail = 0; rail < (of_host(s) ? 1 : rails); rail++) {
			bool d = compare_one(j, &rules[r], rail, report, &b);

			netdev_mtu_differs |= s == RC_PF_NETDEV_MTU && d;
			driver_differs |= s == RC_PF_DRIVER && d;
		}
	}
	free(b.vals);
	free(b.vs);
	free(b.runs);
	free(b.rows);
	return 0;
}
