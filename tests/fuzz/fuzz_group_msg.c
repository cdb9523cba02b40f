// SPDX-License-Identifier: MIT
/*
 * A group control message as a peer's SEND lands it (rc_group_msg_check,
 * which every received message passes before its payload is read): the
 * bytes are copied into a buffer of exactly their size, so a read past what
 * came is a sanitizer report. Accepted exactly when the 16-byte header came
 * whole and its length field names the payload that came, no more than a
 * message holds.
 */
#include <errno.h>
#include <string.h>

#include <rdmactl/group.h>
#include <rdmactl/group_core.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1);
	struct rc_err e;
	uint32_t len = 0;
	int rc;

	FUZZ_CHECK(buf != NULL);
	memcpy(buf, data, size);
	rc = rc_group_msg_check(buf, size, &e);
	if (size >= 16)
		len = (uint32_t)data[12] | (uint32_t)data[13] << 8 | (uint32_t)data[14] << 16 |
		      (uint32_t)data[15] << 24;
	FUZZ_CHECK((rc == 0) ==
		   (size >= 16 && size <= 16 + RC_GROUP_MSG_MAX && (size_t)len == size - 16));
	FUZZ_CHECK(rc == 0 || (rc == -EPROTO && e.msg[0]));
	free(buf);
	return 0;
}
