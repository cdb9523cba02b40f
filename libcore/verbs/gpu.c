// SPDX-License-Identifier: MIT
/*
 * GPU regions through the CUDA driver API. The memory is exported as a
 * dma-buf so that it registers with ibv_reg_dmabuf_mr without nvidia-peermem;
 * where the export is refused, registration falls back to the device pointer
 * (which needs nvidia-peermem), then to a host bounce buffer (mem.c).
 * GPU N is the N-th in PCI bus order, as nvidia-smi and probe-topology
 * number them, whatever CUDA_DEVICE_ORDER says.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/config_core.h>
#include <rdmactl/parse.h>
#include <rdmactl/parse_core.h>

#include "gpu.h"

#if RDMACTL_HAVE_CUDA
#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

/* The driver API, opened at run time: the toolkit gives only the types. */
struct cu_api {
	CUresult (*init)(unsigned);
	CUresult (*device_get)(CUdevice *, int);
	CUresult (*device_count)(int *);
	CUresult (*bus_id)(char *, int, CUdevice);
	CUresult (*primary_ctx_retain)(CUcontext *, CUdevice);
	CUresult (*ctx_set_current)(CUcontext);
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*mem_free)(CUdeviceptr);
	CUresult (*get_handle)(void *, CUdeviceptr, size_t, CUmemRangeHandleType,
			       unsigned long long);
	CUresult (*htod)(CUdeviceptr, const void *, size_t);
	CUresult (*dtoh)(void *, CUdeviceptr, size_t);
	CUresult (*err_string)(CUresult, const char **);
	CUresult (*ctx_sync)(void);
};

/* The driver: libcuda.so.1, or the library $RDMACTL_CUDA_LIB names (the
 * tests point it at a fake driver whose "GPU memory" is host memory). */
static int cu_load(struct cu_api *a, struct rc_err *err)
{
	const char *lib = rc_config()->cuda_lib;
	void *h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);

	if (!h)
		return rc_err_set(
			err, ENODEV,
			"GPU memory needs the NVIDIA driver, which this host lacks (no usable GPU): %s",
			dlerror());
#define SYM(f, n) (*(void **)&a->f = dlsym(h, n))
	if (!SYM(init, "cuInit") || !SYM(device_get, "cuDeviceGet") ||
	    !SYM(device_count, "cuDeviceGetCount") || !SYM(bus_id, "cuDeviceGetPCIBusId") ||
	    !SYM(primary_ctx_retain, "cuDevicePrimaryCtxRetain") ||
	    !SYM(ctx_set_current, "cuCtxSetCurrent") || !SYM(mem_alloc, "cuMemAlloc_v2") ||
	    !SYM(mem_free, "cuMemFree_v2") || !SYM(htod, "cuMemcpyHtoD_v2") ||
	    !SYM(dtoh, "cuMemcpyDtoH_v2") || !SYM(err_string, "cuGetErrorString") ||
	    !SYM(ctx_sync, "cuCtxSynchronize"))
		return rc_err_set(err, ENODEV, "the NVIDIA driver lacks a needed CUDA call");
	SYM(get_handle, "cuMemGetHandleForAddressRange");
#undef SYM
	return 0;
}

static int cu_fail(const struct cu_api *a, struct rc_err *err, CUresult r, const char *what)
{
	const char *s = NULL;

	a->err_string(r, &s);
	return rc_err_set(err, r == CUDA_ERROR_OUT_OF_MEMORY ? ENOMEM : ENODEV, "%s: %s", what,
			  s ? s : "unknown CUDA error");
}

/* The CUDA device that is GPU n in PCI bus order. */
static int pick_device(const struct cu_api *a, int n, CUdevice *dev, struct rc_err *err)
{
	char ids[64][32];
	int count = 0, below = 0;
	CUresult r;

	if ((r = a->device_count(&count)) != CUDA_SUCCESS)
		return cu_fail(a, err, r, "cannot count the GPUs");
	if (count > 64)
		count = 64;
	if (n < 0 || n >= count)
		return rc_err_set(err, ENODEV, "no GPU %d: CUDA sees %d GPU%s%s", n, count,
				  count == 1 ? "" : "s",
				  count ? " (numbered from 0 in PCI bus order)"
					: " (is CUDA_VISIBLE_DEVICES empty?)");
	for (int i = 0; i < count; i++) {
		CUdevice d;

		if ((r = a->device_get(&d, i)) != CUDA_SUCCESS ||
		    (r = a->bus_id(ids[i], (int)sizeof(ids[i]), d)) != CUDA_SUCCESS)
			return cu_fail(a, err, r, "cannot read a GPU's PCI address");
	}
	/* GPU n: the one with exactly n addresses below its own. */
	for (int i = 0; i < count; i++) {
		below = 0;
		for (int k = 0; k < count; k++)
			below += rc_pci_addr_cmp(ids[k], ids[i]) < 0;
		if (below == n)
			return a->device_get(dev, i) == CUDA_SUCCESS
				       ? 0
				       : rc_err_set(err, ENODEV, "no CUDA device %d", i);
	}
	return rc_err_set(err, ENODEV, "no GPU %d among %d", n, count);
}

