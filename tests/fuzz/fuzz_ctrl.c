// SPDX-License-Identifier: MIT
/*
 * The region control protocol as a client and the server read it off the
 * wire: a header, and a LIST reply with its region records. A decoded reply
 * must encode to a message that decodes to the same regions, and every name
 * must be a NUL-terminated string.
 */
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ctrl.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rc_region_desc r[RC_MAX_REGIONS], again[RC_MAX_REGIONS];
	static unsigned char out[RC_CTRL_MSG_MAX];
	struct rc_ctrl_hdr h;
	int n, len;

	if (rc_ctrl_decode_hdr(data, size, &h) == 0)
		FUZZ_CHECK(h.len <= size - RC_CTRL_HDR_LEN);

	n = rc_ctrl_decode_list(data, size, r, RC_MAX_REGIONS);
	if (n < 0)
		return 0;
	FUZZ_CHECK(n <= RC_MAX_REGIONS);
	for (int i = 0; i < n; i++) {
		FUZZ_CHECK(memchr(r[i].name, '\0', sizeof(r[i].name)) != NULL);
		FUZZ_CHECK(r[i].access <= RC_ACCESS_ATOMIC);
	}
	len = rc_ctrl_encode_list(out, sizeof(out), h.seq, r, n);
	FUZZ_CHECK(len > 0);
	FUZZ_CHECK(rc_ctrl_decode_list(out, (size_t)len, again, RC_MAX_REGIONS) == n);
	for (int i = 0; i < n; i++) {
		FUZZ_CHECK(strcmp(r[i].name, again[i].name) == 0);
		FUZZ_CHECK(r[i].addr == again[i].addr && r[i].length == again[i].length);
		FUZZ_CHECK(r[i].rkey == again[i].rkey && r[i].access == again[i].access);
	}
	return 0;
}
