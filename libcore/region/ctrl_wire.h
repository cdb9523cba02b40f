/* SPDX-License-Identifier: MIT */
/* Little-endian fields of the control protocol's messages, written and read
 * through memcpy (no alignment assumed): ctrl.c's messages and ctrl_auth.c's
 * handshake share them. */
#ifndef RDMACTL_CTRL_WIRE_H
#define RDMACTL_CTRL_WIRE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline void put16(unsigned char *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}

static inline void put32(unsigned char *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static inline void put64(unsigned char *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static inline uint16_t get16(const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return le16toh(v);
}

static inline uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static inline uint64_t get64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

#endif
