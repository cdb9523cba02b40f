// SPDX-License-Identifier: MIT
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include <rdmactl/sha256.h>
#include <rdmactl/sha256_core.h>

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

/* A macro, not a function: the sanitizer build (-O1) inlines no small
 * function, and its shift checks ran on every call; with a constant N the
 * compiler checks the shift once, and emits one rotate. */
#define ror(x, n) ((uint32_t)((x) >> (n)) | (uint32_t)((x) << (32 - (n))))

static void compress(uint32_t h[8], const unsigned char *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, k;

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) +
			      K[i] + w[i];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));

		k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
	}
	h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

/* The blocks [p, p + 64 n) with the CPU's SHA extensions (x86-64: SHA-NI,
 * on Intel since Ice Lake and Goldmont, on AMD since Zen), about seven times
 * the portable code; blocks() picks it where the CPU has it. */
#if defined(__x86_64__)
#define HAVE_SHANI 1

/* Rounds 4g..4g+3 with message words cur (W[4g..4g+3]); where the schedule
 * still needs them, next gets its last step and prev its first. */
#define SHANI_ROUNDS(g, cur, next, prev, step_next, step_prev) \
	do { \
		__m128i wk_ = _mm_add_epi32(cur, _mm_loadu_si128((const __m128i *)&K[4 * (g)])); \
		s1 = _mm_sha256rnds2_epu32(s1, s0, wk_); \
		if (step_next) \
			next = _mm_sha256msg2_epu32(_mm_add_epi32(next, \
								  _mm_alignr_epi8(cur, prev, 4)), \
						    cur); \
		s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(wk_, 0x0e)); \
		if (step_prev) \
			prev = _mm_sha256msg1_epu32(prev, cur); \
	} while (0)

__attribute__((target("sha,ssse3,sse4.1"))) static void
blocks_shani(uint32_t h[8], const unsigned char *p, size_t n)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
	__m128i s0, s1, t, m0, m1, m2, m3, abef, cdgh;

	/* h[0..7] = A..H into the two halves the instructions want: ABEF, CDGH */
	t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xb1);
	s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1b);
	s0 = _mm_alignr_epi8(t, s1, 8);
	s1 = _mm_blend_epi16(s1, t, 0xf0);
	for (; n; n--, p += 64) {
		abef = s0, cdgh = s1;
		m0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 0)), bswap);
		m1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16)), bswap);
		m2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 32)), bswap);
		m3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 48)), bswap);
		SHANI_ROUNDS(0, m0, m1, m3, 0, 0);
		SHANI_ROUNDS(1, m1, m2, m0, 0, 1);
		SHANI_ROUNDS(2, m2, m3, m1, 0, 1);
		SHANI_ROUNDS(3, m3, m0, m2, 1, 1);
		SHANI_ROUNDS(4, m0, m1, m3, 1, 1);
		SHANI_ROUNDS(5, m1, m2, m0, 1, 1);
		SHANI_ROUNDS(6, m2, m3, m1, 1, 1);
		SHANI_ROUNDS(7, m3, m0, m2, 1, 1);
		SHANI_ROUNDS(8, m0, m1, m3, 1, 1);
		SHANI_ROUNDS(9, m1, m2, m0, 1, 1);
		SHANI_ROUNDS(10, m2, m3, m1, 1, 1);
		SHANI_ROUNDS(11, m3, m0, m2, 1, 1);
		SHANI_ROUNDS(12, m0, m1, m3, 1, 1);
		SHANI_ROUNDS(13, m1, m2, m0, 1, 0);
		SHANI_ROUNDS(14, m2, m3, m1, 1, 0);
		SHANI_ROUNDS(15, m3, m0, m2, 0, 0);
		s0 = _mm_add_epi32(s0, abef);
		s1 = _mm_add_epi32(s1, cdgh);
	}
	/* back from ABEF, CDGH to A..H */
	t = _mm_shuffle_epi32(s0, 0x1b);
	s1 = _mm_shuffle_epi32(s1, 0xb1);
	_mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(t, s1, 0xf0));
	_mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(s1, t, 8));
}

