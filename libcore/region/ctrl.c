// SPDX-License-Identifier: MIT
#include <endian.h>
#include <errno.h>
#include <string.h>

#include <rdmactl/ctrl.h>
#include <rdmactl/parse.h>
#include <rdmactl/ctrl_core.h>

#include "ctrl_wire.h"

int rc_ctrl_encode_hdr(void *buf, size_t cap, uint16_t type, uint32_t len, uint32_t seq)
{
	unsigned char *p = buf;

	if (cap < RC_CTRL_HDR_LEN)
		return -ENOSPC;
	put32(p, RC_CTRL_MAGIC);
	put16(p + 4, RC_CTRL_VERSION);
	put16(p + 6, type);
	put32(p + 8, len);
	put32(p + 12, seq);
	return RC_CTRL_HDR_LEN;
}

int rc_ctrl_decode_hdr(const void *buf, size_t len, struct rc_ctrl_hdr *h)
{
	const unsigned char *p = buf;

	if (len < RC_CTRL_HDR_LEN)
		return -EBADMSG;
	h->magic = get32(p);
	h->version = get16(p + 4);
	h->type = get16(p + 6);
	h->len = get32(p + 8);
	h->seq = get32(p + 12);
	if (h->magic != RC_CTRL_MAGIC || h->version != RC_CTRL_VERSION ||
	    h->len > len - RC_CTRL_HDR_LEN)
		return -EBADMSG;
	return 0;
}

int rc_ctrl_encode_list(void *buf, size_t cap, uint32_t seq, const struct rc_region_desc *r, int n)
{
	size_t need = RC_CTRL_HDR_LEN + 4 + (size_t)n * RC_REGION_WIRE_LEN;
	unsigned char *p = buf;

	if (n < 0 || n > RC_MAX_REGIONS || cap < need)
		return -ENOSPC;
	rc_ctrl_encode_hdr(p, cap, RC_CTRL_LIST_RESP, (uint32_t)(need - RC_CTRL_HDR_LEN), seq);
	p += RC_CTRL_HDR_LEN;
	put32(p, (uint32_t)n);
	p += 4;
	for (int i = 0; i < n; i++, p += RC_REGION_WIRE_LEN) {
		memset(p, 0, RC_NAME_MAX);
		strncpy((char *)p, r[i].name, RC_NAME_MAX - 1);
		put64(p + RC_NAME_MAX, r[i].addr);
		put64(p + RC_NAME_MAX + 8, r[i].length);
		put32(p + RC_NAME_MAX + 16, r[i].rkey);
		put32(p + RC_NAME_MAX + 20, (uint32_t)r[i].access);
	}
	return (int)need;
}

int rc_ctrl_decode_list(const void *buf, size_t len, struct rc_region_desc *r, int max)
{
	const unsigned char *p = buf;
	struct rc_ctrl_hdr h;
	uint32_t n;

	if (rc_ctrl_decode_hdr(buf, len, &h) || h.type != RC_CTRL_LIST_RESP || h.len < 4)
		return -EBADMSG;
	p += RC_CTRL_HDR_LEN;
	n = get32(p);
	p += 4;
	if (n > RC_MAX_REGIONS || (int)n > max || h.len != 4 + n * RC_REGION_WIRE_LEN)
		return -EBADMSG;
	for (uint32_t i = 0; i < n; i++, p += RC_REGION_WIRE_LEN) {
		uint32_t access;

		/* A name as a server may serve it: terminated, and nothing a
		 * terminal would take for an escape. */
		if (memchr(p, '\0', RC_NAME_MAX) == NULL)
			return -EBADMSG;
		memcpy(r[i].name, p, RC_NAME_MAX);
		if (!rc_region_name_valid(r[i].name))
			return -EBADMSG;
		r[i].addr = get64(p + RC_NAME_MAX);
		r[i].length = get64(p + RC_NAME_MAX + 8);
		r[i].rkey = get32(p + RC_NAME_MAX + 16);
		access = get32(p + RC_NAME_MAX + 20);
		if (access > RC_ACCESS_ATOMIC)
			return -EBADMSG;
		r[i].access = (enum rc_access)access;
	}
	return (int)n;
}

/* Migration messages. Strings travel in fixed fields, NUL-terminated. */
static void put_str(unsigned char *p, const char *s, size_t field)
{
	size_t n = strnlen(s, field - 1);

	memset(p, 0, field);
	memcpy(p, s, n);
}

/* A peer's string: terminated in its field, its control characters (a
 * terminal's escapes, when it is printed) made '?'. */
