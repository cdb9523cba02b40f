// SPDX-License-Identifier: MIT
/*
 * What NVML adds to the GPUs found on PCI: its index (nvidia-smi's number),
 * name and UUID, and the NVLinks (to another GPU, or to an NVSwitch). NVML
 * is opened at run time, so a host without the NVIDIA driver still shows
 * its GPUs, only without these. The library is libnvidia-ml.so.1, or the
 * one $RDMACTL_NVML_LIB names; a --sysfs tree is read without NVML unless
 * that variable is set (the tests point it at a fake NVML).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/config_core.h>
#include <rdmactl/parse.h>
#include <rdmactl/parse_core.h>

#include "topo_int.h"

typedef int nvml_ret;   /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef void *nvml_dev; /* nvmlDevice_t */

#define NVML_NOT_SUPPORTED 3
#define NVML_NVLINK_MAX_LINKS 18
#define NVML_NVLINK_DEVICE_TYPE_SWITCH 2

/* nvmlPciInfo_t as nvml.h lays it out. */
struct nvml_pci {
	char bus_id_legacy[16];
	unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
};

struct nvml_api {
	nvml_ret (*init)(void);
	nvml_ret (*shutdown)(void);
	nvml_ret (*by_bus_id)(const char *bus_id, nvml_dev *dev);
	nvml_ret (*name)(nvml_dev dev, char *buf, unsigned int len);
	nvml_ret (*uuid)(nvml_dev dev, char *buf, unsigned int len);
	nvml_ret (*index)(nvml_dev dev, unsigned int *index);
	/* NVLink: optional (older drivers, GPUs without NVLink) */
	nvml_ret (*link_state)(nvml_dev dev, unsigned int link, int *active);
	nvml_ret (*link_remote_pci)(nvml_dev dev, unsigned int link, struct nvml_pci *pci);
	nvml_ret (*link_remote_type)(nvml_dev dev, unsigned int link, int *type);
};

static int gpu_by_bus_id(const struct rc_topo *t, const char *bus_id)
{
	for (int h = 0; h < t->ngpus; h++)
		if (!rc_pci_addr_cmp(t->gpus[h].pci.addr, bus_id))
			return h;
	return -1;
}

/* Count GPU g's active links: to each other GPU, and to NVSwitches. */
static void load_links(struct rc_topo *t, const struct nvml_api *a, nvml_dev dev, int g,
		       int direct[RC_TOPO_MAX_GPUS])
{
	if (!a->link_state || !a->link_remote_pci)
		return;
	for (unsigned int l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
		struct nvml_pci pci;
		int active = 0, type = -1, h;
		nvml_ret r = a->link_state(dev, l, &active);

		if (r == NVML_NOT_SUPPORTED)
			break; /* no NVLink on this GPU */
		if (r != 0 || active != 1)
			continue;
		memset(&pci, 0, sizeof(pci));
		if (a->link_remote_pci(dev, l, &pci) != 0)
			continue;
		pci.bus_id[sizeof(pci.bus_id) - 1] = '\0';
		if (a->link_remote_type && a->link_remote_type(dev, l, &type) != 0)
			type = -1;
		h = gpu_by_bus_id(t, pci.bus_id);
		if (h >= 0 && h != g && type != NVML_NVLINK_DEVICE_TYPE_SWITCH)
			direct[h]++;
		else if (h < 0)
			t->gpus[g].nvswitch_links++; /* a switch, whether named or not */
	}
}

void tp_load_nvml(struct rc_topo *t)
{
	int(*direct)[RC_TOPO_MAX_GPUS];
	const char *lib = rc_config()->nvml_lib;
	struct nvml_api a;
	void *h;

	if (!t->ngpus || (!t->live && !(lib && *lib)))
		return;
	h = dlopen(lib && *lib ? lib : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return;
	memset(&a, 0, sizeof(a));
#define SYM(f, n) (*(void **)&a.f = dlsym(h, n))
	if (!SYM(init, "nvmlInit_v2") || !SYM(shutdown, "nvmlShutdown") ||
	    !SYM(by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2") ||
	    !SYM(name, "nvmlDeviceGetName") || !SYM(uuid, "nvmlDeviceGetUUID")) {
		dlclose(h);
		return;
	}
	SYM(index, "nvmlDeviceGetIndex");
	SYM(link_state, "nvmlDeviceGetNvLinkState");
	SYM(link_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
	SYM(link_remote_type, "nvmlDeviceGetNvLinkRemoteDeviceType");
#undef SYM
	direct = calloc(RC_TOPO_MAX_GPUS, sizeof(*direct));
	if (!direct || a.init() != 0) {
		free(direct);
		dlclose(h);
		return;
	}
	for (int g = 0; g < t->ngpus; g++) {
		struct rc_topo_gpu *gpu = &t->gpus[g];
		unsigned int idx;
		char buf[96];
		nvml_dev dev;

		if (a.by_bus_id(gpu->pci.addr, &dev) != 0)
			continue;
		t->nvml = true;
		memset(buf, 0, sizeof(buf));
		if (a.name(dev, buf, sizeof(buf) - 1) == 0)
			tp_copy(gpu->name, sizeof(gpu->name), buf);
		memset(buf, 0, sizeof(buf));
		if (a.uuid(dev, buf, sizeof(buf) - 1) == 0)
			tp_copy(gpu->uuid, sizeof(gpu->uuid), buf);
		if (a.index && a.index(dev, &idx) == 0 && idx < 4096)
			gpu->nvml_index = (int)idx;
		load_links(t, &a, dev, g, direct[g]);
	}
	for (int g = 0; g < t->ngpus; g++)
		for (int k = 0; k < t->ngpus; k++) {
			int sw_g = t->gpus[g].nvswitch_links, sw_k = t->gpus[k].nvswitch_links;

			if (g == k)
				continue;
			t->nvlinks[g][k] =
				direct[g][k] + (sw_g && sw_k ? (sw_g < sw_k ? sw_g : sw_k) : 0);
		}
	free(direct);
	a.shutdown();
	dlclose(h);
}
