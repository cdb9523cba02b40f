/* SPDX-License-Identifier: MIT */
/* SHA-256 (FIPS 180-4), for verifying moved bytes without another library;
 * with the CPU's SHA extensions where it has them (x86-64 SHA-NI). */
#ifndef RDMACTL_SHA256_H
#define RDMACTL_SHA256_H

#include <rdmactl/export.h>

#include <stddef.h>
#include <stdint.h>

#define RC_SHA256_LEN 32

struct rc_sha256 {
	uint32_t h[8];
	uint64_t bytes;
	unsigned char block[64];
	size_t fill;
};

/* The digest as 64 lowercase hex digits and a NUL. */
RC_EXPORT void rc_sha256_hex(const unsigned char d[RC_SHA256_LEN], char hex[2 * RC_SHA256_LEN + 1]);

#endif
