/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/sha256.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_SHA256_CORE_H
#define RDMACTL_SHA256_CORE_H

#include <rdmactl/sha256.h>

/* SHA-256 (FIPS 180-4), for verifying moved bytes without another library;
 * with the CPU's SHA extensions where it has them (x86-64 SHA-NI). */
struct rc_sha256 {
	uint32_t h[8];
	uint64_t bytes;
	unsigned char block[64];
	size_t fill;
};

void rc_sha256_init(struct rc_sha256 *s);
void rc_sha256_update(struct rc_sha256 *s, const void *data, size_t len);
void rc_sha256_final(struct rc_sha256 *s, unsigned char out[RC_SHA256_LEN]);

/* HMAC-SHA256 (RFC 2104) of msg under key. */
void rc_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
		    unsigned char out[RC_SHA256_LEN]);

#endif
