// SPDX-License-Identifier: MIT
/* The group's connect request (libcore/group/hello.c, compiled in): a rank
 * joins only with a proof of the group's token made for the rank it
 * connects to; an extended or shortened token, a proof for another rank, a
 * replayed proof with another rank or world, and a missing proof are refused,
 * and the token is checked before anything else is said; a proof made too
 * far from the rank's clock, or one whose nonce the rank saw, is refused. */
#include <string.h>

#include "../../libcore/group/hello.c"

#include "check.h"

#define W 3
#define NOW 1796000000u /* the rank's clock in these checks */

static struct ghello hello(const char *token, uint32_t rank, uint32_t to)
{
	struct ghello h = { .magic = GROUP_MAGIC, .rank = rank, .world = W };

	uint32_t t = htole32(NOW);

	memset(h.nonce, 0x5a, sizeof(h.nonce));
	memcpy(h.nonce, &t, sizeof(t));
	h.nonce[4] = (uint8_t)rank;
	if (token)
		group_proof(token, &h, to, h.proof);
	return h;
}

static const char *check(const struct ghello *h, size_t len, int me, const char *token,
			 const bool *taken)
{
	uint8_t need[W * W];
	struct ghello out;

	memset(need, 1, sizeof(need));
	return group_hello_check(h, len, me, W, token, need, taken, NOW, NULL, &out);
}

