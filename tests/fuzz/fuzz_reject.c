// SPDX-License-Identifier: MIT
/*
 * The reason a peer gives in the private data of its reject, which every
 * client prints in its error (rc_reject_reason): whatever the bytes, the
 * reason is NUL-terminated printable ASCII that fits its buffer and is a
 * prefix of what was sent.
 */
#include <string.h>

#include <rdmactl/conn.h>
#include <rdmactl/conn_core.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t caps[] = { 1, 2, 16, 64, 256 };
	char out[256];

	for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
		size_t n = rc_reject_reason(data, size, out, caps[k]);

		FUZZ_CHECK(n < caps[k] && n <= size && strlen(out) == n);
		FUZZ_CHECK(memcmp(out, data, n) == 0);
		for (size_t i = 0; i < n; i++)
			FUZZ_CHECK(out[i] >= 0x20 && out[i] <= 0x7e);
		/* It stops only at the end, the cap or a byte it does not print. */
		FUZZ_CHECK(n == size || n == caps[k] - 1 || data[n] < 0x20 || data[n] > 0x7e);
	}
	FUZZ_CHECK(rc_reject_reason(NULL, 10, out, sizeof(out)) == 0 && out[0] == '\0');
	FUZZ_CHECK(rc_reject_reason(data, size, out, 0) == 0);
	return 0;
}