int rc_gpu_alloc(struct rc_mem *m, int gpu, size_t len, struct rc_err *err)
{
	struct cu_api a;
	CUcontext cctx;
	CUdevice dev;
	CUdeviceptr p;
	CUresult r;
	int fd = -1, rc = cu_load(&a, err);

	if (rc)
		return rc;
	if ((r = a.init(0)) != CUDA_SUCCESS)
		return cu_fail(&a, err, r, "cannot initialise CUDA");
	if ((rc = pick_device(&a, gpu, &dev, err)))
		return rc;
	if ((r = a.primary_ctx_retain(&cctx, dev)) != CUDA_SUCCESS)
		return cu_fail(&a, err, r, "cannot create a CUDA context");
	a.ctx_set_current(cctx);
	m->map_len = (len + 65535) & ~(size_t)65535;
	if ((r = a.mem_alloc(&p, m->map_len)) != CUDA_SUCCESS)
		return cu_fail(&a, err, r, "cannot allocate GPU memory");
	if (!a.get_handle) {
		snprintf(m->reg_notes, sizeof(m->reg_notes),
			 "dma-buf: the driver has no cuMemGetHandleForAddressRange (CUDA 11.7 or later)");
		fd = -1;
	} else if ((r = a.get_handle(&fd, p, m->map_len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0)) !=
		   CUDA_SUCCESS) {
		const char *s = NULL;

		a.err_string(r, &s);
		snprintf(m->reg_notes, sizeof(m->reg_notes), "dma-buf: the export was refused (%s)",
			 s ? s : "unknown CUDA error");
		fd = -1;
	}
	m->dev_ptr = (uint64_t)p;
	m->buf = (void *)(uintptr_t)p;
	m->dmabuf_fd = fd;
	m->len = len;
	m->gpu = gpu;
	return 0;
}

int rc_gpu_free(struct rc_mem *m)
{
	struct cu_api a;

	if (m->dmabuf_fd >= 0)
		close(m->dmabuf_fd);
	m->dmabuf_fd = -1;
	if (m->dev_ptr && (cu_load(&a, NULL) || a.mem_free((CUdeviceptr)m->dev_ptr) != CUDA_SUCCESS))
		return -EIO;
	m->dev_ptr = 0;
	return 0;
}

int rc_gpu_copy(struct rc_mem *m, size_t off, void *host, size_t len, bool to_gpu,
		struct rc_err *err)
{
	struct cu_api a;
	CUresult r;
	int rc = cu_load(&a, err);

	if (rc)
		return rc;
	r = to_gpu ? a.htod((CUdeviceptr)(m->dev_ptr + off), host, len)
		   : a.dtoh(host, (CUdeviceptr)(m->dev_ptr + off), len);
	/* A copy from pageable memory may return before its DMA reached the
	 * GPU: the NIC reads the GPU next, behind CUDA's back. */
	if (r == CUDA_SUCCESS && to_gpu)
		r = a.ctx_sync();
	return r == CUDA_SUCCESS ? 0 : cu_fail(&a, err, r, "GPU copy failed");
}

int rc_gpu_probe(int gpu, struct rc_err *err)
{
	struct cu_api a;
	CUdevice dev;
	CUresult r;
	int rc = cu_load(&a, err);

	if (rc)
		return rc;
	if ((r = a.init(0)) != CUDA_SUCCESS)
		return cu_fail(&a, err, r, "cannot initialise CUDA");
	return pick_device(&a, gpu, &dev, err);
}
#else
int rc_gpu_alloc(struct rc_mem *m, int gpu, size_t len, struct rc_err *err)
{
	(void)m;
	(void)gpu;
	(void)len;
	return rc_err_set(err, ENOTSUP, "GPU memory needs rdmactl built with the CUDA toolkit");
}

int rc_gpu_free(struct rc_mem *m)
{
	(void)m;
	return 0;
}

int rc_gpu_copy(struct rc_mem *m, size_t off, void *host, size_t len, bool to_gpu,
		struct rc_err *err)
{
	(void)m, (void)off, (void)host, (void)len, (void)to_gpu;
	return rc_err_set(err, ENOTSUP, "GPU memory needs rdmactl built with the CUDA toolkit");
}

int rc_gpu_probe(int gpu, struct rc_err *err)
{
	(void)gpu;
	return rc_err_set(err, ENOTSUP, "GPU memory needs rdmactl built with the CUDA toolkit");
}
#endif
