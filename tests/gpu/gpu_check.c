// SPDX-License-Identifier: MIT
/*
 * GPU memory checks for tests/gpu/run.sh, through rdmactl's own library:
 *   gpu_check alloc [GPU [SIZE]]
 *       allocate SIZE bytes on GPU (PCI bus order) as `register --mem
 *       cuda:GPU` does, say whether the dma-buf export worked, and copy a
 *       pattern in and out with the bytes checked;
 *   gpu_check reg DEVICE PATH [GPU]
 *       register such memory with RDMA device DEVICE by PATH (dmabuf,
 *       peermem, bounce or auto) and say which path ran.
 * Exit status: 0 pass, 1 fail, 77 skip (no driver, no GPU), 2 usage.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdmactl/mem.h>
#include <rdmactl/parse.h>
#include <rdmactl/mem_core.h>

#define SKIP 77

typedef int (*memcpy_fn)(uint64_t dst, const void *src, size_t n);
typedef int (*memcpy_back_fn)(void *dst, uint64_t src, size_t n);

static int alloc_gpu(struct rc_mem *m, int gpu, size_t size, enum rc_mem_reg want)
{
	struct rc_mem_spec spec = { .kind = RC_MEM_CUDA, .len = size, .gpu = gpu, .reg = want };
	struct rc_err e;
	int rc;

	if (!rc_mem_gpu_built()) {
		printf("SKIP: this build has no GPU memory (-DRDMACTL_CUDA=OFF or no CUDA toolkit)\n");
		return SKIP;
	}
	rc = rc_mem_alloc_spec(m, &spec, true, &e);
	if (rc == -ENODEV) {
		printf("SKIP: no usable GPU %d: %s\n", gpu, e.msg);
		return SKIP;
	}
	if (rc) {
		printf("FAIL: cannot allocate %zu bytes on GPU %d: %s\n", size, gpu, e.msg);
		return 1;
	}
	return 0;
}

static int do_alloc(int gpu, size_t size)
{
	unsigned char *in = malloc(size), *out = malloc(size);
	memcpy_back_fn dtoh;
	memcpy_fn htod;
	struct rc_mem m;
	void *cuda;
	int rc;

	if (!in || !out)
		return 1;
	rc = alloc_gpu(&m, gpu, size, RC_REG_AUTO);
	if (rc)
		goto out;
	printf("allocated %zu bytes on GPU %d at 0x%llx\n", size, gpu,
	       (unsigned long long)m.dev_ptr);
	if (m.dmabuf_fd >= 0)
		printf("dma-buf export: yes (fd %d)\n", m.dmabuf_fd);
	else
		printf("dma-buf export: no (%s)\n", m.reg_notes);
	cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	htod = cuda ? (memcpy_fn)(uintptr_t)dlsym(cuda, "cuMemcpyHtoD_v2") : NULL;
	dtoh = cuda ? (memcpy_back_fn)(uintptr_t)dlsym(cuda, "cuMemcpyDtoH_v2") : NULL;
	if (!htod || !dtoh) {
		printf("FAIL: libcuda.so.1 is loaded but lacks cuMemcpyHtoD_v2/cuMemcpyDtoH_v2\n");
		rc = 1;
	} else {
		rc_pattern_fill("random:13", 0, in, size);
		memset(out, 0, size);
		if (htod(m.dev_ptr, in, size) || dtoh(out, m.dev_ptr, size)) {
			printf("FAIL: copying to or from the GPU failed\n");
			rc = 1;
		} else if (memcmp(in, out, size)) {
			printf("FAIL: the bytes read back from the GPU differ\n");
			rc = 1;
		} else {
			printf("PASS: %zu bytes copied to GPU %d and back, verified%s\n", size, gpu,
			       m.dmabuf_fd >= 0 ? "; dma-buf exported" : "");
		}
	}
	rc_mem_free(&m);
out:
	free(in);
	free(out);
	return rc;
}

static int do_reg(const char *dev_name, const char *path, int gpu)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_mr *mr = NULL;
	enum rc_mem_reg want;
	struct rc_mem m;
	struct rc_err e;
	int rc = 1;

	if (rc_mem_reg_parse(path, &want) || want == RC_REG_HOST) {
		fprintf(stderr, "gpu_check: PATH is auto, dmabuf, peermem or bounce\n");
		return 2;
	}
	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx) {
		printf("SKIP: cannot open RDMA device %s\n", dev_name);
		return SKIP;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		printf("FAIL: ibv_alloc_pd on %s: %s\n", dev_name, strerror(errno));
		goto out;
	}
	rc = alloc_gpu(&m, gpu, 4 << 20, want);
	if (rc)
		goto out;
	rc = rc_mem_register(&m, pd,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ,
			     &mr, &e);
	if (rc) {
		printf("FAIL: %s\n", e.msg);
		rc = 1;
	} else {
		printf("PASS: GPU %d memory registered on %s via %s (rkey 0x%x)%s%s\n", gpu,
		       dev_name, rc_mem_reg_name(m.reg), mr->rkey,
		       m.reg_notes[0] ? "; tried first: " : "", m.reg_notes);
		ibv_dereg_mr(mr);
	}
	rc_mem_free(&m);
out:
	if (pd)
		ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "alloc") && argc <= 4) {
		uint64_t size = 64 << 20;

		if (argc == 4 && rc_parse_size(argv[3], &size))
			return 2;
		return do_alloc(argc >= 3 ? atoi(argv[2]) : 0, (size_t)size);
	}
	if (argc >= 4 && !strcmp(argv[1], "reg") && argc <= 5)
		return do_reg(argv[2], argv[3], argc == 5 ? atoi(argv[4]) : 0);
	fprintf(stderr, "usage: gpu_check alloc [GPU [SIZE]] | gpu_check reg DEVICE PATH [GPU]\n");
	return 2;
}
