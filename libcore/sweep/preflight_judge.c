// SPDX-License-Identifier: MIT
/*
 * preflight's verdict: each record checked on its own, then each setting
 * across the records, the value most nodes hold as the reference. The
 * findings come out errors first, then warnings, then infos: the checks
 * run once for each severity and keep that severity's findings.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/preflight.h>

#include "preflight_int.h"

static bool downtrained(const struct rc_pf_link *l)
{
	double cur = l->cur_speed[0] ? strtod(l->cur_speed, NULL) : 0;
	double max = l->max_speed[0] ? strtod(l->max_speed, NULL) : 0;

	return (l->cur_width > 0 && l->max_width > 0 && l->cur_width < l->max_width) ||
	       (cur > 0 && max > 0 && cur < max);
}

static void check_port(struct judge *j, int r)
{
	const struct rc_pf_node *n = &j->nodes[r];
	char fix[320];

	if (n->state[0] && strcmp(n->state, "ACTIVE")) {
		snprintf(fix, sizeof(fix),
			 "bring the link up (cable, switch port%s%s); 'rdma link show %s/%d' shows it",
			 n->netdev[0] ? ", ip link set up " : "", n->netdev, n->dev, n->port);
		pf_add(j,
		       &(struct say){
			       RC_SEV_ERROR, "port_down", RC_PF_STATE, n->state, "ACTIVE",
			       "a port that is not ACTIVE carries no traffic: the job cannot connect there",
			       fix },
		       &r, 1, "%s port %d is %s", n->dev, n->port, n->state);
	}
	if (!strcmp(n->netdev_state, "down")) {
		snprintf(fix, sizeof(fix), "ip link set %s up", n->netdev);
		pf_add(j,
		       &(struct say){
			       RC_SEV_ERROR, "netdev_down", -1, "down", "up",
			       "RoCE runs over the netdev: with it down the GIDs go and connections fail",
			       fix },
		       &r, 1, "%s (below %s) is down", n->netdev, n->dev);
	}
}

static void check_gid(struct judge *j, int r)
{
	const struct rc_pf_node *n = &j->nodes[r];
	char fix[320];

	if (strcmp(n->link_layer, "Ethernet"))
		return;
	snprintf(fix, sizeof(fix),
		 "use a GID index that has an address behind it (NCCL_IB_GID_INDEX, UCX_IB_GID_INDEX; 'rdmactl probe-topology -d %s' lists them), or give %s its address back",
		 n->dev, n->netdev[0] ? n->netdev : "the netdev");
	if (n->gid_index < 0)
		pf_add(j,
		       &(struct say){
			       RC_SEV_ERROR, "gid_netdev", RC_PF_GID_TYPE, "none", NULL,
			       "without a RoCE GID the port cannot be addressed: modify QP to RTR fails",
			       fix },
		       &r, 1, "%s port %d has no usable RoCE GID", n->dev, n->port);
	else if (!n->gid_found || !n->gid_netdev[0])
		pf_add(j,
		       &(struct say){
			       RC_SEV_ERROR, "gid_netdev", RC_PF_GID_TYPE, "no netdev", NULL,
			       "a GID with no netdev behind it cannot be routed: connections time out or fail at RTR",
			       fix },
		       &r, 1, "GID index %d of %s port %d %s", n->gid_index, n->dev, n->port,
		       n->gid_found ? "has no netdev behind it"
				    : "holds no GID (no address, no netdev)");
}

static void check_host(struct judge *j, int r)
{
	const struct rc_pf_node *n = &j->nodes[r];
	uint64_t want = j->lim->buffer;
	char fix[320], val[VAL_MAX];

	if (n->rdma_ucm == 0)
		pf_add(j,
		       &(struct say){
			       RC_SEV_ERROR, "rdma_ucm", RC_PF_RDMA_UCM, "missing", "loaded",
			       "without rdma_ucm user space has no rdma_cm (/dev/infiniband/rdma_cm): rdma_create_id fails and NCCL, UCX and rdmactl cannot connect",
			       "modprobe rdma_ucm, and list it in /etc/modules-load.d/rdma.conf" },
		       &r, 1, "the rdma_ucm module is not loaded");
	if (n->memlock_known && !n->memlock_unlimited && n->memlock < want) {
		rc_pf_value(n, RC_PF_MEMLOCK, val, sizeof(val));
		snprintf(fix, sizeof(fix),
			 "ulimit -l unlimited before the job (srun --propagate=MEMLOCK, '* - memlock unlimited' in /etc/security/limits.conf, LimitMEMLOCK=infinity, --ulimit memlock=-1)");
		pf_add(j,
		       &(struct say){
			       n->cap_ipc_lock == 1 ? RC_SEV_WARNING : RC_SEV_ERROR, "memlock",
			       RC_PF_MEMLOCK, val, NULL,
			       n->cap_ipc_lock == 1
				       ? "this process has CAP_IPC_LOCK and may register past the limit; the job's unprivileged ranks may not"
				       : "registering more than the limit fails (ibv_reg_mr: Cannot allocate memory)",
			       fix },
		       &r, 1, "the locked-memory limit is %s, below the %llu KiB a rank registers",
		       val, (unsigned long long)(want >> 10));
	}
}

static void check_pcie(struct judge *j, int r)
{
	const struct rc_pf_node *n = &j->nodes[r];
	const char *fix =
		"reseat the card or move it to a full slot; check the BIOS link settings and 'lspci -vv' (LnkSta against LnkCap)";
	char val[VAL_MAX];

	if (n->has_pci && downtrained(&n->nic_link)) {
		rc_pf_value(n, RC_PF_NIC_PCIE, val, sizeof(val));
		pf_add(j,
		       &(struct say){
			       RC_SEV_WARNING, "pcie_link", RC_PF_NIC_PCIE, val, NULL,
			       "a link trained below its maximum caps the NIC's bandwidth at the slot's",
			       fix },
		       &r, 1, "%s (%s) PCIe link runs at %s", n->dev, n->nic_link.addr, val);
	}
	if (n->gpus_slow && !n->rail) {
		const struct rc_pf_link *l = &n->gpu_link;

		pf_add(j,
		       &(struct say){
			       RC_SEV_WARNING, "pcie_link", RC_PF_GPU_PCIE, NULL, NULL,
			       "a GPU on a narrow link moves its data to and from the NIC at the slot's rate",
			       fix },
		       &r, 1, "%d GPU%s PCIe link narrower than its maximum: %s x%d of x%d",
		       n->gpus_slow, n->gpus_slow == 1 ? "'s" : "s'", l->addr, l->cur_width,
		       l->max_width);
	}
}

/* ACS and the IOMMU between each GPU and the NIC of its rail. */
static void check_paths(struct judge *j, int r)
{
	const struct rc_pf_node *n = &j->nodes[r];
	char val[VAL_MAX];

	if (!n->nrails)
		return;
	if (n->acs_redirect) {
		rc_pf_value(n, RC_PF_ACS, val, sizeof(val));
		pf_add(j,
		       &(struct say){
			       RC_SEV_WARNING, "acs", RC_PF_ACS, val, "off",
			       "ACS redirect sends GPU-NIC peer-to-peer traffic up to the root complex: GPUDirect RDMA loses bandwidth, or hangs where the root complex drops it",
			       "disable ACS redirect on the bridges between GPU and NIC (the BIOS's ACS setting, or 'setpci -s BDF ECAP_ACS+6.w=0' at each boot); on a VM host that needs ACS, keep GPUDirect off (NCCL_NET_GDR_LEVEL=LOC)" },
		       &r, 1, "ACS redirects peer-to-peer on %d of %d GPU-NIC paths, first at %s",
		       n->acs_redirect, n->nrails, n->acs_at);
	}
	if (!strncmp(n->iommu, "DMA", 3))
		pf_add(j,
		       &(struct say){
			       RC_SEV_WARNING, "iommu", RC_PF_IOMMU, n->iommu, "identity",
			       "a translating IOMMU puts every GPU-NIC transfer through address translation: GPUDirect RDMA slows, or fails with IOMMU faults",
			       "boot with the IOMMU in pass-through (iommu=pt, with intel_iommu=on or amd_iommu=on where it must stay on), or off" },
		       &r, 1, "the IOMMU translates (%s) on the GPU-NIC paths of the rail plan",
		       n->iommu);
}