static int get_str(char *dst, const unsigned char *p, size_t field)
{
	if (memchr(p, '\0', field) == NULL)
		return -EBADMSG;
	memcpy(dst, p, field);
	for (char *c = dst; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return 0;
}

static int encode_ext(unsigned char *p, const struct rc_extent *x, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++, p += 24) {
		put64(p, x[i].src);
		put64(p + 8, x[i].dst);
		put64(p + 16, x[i].len);
	}
	return (int)n * 24;
}

static void decode_ext(const unsigned char *p, struct rc_extent *x, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++, p += 24) {
		x[i].src = get64(p);
		x[i].dst = get64(p + 8);
		x[i].len = get64(p + 16);
	}
}

int rc_ctrl_encode_pull(void *buf, size_t cap, uint32_t seq, const struct rc_pull_req *r)
{
	size_t need = RC_CTRL_HDR_LEN + RC_PULL_FIXED_LEN + (size_t)r->n * 24;
	unsigned char *p = (unsigned char *)buf + RC_CTRL_HDR_LEN;

	if (r->n > RC_PULL_MAX_EXT || cap < need)
		return -ENOSPC;
	rc_ctrl_encode_hdr(buf, cap, RC_CTRL_PULL_REQ, (uint32_t)(need - RC_CTRL_HDR_LEN), seq);
	put32(p, r->flags);
	put32(p + 4, r->n);
	put32(p + 8, r->rkey);
	put32(p + 12, 0);
	p += 16;
	put_str(p, r->host, RC_HOST_MAX);
	p += RC_HOST_MAX;
	put_str(p, r->port, 8);
	p += 8;
	put_str(p, r->src_region, RC_NAME_MAX);
	p += RC_NAME_MAX;
	put_str(p, r->dst_region, RC_NAME_MAX);
	p += RC_NAME_MAX;
	put_str(p, r->token, RC_MIG_TOKEN_LEN);
	p += RC_MIG_TOKEN_LEN;
	encode_ext(p, r->ext, r->n);
	return (int)need;
}

int rc_ctrl_decode_pull(const void *buf, size_t len, struct rc_pull_req *r, uint32_t max)
{
	const unsigned char *p = (const unsigned char *)buf + RC_CTRL_HDR_LEN;
	struct rc_ctrl_hdr h;

	if (rc_ctrl_decode_hdr(buf, len, &h) || h.type != RC_CTRL_PULL_REQ ||
	    h.len < RC_PULL_FIXED_LEN)
		return -EBADMSG;
	r->flags = get32(p);
	r->n = get32(p + 4);
	if (r->n > max || r->n > RC_PULL_MAX_EXT || h.len != RC_PULL_FIXED_LEN + r->n * 24)
		return -EBADMSG;
	r->rkey = get32(p + 8);
	p += 16;
	if (get_str(r->host, p, RC_HOST_MAX) || get_str(r->port, p + RC_HOST_MAX, 8) ||
	    get_str(r->src_region, p + RC_HOST_MAX + 8, RC_NAME_MAX) ||
	    get_str(r->dst_region, p + RC_HOST_MAX + 8 + RC_NAME_MAX, RC_NAME_MAX) ||
	    get_str(r->token, p + RC_HOST_MAX + 8 + 2 * RC_NAME_MAX, RC_MIG_TOKEN_LEN))
		return -EBADMSG;
	decode_ext(p + RC_PULL_FIXED_LEN - 16, r->ext, r->n);
	return 0;
}

static int encode_ext_msg(void *buf, size_t cap, uint16_t type, uint32_t seq,
			  const struct rc_hash_req *r)
{
	size_t need = RC_CTRL_HDR_LEN + RC_HASH_FIXED_LEN + (size_t)r->n * 24;
	unsigned char *p = (unsigned char *)buf + RC_CTRL_HDR_LEN;

	if (r->n > RC_HASH_MAX_EXT || cap < need)
		return -ENOSPC;
	rc_ctrl_encode_hdr(buf, cap, type, (uint32_t)(need - RC_CTRL_HDR_LEN), seq);
	put32(p, r->flags);
	put32(p + 4, r->n);
	put_str(p + 8, r->region, RC_NAME_MAX);
	encode_ext(p + RC_HASH_FIXED_LEN, r->ext, r->n);
	return (int)need;
}

static int decode_ext_msg(const void *buf, size_t len, uint16_t type, struct rc_hash_req *r,
			  uint32_t max)
{
	const unsigned char *p = (const unsigned char *)buf + RC_CTRL_HDR_LEN;
	struct rc_ctrl_hdr h;

	if (rc_ctrl_decode_hdr(buf, len, &h) || h.type != type || h.len < RC_HASH_FIXED_LEN)
		return -EBADMSG;
	r->flags = get32(p);
	r->n = get32(p + 4);
	if (r->n > max || r->n > RC_HASH_MAX_EXT || h.len != RC_HASH_FIXED_LEN + r->n * 24 ||
	    get_str(r->region, p + 8, RC_NAME_MAX))
		return -EBADMSG;
	decode_ext(p + RC_HASH_FIXED_LEN, r->ext, r->n);
	return 0;
}