/* CPUID: SHA (leaf 7, EBX bit 29), SSSE3 and SSE4.1 (leaf 1, ECX 9, 19). */
static bool cpu_has_shani(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & 1u << 9) || !(c & 1u << 19))
		return false;
	return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & 1u << 29);
}
#endif

static void blocks_portable(uint32_t h[8], const unsigned char *p, size_t n)
{
	for (; n; n--, p += 64)
		compress(h, p);
}

#ifdef HAVE_SHANI
/* Whether this CPU has the extensions, asked once: CPUID traps to the
 * hypervisor in a virtual machine (22 us a call on the test host), far too
 * dear for every update. A fact of the CPU, so a race only stores it twice. */
static bool have_shani(void)
{
	static _Atomic int known; /* 0: not asked yet, 1: no, 2: yes */
	int k = atomic_load_explicit(&known, memory_order_relaxed);

	if (!k) {
		k = cpu_has_shani() ? 2 : 1;
		atomic_store_explicit(&known, k, memory_order_relaxed);
	}
	return k == 2;
}
#endif

static void blocks(uint32_t h[8], const unsigned char *p, size_t n)
{
	if (!n)
		return;
#ifdef HAVE_SHANI
	if (have_shani()) {
		blocks_shani(h, p, n);
		return;
	}
#endif
	blocks_portable(h, p, n);
}

void rc_sha256_init(struct rc_sha256 *s)
{
	static const uint32_t iv[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };

	memcpy(s->h, iv, sizeof(iv));
	s->bytes = 0;
	s->fill = 0;
}

void rc_sha256_update(struct rc_sha256 *s, const void *data, size_t len)
{
	const unsigned char *p = data;

	s->bytes += len;
	if (s->fill) {
		size_t take = 64 - s->fill < len ? 64 - s->fill : len;

		memcpy(s->block + s->fill, p, take);
		s->fill += take, p += take, len -= take;
		if (s->fill < 64)
			return;
		blocks(s->h, s->block, 1);
		s->fill = 0;
	}
	blocks(s->h, p, len / 64);
	p += len - len % 64;
	len %= 64;
	memcpy(s->block, p, len);
	s->fill = len;
}

void rc_sha256_final(struct rc_sha256 *s, unsigned char out[RC_SHA256_LEN])
{
	uint64_t bits = s->bytes * 8;

	s->block[s->fill++] = 0x80;
	if (s->fill > 56) {
		memset(s->block + s->fill, 0, 64 - s->fill);
		blocks(s->h, s->block, 1);
		s->fill = 0;
	}
	memset(s->block + s->fill, 0, 56 - s->fill);
	for (int i = 0; i < 8; i++)
		s->block[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
	blocks(s->h, s->block, 1);
	for (int i = 0; i < 8; i++)
		for (int j = 0; j < 4; j++)
			out[4 * i + j] = (unsigned char)(s->h[i] >> (24 - 8 * j));
}

void rc_sha256_hex(const unsigned char d[RC_SHA256_LEN], char hex[2 * RC_SHA256_LEN + 1])
{
	for (int i = 0; i < RC_SHA256_LEN; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

/* RFC 2104, with SHA-256's 64-byte block; a longer key is hashed first. */
void rc_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
		    unsigned char out[RC_SHA256_LEN])
{
	unsigned char k[64] = { 0 }, pad[64], inner[RC_SHA256_LEN];
	struct rc_sha256 s;

	if (klen > sizeof(k)) {
		rc_sha256_init(&s);
		rc_sha256_update(&s, key, klen);
		rc_sha256_final(&s, k);
	} else if (klen) {
		memcpy(k, key, klen);
	}
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	rc_sha256_init(&s);
	rc_sha256_update(&s, pad, sizeof(pad));
	rc_sha256_update(&s, msg, mlen);
	rc_sha256_final(&s, inner);
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	rc_sha256_init(&s);
	rc_sha256_update(&s, pad, sizeof(pad));
	rc_sha256_update(&s, inner, sizeof(inner));
	rc_sha256_final(&s, out);
}
