// SPDX-License-Identifier: MIT
/* SHA-256 against the FIPS 180-4 examples and sha256sum, fed whole and in
 * uneven pieces (the migration hashes a block list piece by piece). */
#include <string.h>

#include <rdmactl/sha256.h>
#include <rdmactl/sha256_core.h>

#include "check.h"

/* Its static functions too: the CPU's SHA extensions against the portable
 * code, block for block. */
#include "../../libcore/base/sha256.c"

static void digest(const void *p, size_t len, size_t piece, char hex[65])
{
	unsigned char d[RC_SHA256_LEN];
	struct rc_sha256 s;

	rc_sha256_init(&s);
	for (size_t off = 0; off < len; off += piece)
		rc_sha256_update(&s, (const char *)p + off, len - off < piece ? len - off : piece);
	rc_sha256_final(&s, d);
	rc_sha256_hex(d, hex);
}

/* The two block functions on the same chained state, over 4096 blocks of
 * xorshift bytes, 1 to 8 blocks a call: the same state after every call. */
static void shani_matches_portable(void)
{
#ifdef HAVE_SHANI
	static unsigned char buf[64 * 4096];
	uint32_t a[8], b[8];
	uint64_t x = 88172645463325252ULL;
	size_t off = 0, n;

	if (!cpu_has_shani()) {
		printf("# this CPU has no SHA extensions: the portable code only\n");
		return;
	}
	for (size_t i = 0; i < sizeof(buf); i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		buf[i] = (unsigned char)x;
	}
	for (int i = 0; i < 8; i++)
		a[i] = b[i] = 0x9e3779b9u * (uint32_t)(i + 1);
	for (n = 1; off + 64 * n <= sizeof(buf); off += 64 * n, n = n % 8 + 1) {
		blocks_portable(a, buf + off, n);
		blocks_shani(b, buf + off, n);
		if (memcmp(a, b, sizeof(a)))
			break;
	}
	CHECK(off + 64 * n > sizeof(buf)); /* no call told them apart */
	/* and a wrong state is told apart */
	b[3] ^= 1;
	CHECK(memcmp(a, b, sizeof(a)) != 0);
#else
	printf("# not x86-64: the portable code only\n");
#endif
}

int main(void)
{
	shani_matches_portable();
	static char big[1000000];
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	char hex[65];

	digest("", 0, 1, hex);
	CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	digest("abc", 3, 3, hex);
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	for (size_t piece = 1; piece <= 64; piece += 7) {
		digest(two, strlen(two), piece, hex);
		CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	}
	memset(big, 'a', sizeof(big));
	digest(big, sizeof(big), 4093, hex);
	CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	/* HMAC-SHA256: RFC 4231 test cases 2 and 6 (a key longer than a block). */
	{
		unsigned char mac[RC_SHA256_LEN], key[131];
		const char *big_msg = "Test Using Larger Than Block-Size Key - Hash Key First";

		rc_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, mac);
		rc_sha256_hex(mac, hex);
		CHECK_STR(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
		memset(key, 0xaa, sizeof(key));
		rc_hmac_sha256(key, sizeof(key), big_msg, strlen(big_msg), mac);
		rc_sha256_hex(mac, hex);
		CHECK_STR(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
	}
	CHECK_DONE();
}