int main(void)
{
	struct ghello h = hello("s3cret", 0, 2), x;
	bool taken[W] = { 0 };
	const char *why;

	/* The right token, for the rank it is sent to. */
	CHECK(check(&h, sizeof(h), 2, "s3cret", NULL) == NULL);
	/* A token that extends the right one, and a prefix of it. */
	x = hello("s3cretX", 0, 2);
	why = check(&x, sizeof(x), 2, "s3cret", NULL);
	CHECK(why && strstr(why, "wrong group token"));
	/* a refusal another try cannot mend: the connector stops at it */
	CHECK(group_refusal_final(why));
	x = hello("s3cre", 0, 2);
	why = check(&x, sizeof(x), 2, "s3cret", NULL);
	CHECK(why && strstr(why, "wrong group token"));
	/* ... and the other way round: the rank holds the longer one. */
	why = check(&h, sizeof(h), 2, "s3cretX", NULL);
	CHECK(why && strstr(why, "wrong group token"));
	why = check(&h, sizeof(h), 2, "s3cre", NULL);
	CHECK(why && strstr(why, "wrong group token"));
	/* A proof made for rank 2 does not admit its sender to rank 1. */
	why = check(&h, sizeof(h), 1, "s3cret", NULL);
	CHECK(why && strstr(why, "wrong group token"));
	/* Nor with another rank, world or nonce written over it. */
	x = h;
	x.rank = 1;
	why = check(&x, sizeof(x), 2, "s3cret", NULL);
	CHECK(why && strstr(why, "wrong group token"));
	x = h;
	x.nonce[3] ^= 1;
	why = check(&x, sizeof(x), 2, "s3cret", NULL);
	CHECK(why && strstr(why, "wrong group token"));
	x = h;
	x.world = 4;
	why = check(&x, sizeof(x), 2, "s3cret", NULL);
	CHECK(why && strstr(why, "wrong group token"));
	x = h;
	x.attempt = 7;
	why = check(&x, sizeof(x), 2, "s3cret", NULL);
	CHECK(why && strstr(why, "wrong group token"));
	/* One flipped bit of the proof, its first byte and its last. */
	x = h;
	x.proof[0] ^= 1;
	CHECK(check(&x, sizeof(x), 2, "s3cret", NULL) != NULL);
	x = h;
	x.proof[GHELLO_PROOF - 1] ^= 0x80;
	CHECK(check(&x, sizeof(x), 2, "s3cret", NULL) != NULL);
	/* No proof: the hello of an older rdmactl (12 bytes), or zeros. */
	x = hello(NULL, 0, 2);
	why = check(&x, 12, 2, "s3cret", NULL);
	CHECK(why && strstr(why, "needs a token"));
	why = check(&x, sizeof(x), 2, "s3cret", NULL);
	CHECK(why && strstr(why, "needs a token"));
	/* A group without a token takes both, and refuses a proof it cannot check. */
	CHECK(check(&x, 12, 2, NULL, NULL) == NULL);
	CHECK(check(&x, sizeof(x), 2, "", NULL) == NULL);
	why = check(&h, sizeof(h), 2, NULL, NULL);
	CHECK(why && strstr(why, "no group token"));
	CHECK(group_refusal_final(why));
	/* The token first: a peer without it learns nothing of the world size
	 * nor of which ranks are connected. */
	x = hello(NULL, 0, 2);
	x.world = 7;
	why = check(&x, sizeof(x), 2, "s3cret", NULL);
	CHECK(why && strstr(why, "needs a token"));
	taken[0] = true;
	why = check(&x, sizeof(x), 2, "s3cret", taken);
	CHECK(why && strstr(why, "needs a token"));
	/* With the token: a rank connected already, a rank not below this one. */
	why = check(&h, sizeof(h), 2, "s3cret", taken);
	CHECK(why && strstr(why, "connected already"));
	/* an earlier try the peer still holds: the connector tries again */
	CHECK(!group_refusal_final(why));
	x = hello("s3cret", 2, 1);
	why = check(&x, sizeof(x), 1, "s3cret", NULL);
	CHECK(why && strstr(why, "does not expect"));
	CHECK(group_refusal_final(why));
	/* Not a group member: other magic, short or no private data. */
	x = h;
	x.magic = 0;
	CHECK(check(&x, sizeof(x), 2, "s3cret", NULL) != NULL);
	CHECK(check(&h, 11, 2, NULL, NULL) != NULL);
	CHECK(group_hello_check(NULL, 0, 2, W, NULL, NULL, NULL, NOW, NULL, &x) != NULL);
	CHECK(group_refusal_final(group_hello_check(NULL, 0, 2, W, NULL, NULL, NULL, NOW, NULL, &x)));
	/* The time in the nonce: within GHELLO_WINDOW_S of the rank's clock
	 * either way, and the proof covers it. */
	x = h;
	for (int d = -1; d <= 1; d += 2) {
		uint32_t t = htole32(NOW + (uint32_t)(d * (GHELLO_WINDOW_S - 1)));

		memcpy(x.nonce, &t, sizeof(t));
		group_proof("s3cret", &x, 2, x.proof);
		CHECK(check(&x, sizeof(x), 2, "s3cret", NULL) == NULL);
		t = htole32(NOW + (uint32_t)(d * (GHELLO_WINDOW_S + 1)));
		memcpy(x.nonce, &t, sizeof(t));
		group_proof("s3cret", &x, 2, x.proof);
		why = check(&x, sizeof(x), 2, "s3cret", NULL);
		CHECK(why && strstr(why, "stale"));
		CHECK(group_refusal_final(why));
	}
	/* A request seen before is a replay, even one refused the first time
	 * (its rank was connected then); a fresh nonce joins. */
	{
		struct gseen seen = { 0 };
		struct ghello y, o;
		uint8_t need[W * W];
		bool none[W] = { 0 };
		int ok = 0, replays = 0;

		memset(need, 1, sizeof(need));
		CHECK(group_hello_check(&h, sizeof(h), 2, W, "s3cret", need, none, NOW, &seen,
					&x) == NULL);
		why = group_hello_check(&h, sizeof(h), 2, W, "s3cret", need, none, NOW, &seen, &x);
		CHECK(why && strstr(why, "replayed"));
		CHECK(group_refusal_final(why));
		y = h;
		y.nonce[5] ^= 1; /* rank 0 again, a new try: taken[0] */
		group_proof("s3cret", &y, 2, y.proof);
		why = group_hello_check(&y, sizeof(y), 2, W, "s3cret", need, taken, NOW, &seen, &o);
		CHECK(why && strstr(why, "connected already"));
		why = group_hello_check(&y, sizeof(y), 2, W, "s3cret", need, none, NOW, &seen, &o);
		CHECK(why && strstr(why, "replayed"));
		/* 500 nonces in no order: each joins once, and is a replay after. */
		for (int round = 0; round < 2; round++)
			for (uint32_t i = 0; i < 500; i++) {
				uint32_t k = (i * 7919u) % 500u;

				y = hello(NULL, 0, 2);
				memcpy(y.nonce + 8, &k, sizeof(k));
				group_proof("s3cret", &y, 2, y.proof);
				why = group_hello_check(&y, sizeof(y), 2, W, "s3cret", need, none,
							NOW, &seen, &o);
				ok += !why;
				replays += why && strstr(why, "replayed");
			}
		CHECK(ok == 500);
		CHECK(replays == 500);
		CHECK(seen.len == 502);
		group_seen_free(&seen);
	}
	/* The tries of one rank: a later try takes the place of the one held
	 * half open; an earlier or the same one, come late, is refused (not for
	 * good: only a connector that gave that try up gets it); without a try
	 * held, or from a hello without tries (0), no order. */
	x = h;
	x.attempt = 3;
	CHECK(group_hello_order(&x, 0) == NULL);
	CHECK(group_hello_order(&x, 2) == NULL);
	why = group_hello_order(&x, 3);
	CHECK(why && strstr(why, "later try"));
	CHECK(!group_refusal_final(why));
	why = group_hello_order(&x, 9);
	CHECK(why && strstr(why, "later try"));
	x.attempt = 0;
	CHECK(group_hello_order(&x, 0) == NULL);
	/* as the connector words it; nothing listening is no refusal of ours */
	CHECK(group_refusal_final(
		"connection to 10.0.0.2:7000 rejected: rdmactl: another world size"));
	CHECK(!group_refusal_final(
		"connection to 10.0.0.2:7000 refused: nothing listens on that port"));
	CHECK(!group_refusal_final(NULL));
	CHECK_DONE();
}
