// SPDX-License-Identifier: MIT
/*
 * Doctor checks: each finding says what is wrong (message) and what to do
 * about it (fix). Findings never fail the probe; they are its answer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/err_core.h>

#include "topo_int.h"

#define MEMLOCK_MIN (64ULL << 20)

static void check_memlock(struct rc_topo *t)
{
	const struct rc_topo_facts *f = &t->facts;
	const char *fix =
		"raise it: 'ulimit -l unlimited' in the shell, '* - memlock unlimited' in "
		"/etc/security/limits.conf, LimitMEMLOCK=infinity for systemd services, "
		"--ulimit memlock=-1 for containers";

	if (!f->memlock_known || f->memlock_unlimited || f->memlock >= MEMLOCK_MIN)
		return;
	if (f->cap_ipc_lock == 1)
		tp_add_finding(
			t, RC_SEV_INFO, "memlock", fix,
			"the locked-memory limit (RLIMIT_MEMLOCK) is %llu KiB; this process has CAP_IPC_LOCK and may register past it, unprivileged users may not",
			(unsigned long long)(f->memlock >> 10));
	else
		tp_add_finding(
			t, RC_SEV_WARNING, "memlock", fix,
			"the locked-memory limit (RLIMIT_MEMLOCK) is %llu KiB: registering more memory than that fails (ibv_reg_mr: Cannot allocate memory)",
			(unsigned long long)(f->memlock >> 10));
}

static void check_port(struct rc_topo *t, const struct rc_topo_dev *d, const struct rc_topo_port *p)
{
	bool ib = !strcmp(p->link_layer, "InfiniBand"), eth = !strcmp(p->link_layer, "Ethernet");
	bool v2 = false, v2_routable = false;
	char fix[320];

	if (strcmp(p->state, "ACTIVE")) {
		if (ib && !strcmp(p->state, "INIT") && !strcmp(p->phys_state, "LinkUp"))
			tp_add_finding(
				t, RC_SEV_WARNING, "port_down",
				"start a subnet manager (opensm, or the switch's SM) on the fabric",
				"%s port %d is INIT with the link up: no subnet manager has configured it",
				d->name, p->num);
		else {
			snprintf(fix, sizeof(fix),
				 "check the cable and the switch port%s%s%s; 'rdma link show %s/%d' shows the state",
				 p->netdev[0] ? ", and that the netdev is up: ip link set " : "",
				 p->netdev, p->netdev[0] ? " up" : "", d->name, p->num);
			tp_add_finding(t, RC_SEV_WARNING, "port_down", fix,
				       "%s port %d is %s (physical state %s)", d->name, p->num,
				       p->state[0] ? p->state : "unknown",
				       p->phys_state[0] ? p->phys_state : "unknown");
		}
	}
	if (!eth)
		return;
	for (int i = 0; i < p->ngids; i++) {
		if (strcmp(p->gids[i].type, "RoCE v2"))
			continue;
		v2 = true;
		if (!(p->gids[i].raw[0] == 0xfe && (p->gids[i].raw[1] & 0xc0) == 0x80))
			v2_routable = true;
	}
	if (!v2) {
		snprintf(fix, sizeof(fix),
			 "give %s an IP address (RoCE GIDs follow the netdev's addresses); for mlx5 check that RoCE is enabled (devlink dev param show ... enable_roce)",
			 p->netdev[0] ? p->netdev : "the port's netdev");
		tp_add_finding(
			t, RC_SEV_WARNING, "roce_v2_gid", fix,
			"%s port %d is Ethernet but has no RoCE v2 GID: RoCE v2 traffic (and rdma_cm) cannot use it",
			d->name, p->num);
	} else if (!v2_routable) {
		tp_add_finding(t, RC_SEV_INFO, "roce_v2_gid",
			       "assign an IPv4 or global IPv6 address to the netdev",
			       "%s port %d has only link-local RoCE v2 GIDs: traffic cannot be routed",
			       d->name, p->num);
	}
	if (p->active_mtu > 0 && p->netdev_mtu > 0) {
		int want = 256, room = p->netdev_mtu - 80; /* headers: rxe's RXE_MAX_HDR_LENGTH */

		while (want < 4096 && want * 2 <= room)
			want *= 2;
		if (p->active_mtu < want) {
			if (!strcmp(d->provider, "rxe"))
				snprintf(fix, sizeof(fix),
					 "recreate the device after setting the netdev's MTU: rdma link delete %s; ip link set %s mtu %d; rdma link add %s type rxe netdev %s",
					 d->name, p->netdev, p->netdev_mtu, d->name, p->netdev);
			else
				snprintf(fix, sizeof(fix),
					 "check the MTU of %s and of the switch port; the RoCE MTU follows the netdev's",
					 p->netdev);
			tp_add_finding(
				t, RC_SEV_WARNING, "mtu", fix,
				"%s port %d: active MTU %d is below what %s (MTU %d) allows (%d)",
				d->name, p->num, p->active_mtu, p->netdev, p->netdev_mtu, want);
		} else if (want < 4096 && p->netdev_mtu < 4200) {
			snprintf(fix, sizeof(fix),
				 "use jumbo frames end to end: ip link set %s mtu 9000", p->netdev);
			tp_add_finding(t, RC_SEV_INFO, "mtu", fix,
				       "%s port %d: the RDMA MTU is %d, held down by %s's MTU %d",
				       d->name, p->num, p->active_mtu, p->netdev, p->netdev_mtu);
		}
	}
}

