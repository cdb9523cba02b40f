/* SPDX-License-Identifier: MIT */
/* GPU memory (CUDA), present only when the toolkit was found at build time. */
#ifndef RDMACTL_GPU_INTERNAL_H
#define RDMACTL_GPU_INTERNAL_H

#include <rdmactl/mem.h>

/* GPU gpu (PCI bus order among those CUDA sees). A refused dma-buf export
 * is no error: dmabuf_fd stays -1 and reg_notes says why. */
int rc_gpu_alloc(struct rc_mem *m, int gpu, size_t len, struct rc_err *err);
int rc_gpu_free(struct rc_mem *m);
/* Copy between host and a GPU region (for loading and checking contents). */
int rc_gpu_copy(struct rc_mem *m, size_t off, void *host, size_t len, bool to_gpu,
		struct rc_err *err);
/* Whether GPU gpu can hold memory: the driver loads, CUDA starts, the GPU exists. */
int rc_gpu_probe(int gpu, struct rc_err *err);

#endif
