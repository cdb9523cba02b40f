// SPDX-License-Identifier: MIT
/*
 * A fake CUDA driver for the tests: the few driver calls rdmactl makes
 * (libcore/verbs/gpu.c), with "GPU memory" that is host memory, so that the
 * paths that carry GPU memory (the copies in and out, the addresses peers
 * are given, the registration order) run on a machine without a GPU. Point
 * rdmactl at it with RDMACTL_CUDA_LIB=.../libfakecuda.so. It proves the
 * plumbing, not GPUDirect: a real GPU is tests/gpu/run.sh's.
 *
 *   RDMACTL_FAKE_CUDA_GPUS=N     GPUs it shows (default 1; 0: none)
 *   RDMACTL_FAKE_CUDA_PROTECT=1  device memory is PROT_NONE outside the
 *                                driver's own copies: the CPU touching it
 *                                directly crashes, and ibv_reg_mr of it
 *                                fails (the bounce buffer path then runs)
 *
 * The dma-buf export is always refused, as a driver without it does.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;

enum {
	OK = 0,
	ERR_INVALID_VALUE = 1,
	ERR_OUT_OF_MEMORY = 2,
	ERR_NOT_INITIALIZED = 3,
	ERR_NO_DEVICE = 100,
	ERR_INVALID_DEVICE = 101,
	ERR_NOT_SUPPORTED = 801
};

/* The driver's entry points, as rdmactl calls them. */
CUresult cuInit(unsigned flags);
CUresult cuDeviceGetCount(int *n);
CUresult cuDeviceGet(CUdevice *d, int i);
CUresult cuDeviceGetPCIBusId(char *s, int len, CUdevice d);
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d);
CUresult cuCtxSetCurrent(CUcontext c);
CUresult cuCtxSynchronize(void);
CUresult cuMemAlloc_v2(CUdeviceptr *d, size_t len);
CUresult cuMemFree_v2(CUdeviceptr d);
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t len);
CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t len);
CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr d, size_t len, int type,
				       unsigned long long flags);
CUresult cuGetErrorString(CUresult r, const char **s);

#define MAX_ALLOCS 256

static struct {
	void *p;
	size_t len;
} allocs[MAX_ALLOCS];
static int inited;
static int ctx_token;

static int ngpus(void)
{
	const char *s = getenv("RDMACTL_FAKE_CUDA_GPUS");

	return s && *s ? atoi(s) : 1;
}

static int protect(void)
{
	const char *s = getenv("RDMACTL_FAKE_CUDA_PROTECT");

	return s && *s == '1';
}

/* The allocation holding [p, p + len), or NULL. */
static int find(CUdeviceptr d, size_t len)
{
	for (int i = 0; i < MAX_ALLOCS; i++) {
		uintptr_t b = (uintptr_t)allocs[i].p;

		if (allocs[i].p && d >= b && d - b <= allocs[i].len &&
		    len <= allocs[i].len - (d - b))
			return i;
	}
	return -1;
}

static void open_up(int i, int on)
{
	if (protect())
		mprotect(allocs[i].p, allocs[i].len, on ? PROT_READ | PROT_WRITE : PROT_NONE);
}

CUresult cuInit(unsigned flags)
{
	(void)flags;
	inited = 1;
	return OK;
}

CUresult cuDeviceGetCount(int *n)
{
	if (!inited)
		return ERR_NOT_INITIALIZED;
	*n = ngpus();
	return OK;
}

CUresult cuDeviceGet(CUdevice *d, int i)
{
	if (!inited)
		return ERR_NOT_INITIALIZED;
	if (i < 0 || i >= ngpus())
		return ERR_INVALID_DEVICE;
	*d = i;
	return OK;
}

/* Bus numbers that carry hex letters, listed out of bus order. */
CUresult cuDeviceGetPCIBusId(char *s, int len, CUdevice d)
{
	if (d < 0 || d >= ngpus())
		return ERR_INVALID_DEVICE;
	snprintf(s, (size_t)len, "0000:%02x:00.0", 0xb0 - 0x10 * d);
	return OK;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	if (d < 0 || d >= ngpus())
		return ERR_INVALID_DEVICE;
	*c = &ctx_token;
	return OK;
}

CUresult cuCtxSetCurrent(CUcontext c)
{
	(void)c;
	return OK;
}

CUresult cuCtxSynchronize(void)
{
	return OK;
}

CUresult cuMemAlloc_v2(CUdeviceptr *d, size_t len)
{
	for (int i = 0; i < MAX_ALLOCS; i++) {
		if (allocs[i].p)
			continue;
		void *p = mmap(NULL, len, protect() ? PROT_NONE : PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return ERR_OUT_OF_MEMORY;
		allocs[i].p = p;
		allocs[i].len = len;
		*d = (CUdeviceptr)(uintptr_t)p;
		return OK;
	}
	return ERR_OUT_OF_MEMORY;
}

CUresult cuMemFree_v2(CUdeviceptr d)
{
	int i = find(d, 0);

	if (i < 0 || (uintptr_t)allocs[i].p != d)
		return ERR_INVALID_VALUE;
	munmap(allocs[i].p, allocs[i].len);
	allocs[i].p = NULL;
	return OK;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t len)
{
	int i = find(d, len);

	if (i < 0)
		return ERR_INVALID_VALUE;
	open_up(i, 1);
	memcpy((void *)(uintptr_t)d, h, len);
	open_up(i, 0);
	return OK;
}

CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t len)
{
	int i = find(d, len);

	if (i < 0)
		return ERR_INVALID_VALUE;
	open_up(i, 1);
	memcpy(h, (const void *)(uintptr_t)d, len);
	open_up(i, 0);
	return OK;
}

CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr d, size_t len, int type,
				       unsigned long long flags)
{
	(void)handle, (void)d, (void)len, (void)type, (void)flags;
	return ERR_NOT_SUPPORTED;
}

CUresult cuGetErrorString(CUresult r, const char **s)
{
	switch (r) {
	case OK:
		*s = "no error (fake driver)";
		break;
	case ERR_INVALID_VALUE:
		*s = "invalid argument (fake driver)";
		break;
	case ERR_OUT_OF_MEMORY:
		*s = "out of memory (fake driver)";
		break;
	case ERR_NOT_INITIALIZED:
		*s = "initialization error (fake driver)";
		break;
	case ERR_INVALID_DEVICE:
		*s = "invalid device ordinal (fake driver)";
		break;
	case ERR_NOT_SUPPORTED:
		*s = "operation not supported (fake driver)";
		break;
	default:
		*s = "unknown error (fake driver)";
		break;
	}
	return OK;
}
