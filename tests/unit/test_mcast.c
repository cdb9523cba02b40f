// SPDX-License-Identifier: MIT
/* Multicast without a device: the relay tree of each algorithm, the digests'
 * names and hex (the hashes have their own tests, test_sha256, test_xxh64). */
#include <rdmactl/mcast.h>
#include <rdmactl/mcast_core.h>

#include "check.h"

static void test_shape(void)
{
	struct rc_mcast_shape flat = { RC_MCAST_FLAT, 8, 0, 0 },
			      chain = { RC_MCAST_CHAIN, 8, 3, 0 },
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

/* The digest as the report prints it: 16 hex digits of XXH64, 64 of SHA-256,
 * most significant byte first; an unknown one has no length. */
/* --chunk auto: 16 chunks a blob and 8 more a hop below the first, a power
 * of two from 256K to 2M. */
static void test_auto_chunk(void)
{
	struct rc_mcast_shape one = { RC_MCAST_TREE, 2, 0, 2 }, flat = { RC_MCAST_FLAT, 8, 0, 0 },
			      chain = { RC_MCAST_CHAIN, 8, 0, 0 },
			      tree = { RC_MCAST_TREE, 8, 0, 2 };

	CHECK_EQ_U64(rc_mcast_auto_chunk(&one, 16u << 20), 1u << 20);
	CHECK_EQ_U64(rc_mcast_auto_chunk(&one, (16u << 20) - 1), 512u << 10);
	CHECK_EQ_U64(rc_mcast_auto_chunk(&flat, 16u << 20), 1u << 20);
	/* depth 7: 64 pieces; depth 3: 32 */
	CHECK_EQ_U64(rc_mcast_auto_chunk(&chain, 16u << 20), 256u << 10);
	CHECK_EQ_U64(rc_mcast_auto_chunk(&tree, 16u << 20), 512u << 10);
	/* the bounds: a small or empty blob, a large one */
	CHECK_EQ_U64(rc_mcast_auto_chunk(&one, 0), RC_MCAST_CHUNK_MIN);
	CHECK_EQ_U64(rc_mcast_auto_chunk(&one, 1000), RC_MCAST_CHUNK_MIN);
	CHECK_EQ_U64(rc_mcast_auto_chunk(&chain, 64ull << 30), RC_MCAST_CHUNK_MAX);
}

static void test_digest_names(void)
{
	uint8_t d[RC_MCAST_DIGEST_MAX];
	char hex[2 * RC_MCAST_DIGEST_MAX + 1];

	for (int i = 0; i < RC_MCAST_DIGEST_MAX; i++)
		d[i] = (uint8_t)(0xa0 + i);
	CHECK_STR(rc_mcast_digest_name(RC_MCAST_DIGEST_XXH64), "xxh64");
	CHECK_STR(rc_mcast_digest_name(RC_MCAST_DIGEST_SHA256), "sha256");
	CHECK_EQ_U64(rc_mcast_digest_len(RC_MCAST_DIGEST_XXH64), 8);
	CHECK_EQ_U64(rc_mcast_digest_len(RC_MCAST_DIGEST_SHA256), 32);
	CHECK(rc_mcast_digest_len((enum rc_mcast_digest)7) < 0);
	rc_mcast_digest_hex(RC_MCAST_DIGEST_XXH64, d, hex);
	CHECK_STR(hex, "a0a1a2a3a4a5a6a7");
	rc_mcast_digest_hex(RC_MCAST_DIGEST_SHA256, d, hex);
	CHECK_EQ_U64(strlen(hex), 64);
	CHECK(!strncmp(hex, "a0a1a2a3a4a5a6a7a8", 18) && !strcmp(hex + 60, "bebf"));
}

int main(void)
{
	test_shape();
	test_auto_chunk();
	test_digest_names();
	CHECK_DONE();
}
