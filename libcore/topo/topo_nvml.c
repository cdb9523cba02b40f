// SPDX-License-Identifier: MIT
/*
 * GPU names and UUIDs from NVML, opened at run time: the GPUs themselves
 * come from PCI, so a host without the NVIDIA driver (or without NVML)
 * still shows them, only without names. Only calls that take plain
 * strings are used, so no NVML struct layout is assumed.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "topo_int.h"

typedef int nvml_ret;  /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef void *nvml_dev; /* nvmlDevice_t */

struct nvml_api {
	nvml_ret (*init)(void);
	nvml_ret (*shutdown)(void);
	nvml_ret (*by_bus_id)(const char *bus_id, nvml_dev *dev);
	nvml_ret (*name)(nvml_dev dev, char *buf, unsigned int len);
	nvml_ret (*uuid)(nvml_dev dev, char *buf, unsigned int len);
};

void tp_load_nvml(struct rc_topo *t)
{
	struct nvml_api a;
	void *h;

	if (!t->ngpus)
		return;
	h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return;
#define SYM(f, n) (*(void **)&a.f = dlsym(h, n))
	if (!SYM(init, "nvmlInit_v2") || !SYM(shutdown, "nvmlShutdown") ||
	    !SYM(by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2") ||
	    !SYM(name, "nvmlDeviceGetName") || !SYM(uuid, "nvmlDeviceGetUUID")) {
		dlclose(h);
		return;
	}
#undef SYM
	if (a.init() != 0) {
		dlclose(h);
		return;
	}
	for (int g = 0; g < t->ngpus; g++) {
		struct rc_topo_gpu *gpu = &t->gpus[g];
		char buf[96];
		nvml_dev dev;

		if (a.by_bus_id(gpu->pci.addr, &dev) != 0)
			continue;
		memset(buf, 0, sizeof(buf));
		if (a.name(dev, buf, sizeof(buf) - 1) == 0)
			tp_copy(gpu->name, sizeof(gpu->name), buf);
		memset(buf, 0, sizeof(buf));
		if (a.uuid(dev, buf, sizeof(buf) - 1) == 0)
			tp_copy(gpu->uuid, sizeof(gpu->uuid), buf);
	}
	a.shutdown();
	dlclose(h);
}
