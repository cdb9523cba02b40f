// SPDX-License-Identifier: MIT
/*
 * The group's connect plane (libcore/group/hello.c, compiled in), as any
 * host may speak it to a rank. The first byte picks the rank that checks
 * (and whether its group has a token) and what the rest is: a connect
 * request (bit 6 clear) or, with bit 6 set, the accepting rank's answer and
 * the connecting rank's first message, back to back. Nothing crashes; a
 * request is admitted only when it is protocol 3's, says the token's
 * presence as the rank's group has it, names this world and a rank below
 * this one that it expects and that is not in; an answer or a first
 * message passes only when it is the very proof made under the right token
 * for this exchange, and the same bytes fail under a token that extends the
 * right one or a prefix of it, and for any other nonce.
 */
#include <string.h>

#include "../../libcore/group/hello.c"

#include "fuzz.h"

#define WORLD 8

static const struct rc_endpoint eps[WORLD];

static void request(const uint8_t *data, size_t size, int me, const char *token)
{
	uint8_t need[WORLD * WORLD];
	bool proven[WORLD] = { 0 };
	struct ghello h;
	const char *why;

	for (int i = 0; i < WORLD * WORLD; i++)
		need[i] = (uint8_t)((i * 7 + me) % 3 != 0);
	proven[(me + 3) % WORLD] = (size & 1) != 0;
	why = group_hello_check(data, size, me, WORLD, token, need, proven, &h);
	if (!why) {
		FUZZ_CHECK(h.magic == GHELLO_MAGIC && h.world == WORLD && h.rank < (uint32_t)me);
		FUZZ_CHECK(size >= sizeof(struct ghello));
		FUZZ_CHECK(need[h.rank * WORLD + (uint32_t)me] && !proven[h.rank]);
		FUZZ_CHECK(!(h.flags & GHELLO_TOKEN) == !token);
	} else {
		FUZZ_CHECK(!strncmp(why, "rdmactl: ", 9) && strlen(why) < 64);
	}
}

static void answer_and_proof(const uint8_t *data, size_t size, int me, const char *token)
{
	size_t hdr = offsetof(struct gmsg, data), alen = sizeof(struct gaccept);
	struct gjob job = { "file", eps };
	struct rc_auth a, b;
	const char *why;

	group_auth(&a, &job, (uint32_t)(me + 1) % WORLD, (uint32_t)me, WORLD, 0x11, 0x22);
	memset(a.cn, 0x5a, RC_AUTH_NONCE);
	b = a;
	why = group_accept_check(data, size < alen ? size : alen, token, &b);
	if (!why && token) {
		struct gaccept ga;

		memcpy(&ga, data, alen);
		FUZZ_CHECK(rc_auth_check(token, &b, RC_AUTH_SERVER, ga.proof));
		FUZZ_CHECK(group_accept_check(data, alen, "s3cretX", &b) != NULL);
		b.cn[0] ^= 1;
		FUZZ_CHECK(group_accept_check(data, alen, token, &b) != NULL);
	}
	if (size <= alen)
		return;
	data += alen;
	size -= alen;
	memset(a.sn, 0xa5, RC_AUTH_NONCE);
	why = group_proof_check(data, size, (uint32_t)(me + 1) % WORLD, token, &a);
	if (!why) {
		FUZZ_CHECK(size == hdr + RC_AUTH_MAC);
		if (token) {
			FUZZ_CHECK(group_proof_check(data, size, (uint32_t)(me + 1) % WORLD,
						     "s3cre", &a) != NULL);
			a.sn[0] ^= 1;
			FUZZ_CHECK(group_proof_check(data, size, (uint32_t)(me + 1) % WORLD, token,
						     &a) != NULL);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *tokens[] = { NULL, "s3cret" };
	const char *token;
	int me;

	if (size < 1)
		return 0;
	me = data[0] % WORLD;
	token = tokens[(data[0] >> 3) & 1];
	if (data[0] & 0x40)
		answer_and_proof(data + 1, size - 1, me, token);
	else
		request(data + 1, size - 1, me, token);
	return 0;
}
