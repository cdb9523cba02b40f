// SPDX-License-Identifier: MIT
/* Multicast without a device: SHA-256 against the FIPS 180-4 vectors and
 * sha256sum, streamed in odd pieces; the relay tree of each algorithm. */
#include <stdlib.h>

#include <rdmactl/mcast.h>

#include "check.h"

static const char *digest(const void *data, size_t len, size_t piece)
{
	static char hex[65];
	struct rc_sha256 s;
	uint8_t d[32];

	rc_sha256_init(&s);
	for (size_t off = 0; off < len; off += piece)
		rc_sha256_update(&s, (const char *)data + off, len - off < piece ? len - off : piece);
	rc_sha256_final(&s, d);
	rc_sha256_hex(d, hex);
	return hex;
}

static void test_sha256(void)
{
	const char *abc2 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	char *million = malloc(1000000);

	CHECK_STR(digest("", 0, 1), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	CHECK_STR(digest("abc", 3, 1), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	for (size_t piece = 1; piece < 70; piece += 13)
		CHECK_STR(digest(abc2, strlen(abc2), piece),
			  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	memset(million, 'a', 1000000);
	CHECK_STR(digest(million, 1000000, 4099),
		  "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(million);
}

static void test_shape(void)
{
	struct rc_mcast_shape flat = { RC_MCAST_FLAT, 8, 0, 0 }, chain = { RC_MCAST_CHAIN, 8, 3, 0 },
			      tree = { RC_MCAST_TREE, 8, 0, 2 }, one = { RC_MCAST_TREE, 2, 1, 2 };
	uint8_t need[64];
	int kids[8];

	CHECK_EQ_U64(rc_mcast_children(&flat, 0, kids), 7);
	CHECK_EQ_U64(rc_mcast_depth(&flat), 1);
	CHECK_EQ_U64(rc_mcast_width(&flat), 7);
	CHECK_EQ_U64(rc_mcast_parent(&flat, 5), 0);
	/* a chain from root 3: 3 -> 4 -> ... -> 7 -> 0 -> 1 -> 2 */
	CHECK_EQ_U64(rc_mcast_parent(&chain, 3), (uint64_t)-1);
	CHECK_EQ_U64(rc_mcast_parent(&chain, 0), 7);
	CHECK_EQ_U64(rc_mcast_parent(&chain, 4), 3);
	CHECK_EQ_U64(rc_mcast_depth(&chain), 7);
	CHECK_EQ_U64(rc_mcast_width(&chain), 1);
	CHECK_EQ_U64(rc_mcast_children(&chain, 2, kids), 0);
	/* binary: 0 -> 1 2, 1 -> 3 4, 2 -> 5 6, 3 -> 7 */
	CHECK_EQ_U64(rc_mcast_children(&tree, 1, kids), 2);
	CHECK_EQ_U64(kids[0], 3);
	CHECK_EQ_U64(kids[1], 4);
	CHECK_EQ_U64(rc_mcast_parent(&tree, 7), 3);
	CHECK_EQ_U64(rc_mcast_depth(&tree), 3);
	CHECK_EQ_U64(rc_mcast_width(&tree), 2);
	CHECK_EQ_U64(rc_mcast_depth(&one), 1);
	CHECK_EQ_U64(rc_mcast_parent(&one, 0), 1);
	/* the tree's edges plus the root to everyone, symmetric */
	rc_mcast_need(&chain, need);
	CHECK(need[4 * 8 + 5] && need[5 * 8 + 4]);
	CHECK(need[3 * 8 + 6] && need[6 * 8 + 3]);
	CHECK(!need[4 * 8 + 6]);
	CHECK(!need[3 * 8 + 3]);
}

int main(void)
{
	test_sha256();
	test_shape();
	CHECK_DONE();
}
