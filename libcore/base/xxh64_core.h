/* SPDX-License-Identifier: MIT */
/* XXH64 (xxHash's 64-bit hash), streamed: a fast non-cryptographic digest
 * for integrity checks (a copy against its original), beside sha256_core.h
 * for where a digest must resist someone choosing the bytes. Not installed,
 * not exported (libcore/README.md). */
#ifndef RDMACTL_XXH64_CORE_H
#define RDMACTL_XXH64_CORE_H

#include <stddef.h>
#include <stdint.h>

#define RC_XXH64_LEN 8

struct rc_xxh64 {
	uint64_t v[4]; /* the four lanes */
	uint64_t seed;
	uint64_t bytes;
	unsigned char stripe[32]; /* the bytes short of a whole stripe */
	size_t fill;
};

void rc_xxh64_init(struct rc_xxh64 *s, uint64_t seed);
void rc_xxh64_update(struct rc_xxh64 *s, const void *data, size_t len);
/* The hash of what was fed so far; the state is left as it was. */
uint64_t rc_xxh64_value(const struct rc_xxh64 *s);
/* The same as 8 bytes, most significant first: xxhsum's canonical form. */
void rc_xxh64_final(const struct rc_xxh64 *s, unsigned char out[RC_XXH64_LEN]);

#endif