static double gts(const char *s)
{
	return s[0] ? strtod(s, NULL) : 0;
}

/* A link that trained below what both ends can do: a bad slot, riser or
 * BIOS setting. GPUs slow their link when idle, so for them only the
 * width counts. */
static void check_link(struct rc_topo *t, const char *what, const struct rc_topo_pci *p, bool gpu)
{
	bool narrow = p->cur_width > 0 && p->max_width > 0 && p->cur_width < p->max_width;
	bool slow = !gpu && gts(p->cur_speed) > 0 && gts(p->cur_speed) < gts(p->max_speed);

	if (narrow || slow)
		tp_add_finding(
			t, RC_SEV_WARNING, "pcie_link",
			"reseat the card or move it to a full slot; check the BIOS link settings and 'lspci -vv' (LnkSta)",
			"%s (%s) PCIe link runs at %s x%d, below its %s x%d", what, p->addr,
			p->cur_speed[0] ? p->cur_speed : "?", p->cur_width,
			p->max_speed[0] ? p->max_speed : "?", p->max_width);
	if (p->numa_node < 0 && t->nnuma > 1)
		tp_add_finding(
			t, RC_SEV_INFO, "numa", "enable NUMA reporting (ACPI SRAT/_PXM) in the BIOS",
			"%s (%s) reports no NUMA node on a host with %d nodes: placement is guesswork",
			what, p->addr, t->nnuma);
}

static void check_gpudirect(struct rc_topo *t)
{
	const struct rc_topo_facts *f = &t->facts;
	bool pci_nic = false;
	const char *why;

	for (int d = 0; d < t->ndevs; d++)
		pci_nic |= t->devs[d].has_pci;
	if (!t->ngpus || !pci_nic || f->peermem_loaded)
		return;
	if (tp_dmabuf_host(t, &why))
		return; /* dma-buf works without nvidia-peermem */
	tp_add_finding(
		t, RC_SEV_WARNING, "gpudirect",
		"modprobe nvidia-peermem, or use the NVIDIA open kernel modules (driver 515 or later) on kernel 5.12 or later for dma-buf",
		"GPUDirect RDMA is not available: nvidia-peermem is not loaded and there is no dma-buf path: %s",
		why);
}

static void check_hugepages(struct rc_topo *t)
{
	const struct rc_topo_facts *f = &t->facts;
	long total = 0, free_pages = 0;

	if (!f->nhuge) {
		char opt[64], fix[128];

		snprintf(fix, sizeof(fix),
			 "build the kernel with CONFIG_HUGETLBFS, or run without %s",
			 rc_param_name("hugepages", opt, sizeof(opt)));
		tp_add_finding(
			t, RC_SEV_WARNING, "hugepages", fix,
			"hugepages were asked for but the kernel offers none (no kernel/mm/hugepages)");
		return;
	}
	for (int i = 0; i < f->nhuge; i++) {
		total += f->huge[i].total > 0 ? f->huge[i].total : 0;
		free_pages += f->huge[i].free > 0 ? f->huge[i].free : 0;
	}
	if (!total)
		tp_add_finding(
			t, RC_SEV_WARNING, "hugepages",
			"reserve some: echo 1024 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages (or hugepages= on the kernel command line)",
			"no hugepages are reserved");
	else if (!free_pages)
		tp_add_finding(t, RC_SEV_WARNING, "hugepages",
			       "reserve more, or stop what holds them (grep -i huge /proc/meminfo)",
			       "all %ld reserved hugepages are in use", total);
}

static int first_gpu_on(const struct rc_topo *t, int d)
{
	for (int g = 0; g < t->ngpus; g++)
		if (t->rails[g].dev == d)
			return g;
	return 0;
}

