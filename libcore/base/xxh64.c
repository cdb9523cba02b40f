// SPDX-License-Identifier: MIT
/*
 * XXH64 (Yann Collet's xxHash, 64-bit): a fast non-cryptographic hash, for
 * checking that a copy equals its original where no one is trying to fool
 * the check (a hostile peer can lie about any digest it reports). Four
 * lanes of 8 bytes over 32-byte stripes, merged, then the tail and the
 * avalanche; the digest as xxhsum prints it (big-endian).
 */
#include <string.h>

#include <rdmactl/xxh64_core.h>

#define P1 11400714785074694791ULL
#define P2 14029467366897019727ULL
#define P3 1609587929392839161ULL
#define P4 9650029242287828579ULL
#define P5 2870177450012600261ULL

/* A macro for the same reason as sha256.c's ror: a constant shift. */
#define rol(x, n) ((uint64_t)((x) << (n)) | (uint64_t)((x) >> (64 - (n))))

/* Little-endian loads: one unaligned load each (memcpy), swapped on a
 * big-endian host. Byte by byte, gcc 12 at -O2 left le64 a function called
 * four times a stripe (its inliner sees eight loads the store-merging pass
 * only later turns into one), a third of the hash's time. */
static inline uint64_t le64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static inline uint32_t le32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	return v;
}

static uint64_t round64(uint64_t acc, uint64_t in)
{
	acc += in * P2;
	acc = rol(acc, 31);
	return acc * P1;
}

static uint64_t merge(uint64_t h, uint64_t v)
{
	h ^= round64(0, v);
	return h * P1 + P4;
}

/* The stripes [p, p + 32 n) into the four lanes. */
static void stripes(uint64_t v[4], const unsigned char *p, size_t n)
{
	uint64_t a = v[0], b = v[1], c = v[2], d = v[3];

	for (; n; n--, p += 32) {
		a = round64(a, le64(p));
		b = round64(b, le64(p + 8));
		c = round64(c, le64(p + 16));
		d = round64(d, le64(p + 24));
	}
	v[0] = a, v[1] = b, v[2] = c, v[3] = d;
}

void rc_xxh64_init(struct rc_xxh64 *s, uint64_t seed)
{
	s->v[0] = seed + P1 + P2;
	s->v[1] = seed + P2;
	s->v[2] = seed;
	s->v[3] = seed - P1;
	s->seed = seed;
	s->bytes = 0;
	s->fill = 0;
}

void rc_xxh64_update(struct rc_xxh64 *s, const void *data, size_t len)
{
	const unsigned char *p = data;

	s->bytes += len;
	if (s->fill) {
		size_t take = 32 - s->fill < len ? 32 - s->fill : len;

		memcpy(s->stripe + s->fill, p, take);
		s->fill += take, p += take, len -= take;
		if (s->fill < 32)
			return;
		stripes(s->v, s->stripe, 1);
		s->fill = 0;
	}
	stripes(s->v, p, len / 32);
	p += len - len % 32;
	len %= 32;
	memcpy(s->stripe, p, len);
	s->fill = len;
}

uint64_t rc_xxh64_value(const struct rc_xxh64 *s)
{
	const unsigned char *p = s->stripe, *end = s->stripe + s->fill;
	uint64_t h;

	if (s->bytes >= 32) {
		h = rol(s->v[0], 1) + rol(s->v[1], 7) + rol(s->v[2], 12) + rol(s->v[3], 18);
		for (int i = 0; i < 4; i++)
			h = merge(h, s->v[i]);
	} else {
		h = s->seed + P5;
	}
	h += s->bytes;
	for (; end - p >= 8; p += 8) {
		h ^= round64(0, le64(p));
		h = rol(h, 27) * P1 + P4;
	}
	if (end - p >= 4) {
		h ^= (uint64_t)le32(p) * P1;
		h = rol(h, 23) * P2 + P3;
		p += 4;
	}
	for (; p < end; p++) {
		h ^= *p * P5;
		h = rol(h, 11) * P1;
	}
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	h ^= h >> 32;
	return h;
}

void rc_xxh64_final(const struct rc_xxh64 *s, unsigned char out[RC_XXH64_LEN])
{
	uint64_t h = rc_xxh64_value(s);

	for (int i = 0; i < RC_XXH64_LEN; i++)
		out[i] = (unsigned char)(h >> (56 - 8 * i));
}
