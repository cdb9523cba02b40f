/* SPDX-License-Identifier: MIT */
/* What every fuzz target shares: libFuzzer's entry point, and a check that
 * crashes (so that libFuzzer keeps the input) when a property does not hold. */
#ifndef RDMACTL_FUZZ_H
#define RDMACTL_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond); \
			abort(); \
		} \
	} while (0)

#endif
