// SPDX-License-Identifier: MIT
/*
 * The files a user hands a group: a peers file (RANK HOST:PORT lines, read
 * by the file: rendezvous) and alltoall's skew matrix (CSV of token
 * counts, then checked for sizes that fit). The first byte picks the file
 * and the world size; the rest is its text, given through a memfd.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdmactl/a2a.h>
#include <rdmactl/group.h>
#include <rdmactl/group_core.h>
#include <rdmactl/a2a_core.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	char path[64], url[80];
	int world;
	struct rc_err e;

	if (size < 1)
		return 0;
	if (fd < 0 && (fd = memfd_create("fuzz", 0)) < 0)
		return 0;
	if (ftruncate(fd, 0) || pwrite(fd, data + 1, size - 1, 0) != (ssize_t)(size - 1))
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	world = 1 + (data[0] >> 1) % 8;
	if (data[0] & 1) {
		struct rc_rdv *r;
		struct rc_endpoint self;

		snprintf(url, sizeof(url), "file:%s", path);
		if (rc_rdv_open(url, world - 1, world, 100, &r, &e) == 0) {
			/* every rank of the world has an endpoint */
			FUZZ_CHECK(rc_rdv_self(r, &self, &e) == 0);
			FUZZ_CHECK(self.host[0] && self.port[0]);
			rc_rdv_close(r);
		}
	} else {
		uint64_t counts[64];

		if (rc_a2a_matrix_load(path, world, counts, &e) == 0 &&
		    rc_a2a_counts_fit(counts, world, 14336, &e) == 0)
			/* what fits: no row's bytes wrap */
			for (int i = 0; i < world; i++) {
				uint64_t sum = 0;

				for (int j = 0; j < world; j++) {
					FUZZ_CHECK(counts[i * world + j] <= RC_A2A_RANK_BYTES_MAX);
					sum += counts[i * world + j];
				}
				FUZZ_CHECK(sum * 14336 <= RC_A2A_RANK_BYTES_MAX);
			}
	}
	return 0;
}
