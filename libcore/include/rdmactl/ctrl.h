/* SPDX-License-Identifier: MIT */
/*
 * The small control protocol that rdmactl's own peers speak over SEND/RECV
 * on top of the wire contract. Every message starts with a little-endian
 * header; a plain verbs client never needs any of it.
 */
#ifndef RDMACTL_CTRL_H
#define RDMACTL_CTRL_H

#include <rdmactl/export.h>

#include <stddef.h>
#include <stdint.h>

#include <rdmactl/mem.h>
#include <rdmactl/ops.h>
#include <rdmactl/parse.h>

#define RC_CTRL_MSG_MAX 4096 /* a control message, header included */
#define RC_MAX_REGIONS 64

/* What a client needs to address a region. */
struct rc_region_desc {
	char name[RC_NAME_MAX];
	uint64_t addr;
	uint64_t length;
	uint32_t rkey;
	enum rc_access access;
};

#define RC_REGION_WIRE_LEN (RC_NAME_MAX + 8 + 8 + 4 + 4)

/* A live move records the writes of a region by blocks of this many bytes. */
#define RC_MIG_BLOCK (64u << 10)

#endif
