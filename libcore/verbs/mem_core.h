/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/mem.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_MEM_CORE_H
#define RDMACTL_MEM_CORE_H

#include <rdmactl/mem.h>

/* Allocate or map. For RC_MEM_FILE, path is opened (created when writable
 * and missing); len 0 means the file's size, a larger len grows the file (its
 * blocks allocated). A writable region is memory loaded from the file and
 * written back by rc_mem_sync; a read-only one maps the file privately. */
int rc_mem_alloc(struct rc_mem *m, enum rc_mem_kind kind, size_t len, const char *path,
		 bool writable, struct rc_err *err);
/* rc_mem_alloc with a spec: the GPU and registration path of GPU memory. */
int rc_mem_alloc_spec(struct rc_mem *m, const struct rc_mem_spec *spec, bool writable,
		      struct rc_err *err);
/* Register with pd: host memory with ibv_reg_mr; GPU memory by the first
 * path that works of dma-buf, peer memory, host bounce buffer (or only the
 * one m->want names). Sets m->reg, m->mr_addr and m->reg_notes; on failure
 * err says why each path failed. GPU memory registered before registers
 * again (another PD, other access) by the path that ran the first time,
 * through the same bounce buffer. */
int rc_mem_register(struct rc_mem *m, struct ibv_pd *pd, int access, struct ibv_mr **mr,
		    struct rc_err *err);

/* Write a writable file-backed region back to its file and fsync it, or
 * copy a GPU region's bounce buffer back to the GPU. No-op for other kinds. */
int rc_mem_sync(struct rc_mem *m, struct rc_err *err);
/* Write len bytes at off of a writable file-backed region back to its file;
 * the part that reaches the region's end also fsyncs the file, so a long
 * region can be written back in parts that each block only briefly.
 * No-op for other kinds. */
int rc_mem_sync_range(struct rc_mem *m, size_t off, size_t len, struct rc_err *err);
/* Copy len bytes at off out of the region into host memory: what peers wrote
 * there (GPU memory: from the GPU, or from its bounce buffer). */
int rc_mem_read(struct rc_mem *m, size_t off, void *host, size_t len, struct rc_err *err);
/* Copy len bytes of host memory into the region at off: what peers will
 * read there (GPU memory: to the GPU, waiting until the bytes are there;
 * registered through a bounce buffer: into the bounce buffer, which is what
 * peers reach; rc_mem_sync copies it to the GPU). */
int rc_mem_write(struct rc_mem *m, size_t off, const void *host, size_t len, struct rc_err *err);
/* The host copy the CPU fills and checks for a region in GPU memory: len
 * zeroed bytes (an anonymous mapping), or NULL with err naming what it was
 * for. rc_mem_host_copy_free gives it back (NULL is fine). */
void *rc_mem_host_copy(size_t len, const char *what, struct rc_err *err);
void rc_mem_host_copy_free(void *copy, size_t len);

/* Unmap and close; returns the first error, releases everything. */
int rc_mem_free(struct rc_mem *m);

int rc_mem_kind_parse(const char *s, enum rc_mem_kind *k);

/* The ibv_access_flags that serve a region with access a. */
int rc_access_ibv(enum rc_access a);

#endif
