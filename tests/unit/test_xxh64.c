// SPDX-License-Identifier: MIT
/* XXH64 against xxhsum (Debian's xxhash 0.8.1, `xxhsum -H1`), fed whole and
 * streamed in pieces cut at random points (the multicast hashes a blob chunk
 * by chunk, each chunk as it lands). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/xxh64_core.h>

#include "check.h"

static uint64_t whole(const void *p, size_t len)
{
	struct rc_xxh64 s;

	rc_xxh64_init(&s, 0);
	rc_xxh64_update(&s, p, len);
	return rc_xxh64_value(&s);
}

/* byte i of the test pattern: (31 i + 7) mod 256 */
static unsigned char *pattern(size_t len)
{
	unsigned char *p = malloc(len ? len : 1);

	for (size_t i = 0; p && i < len; i++)
		p[i] = (unsigned char)(i * 31 + 7);
	return p;
}

/* Every length around the stripe (32 bytes) and the tail's 8- and 4-byte
 * steps, and a blob of a MiB and 3 bytes: as xxhsum -H1 prints them. */
static void against_xxhsum(void)
{
	static const struct {
		size_t len;
		uint64_t h;
	} v[] = {
		{ 0, 0xef46db3751d8e999ULL },       { 1, 0xa96c7f0ce858bbb7ULL },
		{ 3, 0x56e6957632a487f9ULL },       { 4, 0xc60d15b1e3ff8f04ULL },
		{ 7, 0xafbefc3d6c6f9a8eULL },       { 8, 0x3da5c7aa269683e0ULL },
		{ 9, 0x4b17a9ba9e215c09ULL },       { 12, 0x8fe8ab1c1fd0666eULL },
		{ 31, 0x4a74f3a1a39ad4a1ULL },      { 32, 0x8d57d6a4671cc43dULL },
		{ 33, 0x62c9fd21ed857664ULL },      { 63, 0x5c320a0d2707057fULL },
		{ 64, 0x7bbabbc45729d17eULL },      { 100, 0xefa0ad2d3e70c151ULL },
		{ 1000, 0x99594f4828043d35ULL },    { 4099, 0x98531e44aa4f969dULL },
		{ 1048579, 0x1d6a175cade01988ULL },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		unsigned char *p = pattern(v[i].len);

		CHECK(p != NULL);
		if (p)
			CHECK_EQ_U64(whole(p, v[i].len), v[i].h);
		free(p);
	}
	CHECK_EQ_U64(whole("abc", 3), 0x44bc2cf5ad770999ULL);
	CHECK_EQ_U64(whole("The quick brown fox jumps over the lazy dog", 43),
		     0x0b242d361fda71bcULL);
}

/* The canonical bytes, most significant first: what xxhsum prints. */
static void canonical_bytes(void)
{
	static const unsigned char want[RC_XXH64_LEN] = { 0xef, 0x46, 0xdb, 0x37,
							  0x51, 0xd8, 0xe9, 0x99 };
	unsigned char got[RC_XXH64_LEN];
	struct rc_xxh64 s;

	rc_xxh64_init(&s, 0);
	rc_xxh64_final(&s, got);
	CHECK(!memcmp(got, want, sizeof(want)));
}

/* Streamed in pieces cut at xorshift points (0 to 100 bytes, and now and
 * then thousands): the one-shot hash at every length, the value taken
 * along the way leaving the state as it was. */
static void streamed_equals_whole(void)
{
	size_t len = 300000, off = 0, calls = 0;
	unsigned char *p = malloc(len);
	uint64_t x = 88172645463325252ULL;
	struct rc_xxh64 s;

	CHECK(p != NULL);
	if (!p)
		return;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		p[i] = (unsigned char)(x >> 24);
	}
	rc_xxh64_init(&s, 0);
	while (off < len) {
		size_t piece;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		piece = x % 8 ? x % 101 : x % 9000;
		if (piece > len - off)
			piece = len - off;
		rc_xxh64_update(&s, p + off, piece);
		off += piece;
		if (++calls % 50 == 0 || off == len)
			CHECK_EQ_U64(rc_xxh64_value(&s), whole(p, off));
	}
	free(p);
}

int main(void)
{
	against_xxhsum();
	canonical_bytes();
	streamed_equals_whole();
	CHECK_DONE();
}