/* nvidia-smi numbers GPUs by NVML's index; rdmactl by PCI bus order. */
static void check_gpu_order(struct rc_topo *t)
{
	char list[240] = "";
	int n = 0;

	for (int g = 0; g < t->ngpus; g++) {
		size_t l = strlen(list);

		if (t->gpus[g].nvml_index < 0 || t->gpus[g].nvml_index == g)
			continue;
		snprintf(list + l, sizeof(list) - l, "%sGPU%d (%s) is NVML %d", n++ ? ", " : "", g,
			 t->gpus[g].pci.addr, t->gpus[g].nvml_index);
	}
	if (n)
		tp_add_finding(
			t, RC_SEV_WARNING, "gpu_order",
			"name GPUs by UUID (CUDA_VISIBLE_DEVICES=GPU-...) or set CUDA_DEVICE_ORDER=PCI_BUS_ID; compare with nvidia-smi -L",
			"NVML numbers the GPUs differently from PCI bus order: %s", list);
}

static void check_rails(struct rc_topo *t)
{
	char fix[320];

	for (int d = 0; d < t->ndevs; d++) {
		char gpus[160] = "";
		int n = 0;

		for (int g = 0; g < t->ngpus; g++) {
			size_t l = strlen(gpus);

			if (t->rails[g].dev != d)
				continue;
			snprintf(gpus + l, sizeof(gpus) - l, "%sGPU%d", n ? ", " : "", g);
			n++;
		}
		if (n > 1 && t->rails[first_gpu_on(t, d)].shared_by_design)
			tp_add_finding(
				t, RC_SEV_WARNING, "rail_shared",
				"add NICs (one per GPU), or run one rank per NIC",
				"%s serves %d GPUs (%s) by design: there are more GPUs than NICs with an active port, so each gets a share of its bandwidth",
				t->devs[d].name, n, gpus);
		else if (n > 1)
			tp_add_finding(
				t, RC_SEV_WARNING, "rail_shared",
				"give each GPU its own NIC on its switch, or run one rank per NIC",
				"%s serves %d GPUs (%s): each gets a share of its bandwidth (every other NIC is farther away)",
				t->devs[d].name, n, gpus);
	}
	for (int g = 0; g < t->ngpus; g++) {
		const struct rc_topo_rail *r = &t->rails[g];

		if (r->dev < 0 || !r->cross_socket)
			continue;
		snprintf(fix, sizeof(fix),
			 "add a NIC on GPU%d's NUMA node, or pin the job's CPU threads next to %s and expect lower bandwidth",
			 g, t->devs[r->dev].name);
		tp_add_finding(
			t, RC_SEV_WARNING, "rail_cross_socket", fix,
			"GPU%d (%s, NUMA %d) has no NIC on its socket: its closest is %s (NUMA %d, %s)",
			g, t->gpus[g].pci.addr, t->gpus[g].pci.numa_node, t->devs[r->dev].name,
			t->devs[r->dev].pci.numa_node, rc_topo_path_name(r->path));
	}
}

/* Errors first, then warnings, then infos; in order of discovery within each. */
static void sort_findings(struct rc_topo *t)
{
	for (int i = 1; i < t->nfindings; i++) {
		struct rc_topo_finding f = t->findings[i];
		int j = i;

		for (; j > 0 && t->findings[j - 1].severity < f.severity; j--)
			t->findings[j] = t->findings[j - 1];
		t->findings[j] = f;
	}
}

void tp_doctor(struct rc_topo *t, const struct rc_topo_opts *o)
{
	char fix[320];

	if (!t->ndevs)
		tp_add_finding(
			t, RC_SEV_WARNING, "no_devices",
			"load the NIC's RDMA driver (mlx5_ib, efa, irdma...); to test without hardware: rdma link add rxe0 type rxe netdev IF",
			"no RDMA devices found under %s/class/infiniband", t->root);
	if (t->devs_left_out)
		tp_add_finding(t, RC_SEV_INFO, "device", "",
			       "%d more RDMA devices are not shown (at most %d)", t->devs_left_out,
			       RC_TOPO_MAX_DEVS);
	check_memlock(t);
	for (int d = 0; d < t->ndevs; d++) {
		const struct rc_topo_dev *dev = &t->devs[d];

		if (dev->verbs == 0) {
			snprintf(fix, sizeof(fix),
				 "install rdma-core's userspace provider for %s (package rdma-core or libibverbs-providers)",
				 dev->provider);
			tp_add_finding(
				t, RC_SEV_WARNING, "provider", fix,
				"libibverbs does not list %s: no userspace provider claims it, so verbs programs cannot use it",
				dev->name);
		}
		for (int p = 0; p < dev->nports; p++)
			check_port(t, dev, &dev->ports[p]);
		if (dev->has_pci)
			check_link(t, dev->name, &dev->pci, false);
	}
	for (int g = 0; g < t->ngpus; g++) {
		char what[16];

		snprintf(what, sizeof(what), "GPU%d", g);
		check_link(t, what, &t->gpus[g].pci, true);
	}
	check_gpudirect(t);
	check_gpu_order(t);
	check_rails(t);
	if (o->hugepages)
		check_hugepages(t);
	sort_findings(t);
}