int rc_pf_compare(const struct rc_pf_node *nodes, int n, const struct rc_pf_limits *lim,
		  struct rc_pf_finding *f, int cap, int *nf, uint8_t *differs)
{
	static const enum rc_topo_sev order[] = { RC_SEV_ERROR, RC_SEV_WARNING, RC_SEV_INFO };
	struct judge j = { .nodes = nodes, .n = n, .lim = lim, .f = f, .cap = cap };
	int rc = 0;

	if (n < 1 || n > RC_PF_NODES_MAX || !lim || (cap && !f) || cap < 0)
		return -EINVAL;
	if (differs)
		memset(differs, 0, (size_t)n * RC_PF_NSETTINGS);
	for (size_t p = 0; p < sizeof(order) / sizeof(order[0]) && !rc; p++) {
		j.pass = order[p];
		j.differs = differs;
		for (int r = 0; r < n; r++) {
			if (!nodes[r].loaded) {
				pf_add(&j,
				       &(struct say){
					       RC_SEV_ERROR, "facts", -1, NULL, NULL,
					       "the node's settings could not be read, so nothing about it is known",
					       "run 'rdmactl probe-topology' there to see why" },
				       &r, 1, "%s", nodes[r].error[0] ? nodes[r].error : "no facts");
				continue;
			}
			if (!nodes[r].dev[0] || nodes[r].error[0]) {
				pf_add(&j,
				       &(struct say){
					       RC_SEV_ERROR, "device", -1, NULL, NULL,
					       "without an RDMA device (or its port) the rank has no rail to run on",
					       "load the NIC's driver (mlx5_ib, irdma, bnxt_re...) or name the device with -d; 'rdmactl probe-topology' lists what there is" },
				       &r, 1, "%s",
				       nodes[r].error[0] ? nodes[r].error : "no RDMA device");
				check_host(&j, r);
				continue;
			}
			check_port(&j, r);
			check_gid(&j, r);
			check_pcie(&j, r);
			if (nodes[r].rail)
				continue; /* the node's own: its rail 0 says them */
			check_host(&j, r);
			check_paths(&j, r);
		}
		rc = pf_compare_settings(&j);
	}
	*nf = j.nf;
	return rc;
}
