/* SPDX-License-Identifier: MIT */
/* Memory to register: host anonymous, hugepage, file-backed, GPU. */
#ifndef RDMACTL_MEM_H
#define RDMACTL_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmactl/err.h>
#include <rdmactl/export.h>

struct ibv_pd;
struct ibv_mr;

enum rc_mem_kind { RC_MEM_HOST, RC_MEM_HUGEPAGE, RC_MEM_FILE, RC_MEM_CUDA };

/* How a region is registered with the NIC. GPU memory tries, in order,
 * dma-buf, peer memory, then a host bounce buffer, unless one is asked for. */
enum rc_mem_reg {
	RC_REG_AUTO,   /* a request: the first that works */
	RC_REG_HOST,   /* host memory: ibv_reg_mr */
	RC_REG_DMABUF, /* GPU: ibv_reg_dmabuf_mr of the exported dma-buf (no nvidia-peermem needed) */
	RC_REG_PEERMEM, /* GPU: ibv_reg_mr of the device pointer (needs nvidia-peermem) */
	RC_REG_BOUNCE,  /* GPU: a pinned host copy; peers reach host memory, not the GPU's:
			 * filled from the GPU when registered, copied back by rc_mem_sync */
};

/* What a remote peer may do with a region. */
enum rc_access { RC_ACCESS_RO, RC_ACCESS_RW, RC_ACCESS_ATOMIC };

struct rc_mem {
	enum rc_mem_kind kind;
	void *buf;
	size_t len;     /* usable length */
	size_t map_len; /* what was mapped (rounded to the page size) */
	int fd;         /* file-backed: the open file, else -1 */
	bool writable;
	uint64_t dev_ptr;     /* GPU memory: the device pointer */
	int dmabuf_fd;        /* GPU memory: exported dma-buf, else -1 */
	int gpu;              /* GPU memory: the GPU, numbered in PCI bus order */
	enum rc_mem_reg want; /* asked for (RC_REG_AUTO: in order) */
	enum rc_mem_reg reg;  /* what rc_mem_register used */
	uint64_t mr_addr;     /* the address peers use: dev_ptr, or the bounce buffer */
	void *bounce;         /* RC_REG_BOUNCE: the host copy */
	char reg_notes[384];  /* GPU: each path tried before the one that ran, and why it failed */
};

/* A region to allocate: kind, size, file, and for GPU memory which GPU and
 * which registration path (RC_REG_AUTO: dma-buf, peer memory, bounce). */
struct rc_mem_spec {
	enum rc_mem_kind kind;
	size_t len;
	const char *path;
	int gpu;
	enum rc_mem_reg reg;
};

/* Whether this build has GPU memory (the CUDA toolkit was found). */
RC_EXPORT bool rc_mem_gpu_built(void);
/* "host", "hugepage", "file", "cuda" or "cuda:N" (GPU N in PCI bus order;
 * "cuda" is GPU 0). gpu gets N, or 0. */
RC_EXPORT int rc_mem_parse(const char *s, enum rc_mem_kind *k, int *gpu);
/* "auto", "host", "dmabuf", "peermem", "bounce". */
RC_EXPORT const char *rc_mem_reg_name(enum rc_mem_reg r);
RC_EXPORT int rc_mem_reg_parse(const char *s, enum rc_mem_reg *r);

/* Whether GPU gpu (PCI bus order) can hold memory here: the driver loads,
 * CUDA starts and the GPU exists. 0, or -errno with the cause: a build
 * without CUDA, no NVIDIA driver, no such GPU. Allocates nothing, so a
 * command can say so before it joins a group or connects. */
RC_EXPORT int rc_mem_gpu_check(int gpu, struct rc_err *err);

RC_EXPORT const char *rc_mem_kind_name(enum rc_mem_kind k);
RC_EXPORT const char *rc_access_name(enum rc_access a);
RC_EXPORT int rc_access_parse(const char *s, enum rc_access *a);

/* Fill buf with a repeatable pattern: "zero", "seq" (byte counter from the
 * absolute offset), "random:SEED" (xorshift stream by absolute offset). */
RC_EXPORT int rc_pattern_fill(const char *pattern, uint64_t offset, void *buf, size_t len);
RC_EXPORT bool rc_pattern_valid(const char *pattern);

#endif
