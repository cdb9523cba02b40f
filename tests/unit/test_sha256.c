// SPDX-License-Identifier: MIT
/* SHA-256 against the FIPS 180-4 examples and sha256sum, fed whole and in
 * uneven pieces (the migration hashes a block list piece by piece). */
#include <string.h>

#include <rdmactl/sha256.h>

#include "check.h"

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

int main(void)
{
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
