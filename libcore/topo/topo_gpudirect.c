// SPDX-License-Identifier: MIT
/*
 * GPUDirect RDMA readiness of a GPU-NIC pair. Two ways let a NIC reach GPU
 * memory: dma-buf (ibv_reg_dmabuf_mr: kernel 5.12 or later, the NVIDIA open
 * kernel modules, a NIC driver that imports dma-bufs) and peer memory
 * (ibv_reg_mr on a device pointer, with nvidia-peermem loaded). Either one
 * only helps as much as the PCIe path between the two allows.
 */
#include <stdio.h>
#include <string.h>

#include "topo_int.h"

static bool kernel_at_least(const char *rel, int maj, int min)
{
	int a = 0, b = 0;

	if (sscanf(rel, "%d.%d", &a, &b) != 2)
		return false;
	return a > maj || (a == maj && b >= min);
}

bool tp_dmabuf_host(const struct rc_topo *t, const char **why)
{
	const struct rc_topo_facts *f = &t->facts;

	if (!f->nvidia_loaded && !f->nvidia_version[0])
		*why = "the NVIDIA driver is not loaded";
	else if (!strstr(f->nvidia_version, "Open Kernel Module"))
		*why = f->nvidia_version[0]
			       ? "the NVIDIA kernel module is the proprietary flavor; dma-buf needs the open kernel modules"
			       : "the NVIDIA driver's flavor is unknown: no /proc/driver/nvidia/version";
	else if (!kernel_at_least(f->kernel, 5, 12))
		*why = "the kernel is older than 5.12";
	else
		return true;
	return false;
}

/* RDMA drivers that import dma-bufs (ib_umem_dmabuf). */
static bool nic_takes_dmabuf(const struct rc_topo_dev *d)
{
	static const char *const ok[] = { "mlx5", "efa", "bnxt_re" };

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(d->provider, ok[i]))
			return true;
	return false;
}

void rc_topo_gpudirect(const struct rc_topo *t, int gpu, int dev, struct rc_topo_gpudirect *o)
{
	const struct rc_topo_dev *d = &t->devs[dev];
	const char *why = "";
	const char *adv;

	memset(o, 0, sizeof(*o));
	o->path = t->matrix[gpu][dev];
	o->peermem = t->facts.peermem_loaded;
	if (!d->has_pci)
		why = "the device has no PCI function (software RDMA)";
	else if (!nic_takes_dmabuf(d))
		snprintf(o->dmabuf_why, sizeof(o->dmabuf_why),
			 "the %s driver does not import dma-bufs", d->provider);
	else
		o->dmabuf = tp_dmabuf_host(t, &why);
	if (!o->dmabuf && !o->dmabuf_why[0])
		tp_copy(o->dmabuf_why, sizeof(o->dmabuf_why), why);
	if (!d->has_pci)
		o->peermem = false;
	o->ready = o->dmabuf || o->peermem;
	if (!d->has_pci)
		adv = "no PCI path: GPUDirect does not apply, GPU memory goes through a host bounce buffer";
	else if (!o->ready)
		adv = "not ready: load nvidia-peermem, or use the NVIDIA open kernel modules on kernel 5.12+ for dma-buf; until then GPU memory goes through a host bounce buffer";
	else if (o->path == RC_PATH_PIX || o->path == RC_PATH_PXB)
		adv = "good: GPU and NIC share a PCIe switch";
	else if (o->path == RC_PATH_PHB)
		adv = "works, through the root complex: expect less bandwidth than on a shared switch";
	else if (o->path == RC_PATH_NODE)
		adv = "crosses host bridges: GPUDirect may be slow; prefer a NIC on the GPU's switch";
	else
		adv = "crosses the socket link (SYS): GPUDirect will be slow, often slower than a host bounce buffer; use a NIC on the GPU's NUMA node";
	tp_copy(o->advice, sizeof(o->advice), adv);
}
