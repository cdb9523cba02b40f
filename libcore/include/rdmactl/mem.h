/* SPDX-License-Identifier: MIT */
/* Memory to register: host anonymous, hugepage, file-backed, GPU. */
#ifndef RDMACTL_MEM_H
#define RDMACTL_MEM_H

#include <rdmactl/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmactl/err.h>

enum rc_mem_kind { RC_MEM_HOST, RC_MEM_HUGEPAGE, RC_MEM_FILE, RC_MEM_CUDA };

/* What a remote peer may do with a region. */
enum rc_access { RC_ACCESS_RO, RC_ACCESS_RW, RC_ACCESS_ATOMIC };

struct rc_mem {
	enum rc_mem_kind kind;
	void *buf;
	size_t len;      /* usable length */
	size_t map_len;  /* what was mapped (rounded to the page size) */
	int fd;          /* file-backed: the open file, else -1 */
	bool writable;
	uint64_t dev_ptr; /* GPU memory: the device pointer */
	int dmabuf_fd;    /* GPU memory: exported dma-buf, else -1 */
};

/* Allocate or map. For RC_MEM_FILE, path is opened (created when writable
 * and missing); len 0 means the file's size, a larger len grows the file. */
RC_EXPORT int rc_mem_alloc(struct rc_mem *m, enum rc_mem_kind kind, size_t len, const char *path,
		 bool writable, struct rc_err *err);
/* Persist a file-backed region (msync). No-op for other kinds. */
RC_EXPORT int rc_mem_sync(struct rc_mem *m, struct rc_err *err);
/* Unmap and close; returns the first error, releases everything. */
RC_EXPORT int rc_mem_free(struct rc_mem *m);

RC_EXPORT const char *rc_mem_kind_name(enum rc_mem_kind k);
RC_EXPORT int rc_mem_kind_parse(const char *s, enum rc_mem_kind *k);
RC_EXPORT const char *rc_access_name(enum rc_access a);
RC_EXPORT int rc_access_parse(const char *s, enum rc_access *a);
/* The ibv_access_flags that serve a region with access a. */
RC_EXPORT int rc_access_ibv(enum rc_access a);

/* Fill buf with a repeatable pattern: "zero", "seq" (byte counter from the
 * absolute offset), "random:SEED" (xorshift stream by absolute offset). */
RC_EXPORT int rc_pattern_fill(const char *pattern, uint64_t offset, void *buf, size_t len);
RC_EXPORT bool rc_pattern_valid(const char *pattern);

#endif