int rc_ctrl_encode_hash(void *buf, size_t cap, uint32_t seq, const struct rc_hash_req *r)
{
	return encode_ext_msg(buf, cap, RC_CTRL_HASH_REQ, seq, r);
}

int rc_ctrl_decode_hash(const void *buf, size_t len, struct rc_hash_req *r, uint32_t max)
{
	return decode_ext_msg(buf, len, RC_CTRL_HASH_REQ, r, max);
}

int rc_ctrl_encode_dirty(void *buf, size_t cap, uint32_t seq, const struct rc_hash_req *r)
{
	return encode_ext_msg(buf, cap, RC_CTRL_DIRTY_LIST, seq, r);
}

int rc_ctrl_decode_dirty(const void *buf, size_t len, struct rc_hash_req *r, uint32_t max)
{
	return decode_ext_msg(buf, len, RC_CTRL_DIRTY_LIST, r, max);
}

#define MIG_CMD_LEN (4 + 4 + RC_NAME_MAX + 8 + 8 + RC_MIG_MSG_LEN)

int rc_ctrl_encode_mig_cmd(void *buf, size_t cap, uint32_t seq, const struct rc_mig_cmd *c)
{
	unsigned char *p = (unsigned char *)buf + RC_CTRL_HDR_LEN;

	if (cap < RC_CTRL_HDR_LEN + MIG_CMD_LEN)
		return -ENOSPC;
	rc_ctrl_encode_hdr(buf, cap, RC_CTRL_MIG_CMD, MIG_CMD_LEN, seq);
	put32(p, c->step);
	put32(p + 4, c->move);
	put_str(p + 8, c->region, RC_NAME_MAX);
	put64(p + 8 + RC_NAME_MAX, c->off);
	put64(p + 16 + RC_NAME_MAX, c->len);
	put_str(p + 24 + RC_NAME_MAX, c->arg, RC_MIG_MSG_LEN);
	return RC_CTRL_HDR_LEN + MIG_CMD_LEN;
}

int rc_ctrl_decode_mig_cmd(const void *buf, size_t len, struct rc_mig_cmd *c)
{
	const unsigned char *p = (const unsigned char *)buf + RC_CTRL_HDR_LEN;
	struct rc_ctrl_hdr h;

	if (rc_ctrl_decode_hdr(buf, len, &h) || h.type != RC_CTRL_MIG_CMD || h.len != MIG_CMD_LEN)
		return -EBADMSG;
	c->step = get32(p);
	c->move = get32(p + 4);
	c->off = get64(p + 8 + RC_NAME_MAX);
	c->len = get64(p + 16 + RC_NAME_MAX);
	if (get_str(c->region, p + 8, RC_NAME_MAX) ||
	    get_str(c->arg, p + 24 + RC_NAME_MAX, RC_MIG_MSG_LEN))
		return -EBADMSG;
	return 0;
}

#define MIG_RESP_LEN (4 + 4 + 8 + 32 + RC_MIG_MSG_LEN)

int rc_ctrl_encode_mig_resp(void *buf, size_t cap, uint32_t seq, const struct rc_mig_resp *r)
{
	unsigned char *p = (unsigned char *)buf + RC_CTRL_HDR_LEN;

	if (cap < RC_CTRL_HDR_LEN + MIG_RESP_LEN)
		return -ENOSPC;
	rc_ctrl_encode_hdr(buf, cap, RC_CTRL_MIG_RESP, MIG_RESP_LEN, seq);
	put32(p, (uint32_t)r->status);
	put32(p + 4, 0);
	put64(p + 8, r->bytes);
	memcpy(p + 16, r->digest, 32);
	put_str(p + 48, r->msg, RC_MIG_MSG_LEN);
	return RC_CTRL_HDR_LEN + MIG_RESP_LEN;
}

int rc_ctrl_decode_mig_resp(const void *buf, size_t len, struct rc_mig_resp *r)
{
	const unsigned char *p = (const unsigned char *)buf + RC_CTRL_HDR_LEN;
	struct rc_ctrl_hdr h;

	if (rc_ctrl_decode_hdr(buf, len, &h) || h.type != RC_CTRL_MIG_RESP || h.len != MIG_RESP_LEN)
		return -EBADMSG;
	r->status = (int32_t)get32(p);
	r->bytes = get64(p + 8);
	memcpy(r->digest, p + 16, 32);
	if (r->status > 0 || get_str(r->msg, p + 48, RC_MIG_MSG_LEN))
		return -EBADMSG;
	return 0;
}
