// SPDX-License-Identifier: MIT
/* The token buffers: where each block sits (and the sums of counts that
 * size them, a2a_line_sums), and copies in and out of them
 * (through the GPU's driver for GPU memory). The algorithms (flat.c,
 * ring.c, hier.c) and the driver (a2a.c) use them; they call neither, so
 * the driver calls the algorithms and nothing calls back. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "a2a_int.h"
#include <rdmactl/mem_core.h>

uint64_t a2a_recv_off(const struct a2a *a, int dst, int src)
{
	uint64_t off = 0;

	for (int s = 0; s < src; s++)
		off += a->o->counts[s * a->W + dst];
	return off;
}

uint64_t a2a_send_off(const struct a2a *a, int src, int dst)
{
	uint64_t off = 0;

	for (int d = 0; d < dst; d++)
		off += a->o->counts[src * a->W + d];
	return off;
}

int a2a_copy_in(struct a2a *a, uint8_t *to, const void *from, size_t len, struct rc_err *err)
{
	if (!a2a_gpu(a)) {
		memcpy(to, from, len);
		return 0;
	}
	return rc_mem_write(&a->m, (size_t)(to - a->mem), from, len, err);
}

int a2a_copy_out(struct a2a *a, void *to, const uint8_t *from, size_t len, struct rc_err *err)
{
	if (!a2a_gpu(a)) {
		memcpy(to, from, len);
		return 0;
	}
	return rc_mem_read(&a->m, (size_t)(from - a->mem), to, len, err);
}

int a2a_line_sums(struct a2a *a)
{
	size_t W = (size_t)a->W;

	if (a->sends)
		return 0;
	a->sends = calloc(W, sizeof(uint64_t));
	a->recvs = calloc(W, sizeof(uint64_t));
	if (!a->sends || !a->recvs) {
		free(a->sends);
		free(a->recvs);
		a->sends = a->recvs = NULL;
		return -ENOMEM;
	}
	for (size_t x = 0; x < W; x++)
		for (size_t j = 0; j < W; j++) {
			uint64_t v = a->o->counts[x * W + j];

			a->sends[x] += v;
			a->recvs[j] += v;
		}
	return 0;
}
