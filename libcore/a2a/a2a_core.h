/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/a2a.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_A2A_CORE_H
#define RDMACTL_A2A_CORE_H

#include <rdmactl/a2a.h>

int rc_a2a_matrix_load(const char *path, int world, uint64_t *counts, struct rc_err *err);

/* The deterministic content of token idx of the block src sends dst. */
void rc_a2a_token_fill(void *buf, size_t len, int src, int dst, uint64_t idx, uint32_t iter,
		       int phase);

#endif
