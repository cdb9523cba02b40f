// SPDX-License-Identifier: MIT
#include <endian.h>
#include <errno.h>
#include <string.h>

#include <rdmactl/ctrl.h>

static void put16(unsigned char *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}

static void put32(unsigned char *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void put64(unsigned char *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static uint16_t get16(const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return le16toh(v);
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

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

int rc_ctrl_encode_list(void *buf, size_t cap, uint32_t seq, const struct rc_region_desc *r,
			int n)
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

		if (memchr(p, '\0', RC_NAME_MAX) == NULL)
			return -EBADMSG;
		memcpy(r[i].name, p, RC_NAME_MAX);
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
