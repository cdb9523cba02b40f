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

RC_EXPORT void rc_sha256_init(struct rc_sha256 *s);
RC_EXPORT void rc_sha256_update(struct rc_sha256 *s, const void *data, size_t len);
RC_EXPORT void rc_sha256_final(struct rc_sha256 *s, unsigned char out[RC_SHA256_LEN]);
/* The digest as 64 lowercase hex digits and a NUL. */
RC_EXPORT void rc_sha256_hex(const unsigned char d[RC_SHA256_LEN], char hex[2 * RC_SHA256_LEN + 1]);
/* HMAC-SHA256 (RFC 2104) of msg under key. */
RC_EXPORT void rc_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
			      unsigned char out[RC_SHA256_LEN]);

#endif
