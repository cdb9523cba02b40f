/* SPDX-License-Identifier: MIT */
/* SHA-256 digests as the reports show them. The hashing itself (FIPS
 * 180-4, with the CPU's SHA extensions where it has them) is the library's
 * own: base/sha256_core.h. */
#ifndef RDMACTL_SHA256_H
#define RDMACTL_SHA256_H

#include <rdmactl/export.h>

#include <stddef.h>
#include <stdint.h>

#define RC_SHA256_LEN 32

/* The digest as 64 lowercase hex digits and a NUL. */
RC_EXPORT void rc_sha256_hex(const unsigned char d[RC_SHA256_LEN], char hex[2 * RC_SHA256_LEN + 1]);

#endif
