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
#include <rdmactl/parse.h>

#define RC_CTRL_MAGIC 0x434d4452u /* "RDMC" */
#define RC_CTRL_VERSION 1
#define RC_CTRL_MSG_MAX 4096
#define RC_CTRL_HDR_LEN 16
#define RC_MAX_REGIONS 64

enum rc_ctrl_type {
	RC_CTRL_LIST_REQ = 1,  /* no payload */
	RC_CTRL_LIST_RESP = 2, /* u32 count, then count region records */
};

struct rc_ctrl_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t len;  /* payload bytes after the header */
	uint32_t seq;
};

/* What a client needs to address a region. */
struct rc_region_desc {
	char name[RC_NAME_MAX];
	uint64_t addr;
	uint64_t length;
	uint32_t rkey;
	enum rc_access access;
};

#define RC_REGION_WIRE_LEN (RC_NAME_MAX + 8 + 8 + 4 + 4)

RC_EXPORT int rc_ctrl_encode_hdr(void *buf, size_t cap, uint16_t type, uint32_t len, uint32_t seq);
RC_EXPORT int rc_ctrl_decode_hdr(const void *buf, size_t len, struct rc_ctrl_hdr *h);
/* Encode a LIST_RESP message (header included). Returns its length or -ENOSPC. */
RC_EXPORT int rc_ctrl_encode_list(void *buf, size_t cap, uint32_t seq, const struct rc_region_desc *r,
			int n);
/* Decode a whole LIST_RESP message. Returns the region count or -EBADMSG. */
RC_EXPORT int rc_ctrl_decode_list(const void *buf, size_t len, struct rc_region_desc *r, int max);

#endif
