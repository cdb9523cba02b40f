// SPDX-License-Identifier: MIT
/*
 * A message as a group over libfabric receives it (rc_group_fab_head, then
 * for a MSG rc_group_msg_check on what follows the head, which is what
 * group_fab.c does before a byte of either is used): rank 1 of 4, every
 * pair planned but rank 3's. The bytes are copied into a buffer of exactly
 * their size, so a read past what came is a sanitizer report. Accepted
 * exactly when the 80-byte head came whole, names this rank, this world
 * and a planned sender, and carries a body only when it is a MSG, no
 * longer than a control message.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/group.h>
#include <rdmactl/group_core.h>

#include "fuzz.h"

#define HEAD 80
#define ME 1
#define WORLD 4

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t need[WORLD * WORLD], *buf = malloc(size ? size : 1);
	const void *body = NULL;
	size_t blen = 0;
	struct rc_err e;
	int from = -1, kind;
	bool ok;

	FUZZ_CHECK(buf != NULL);
	memcpy(buf, data, size);
	for (int i = 0; i < WORLD * WORLD; i++)
		need[i] = i / WORLD != i % WORLD && i / WORLD != 3 && i % WORLD != 3;
	kind = rc_group_fab_head(buf, size, ME, WORLD, need, &from, &body, &blen);
	ok = size >= HEAD && le32(data) == 0x6f646d72u && le32(data + 12) == ME &&
	     le32(data + 16) == WORLD && le32(data + 8) < WORLD && le32(data + 8) != ME &&
	     le32(data + 8) != 3 && data[4] >= 1 && data[4] <= 3 &&
	     size - HEAD <= 16 + RC_GROUP_MSG_MAX && (data[4] == 3 || size == HEAD);
	FUZZ_CHECK((kind > 0) == ok);
	FUZZ_CHECK(kind > 0 || kind == -EPROTO);
	if (kind > 0) {
		FUZZ_CHECK(kind == data[4] && (uint32_t)from == le32(data + 8));
		FUZZ_CHECK(body == buf + HEAD && blen == size - HEAD);
	}
	if (kind == 3)
		(void)rc_group_msg_check(body, blen, &e);
	free(buf);
	return 0;
}
