// SPDX-License-Identifier: MIT
/*
 * GPU regions through the CUDA driver API. The memory is exported as a
 * dma-buf so that it registers with ibv_reg_dmabuf_mr without nvidia-peermem;
 * where the export is refused, registration falls back to the device pointer
 * (which needs nvidia-peermem).
 */
#include <errno.h>
#include <string.h>

#include "gpu.h"

#if RDMACTL_HAVE_CUDA
#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

/* The driver API, opened at run time: the toolkit gives only the types. */
struct cu_api {
	CUresult (*init)(unsigned);
	CUresult (*device_get)(CUdevice *, int);
	CUresult (*primary_ctx_retain)(CUcontext *, CUdevice);
	CUresult (*ctx_set_current)(CUcontext);
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*mem_free)(CUdeviceptr);
	CUresult (*get_handle)(void *, CUdeviceptr, size_t, CUmemRangeHandleType, unsigned long long);
	CUresult (*htod)(CUdeviceptr, const void *, size_t);
	CUresult (*dtoh)(void *, CUdeviceptr, size_t);
	CUresult (*err_string)(CUresult, const char **);
};

static int cu_load(struct cu_api *a, struct rc_err *err)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);

	if (!h)
		return rc_err_set(err, ENODEV, "GPU memory needs the NVIDIA driver: %s", dlerror());
#define SYM(f, n) (*(void **)&a->f = dlsym(h, n))
	if (!SYM(init, "cuInit") || !SYM(device_get, "cuDeviceGet") ||
	    !SYM(primary_ctx_retain, "cuDevicePrimaryCtxRetain") ||
	    !SYM(ctx_set_current, "cuCtxSetCurrent") || !SYM(mem_alloc, "cuMemAlloc_v2") ||
	    !SYM(mem_free, "cuMemFree_v2") || !SYM(htod, "cuMemcpyHtoD_v2") ||
	    !SYM(dtoh, "cuMemcpyDtoH_v2") || !SYM(err_string, "cuGetErrorString"))
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

int rc_gpu_alloc(struct rc_mem *m, size_t len, struct rc_err *err)
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
	if ((r = a.device_get(&dev, 0)) != CUDA_SUCCESS)
		return cu_fail(&a, err, r, "no CUDA device");
	if ((r = a.primary_ctx_retain(&cctx, dev)) != CUDA_SUCCESS)
		return cu_fail(&a, err, r, "cannot create a CUDA context");
	a.ctx_set_current(cctx);
	m->map_len = (len + 65535) & ~(size_t)65535;
	if ((r = a.mem_alloc(&p, m->map_len)) != CUDA_SUCCESS)
		return cu_fail(&a, err, r, "cannot allocate GPU memory");
	if (!a.get_handle || a.get_handle(&fd, p, m->map_len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
					   0) != CUDA_SUCCESS)
		fd = -1;
	m->dev_ptr = (uint64_t)p;
	m->buf = (void *)(uintptr_t)p;
	m->dmabuf_fd = fd;
	m->len = len;
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
	return r == CUDA_SUCCESS ? 0 : cu_fail(&a, err, r, "GPU copy failed");
}
#else
int rc_gpu_alloc(struct rc_mem *m, size_t len, struct rc_err *err)
{
	(void)m;
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
#endif
