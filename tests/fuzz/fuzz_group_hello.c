// SPDX-License-Identifier: MIT
/*
 * The group's connect request (libcore/group/hello.c, compiled in), as any
 * host may send it to a rank's listener. The first byte picks the rank that
 * checks it and whether its group has a token, the rest is the private
 * data. Nothing crashes; a request is admitted only when it names this
 * world, a rank below this one that it expects and is not connected, and,
 * with a token, carries the proof for this rank, made within the window of
 * the rank's clock and seen once only; the same request proven
 * with the right token passes the token check, and proven with a token
 * that extends it or a prefix of it fails it.
 */
#include <string.h>

#include "../../libcore/group/hello.c"

#include "fuzz.h"

#define WORLD 8
#define NOW 1796000000u

static bool refused_for_token(const char *why)
{
	return why && (strstr(why, "not authorised") || strstr(why, "no group token"));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *tokens[] = { NULL, "s3cret" };
	uint8_t need[WORLD * WORLD];
	bool taken[WORLD] = { 0 };
	struct gseen seen = { 0 };
	struct ghello h, r;
	const char *token, *why;
	int me;

	if (size < 1)
		return 0;
	me = data[0] % WORLD;
	token = tokens[(data[0] >> 3) & 1];
	for (int i = 0; i < WORLD * WORLD; i++)
		need[i] = (uint8_t)((i * 7 + data[0]) % 3 != 0);
	taken[(data[0] >> 4) % WORLD] = (data[0] & 0x80) != 0;
	why = group_hello_check(data + 1, size - 1, me, WORLD, token, need, taken, NOW, &seen, &h);
	if (!why) {
		FUZZ_CHECK(h.magic == GROUP_MAGIC && h.world == WORLD && h.rank < (uint32_t)me);
		FUZZ_CHECK(need[h.rank * WORLD + (uint32_t)me] && !taken[h.rank]);
		/* its rank's place goes to a later try only */
		FUZZ_CHECK(!group_hello_order(&h, 0));
		FUZZ_CHECK(!h.attempt || group_hello_order(&h, h.attempt));
		FUZZ_CHECK(h.attempt < 2 || !group_hello_order(&h, h.attempt - 1));
		if (token) {
			uint8_t want[GHELLO_PROOF];

			FUZZ_CHECK(size - 1 >= sizeof(struct ghello));
			group_proof(token, &h, (uint32_t)me, want);
			FUZZ_CHECK(memcmp(want, h.proof, GHELLO_PROOF) == 0);
			/* made within the window, and now seen: the same again is a replay */
			FUZZ_CHECK(seen.len == 1);
			r = h;
			FUZZ_CHECK(group_hello_check(&r, sizeof(r), me, WORLD, token, need, taken,
						     NOW, &seen, &h) != NULL);
		}
	} else {
		FUZZ_CHECK(!strncmp(why, "rdmactl: ", 9) && strlen(why) < 64);
	}
	group_seen_free(&seen);
	if (h.magic != GROUP_MAGIC)
		return 0;
	/* The same request, proven: the right token passes the token check. */
	r = h;
	group_proof("s3cret", &r, (uint32_t)me, r.proof);
	why = group_hello_check(&r, sizeof(r), me, WORLD, "s3cret", need, taken, NOW, NULL, &h);
	FUZZ_CHECK(!refused_for_token(why));
	/* A token that extends the right one, or a prefix of it, does not. */
	group_proof("s3cretX", &r, (uint32_t)me, r.proof);
	why = group_hello_check(&r, sizeof(r), me, WORLD, "s3cret", need, taken, NOW, NULL, &h);
	FUZZ_CHECK(refused_for_token(why));
	group_proof("s3cre", &r, (uint32_t)me, r.proof);
	why = group_hello_check(&r, sizeof(r), me, WORLD, "s3cret", need, taken, NOW, NULL, &h);
	FUZZ_CHECK(refused_for_token(why));
	return 0;
}
