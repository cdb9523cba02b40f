// SPDX-License-Identifier: MIT
/* The group's connect plane (libcore/group/hello.c, compiled in): the
 * request carries no proof, only who connects, its world, whether it holds
 * a token and a fresh nonce; the token's holders are told apart by the
 * answer (the accepting rank's proof) and the first message (the connecting
 * rank's), each bound to both nonces, the job, both ranks, the world and
 * both queue pairs: a copy of either proves nothing on another connection,
 * for another rank, in another job, or under a token that extends the
 * right one or is a prefix of it. A request of protocol 2 is refused by
 * name. */
#include <string.h>

#include "../../libcore/group/hello.c"

#include "check.h"

#define W 3

static const struct rc_endpoint eps[W] = {
	{ "198.18.0.1", "23000", "a" },
	{ "198.18.0.1", "23001", "a" },
	{ "198.18.0.2", "23002", "b" },
};

static struct ghello hello(uint32_t rank, bool token)
{
	struct ghello h = { .magic = htole32(GHELLO_MAGIC),
			    .rank = htole32(rank),
			    .world = htole32(W),
			    .flags = htole32(token ? GHELLO_TOKEN : 0) };

	memset(h.cn, 0x5a, sizeof(h.cn));
	h.cn[0] = (uint8_t)rank;
	return h;
}

static const char *check(const struct ghello *h, size_t len, int me, const char *token,
			 const bool *proven)
{
	uint8_t need[W * W];
	struct ghello out;

	memset(need, 1, sizeof(need));
	return group_hello_check(h, len, me, W, token, need, proven, &out);
}

/* The exchange of rank 0 connecting to rank 2 in job, on QPs 0x11 and 0x22,
 * with nonces cn (0x5a...) and sn (0xa5...). */
static void exchange(struct rc_auth *a, const char *job, uint32_t from, uint32_t to)
{
	struct gjob j = { job, eps };

	group_auth(a, &j, from, to, W, 0x11, 0x22);
	memset(a->cn, 0x5a, RC_AUTH_NONCE);
	memset(a->sn, 0xa5, RC_AUTH_NONCE);
}

/* The request: who, and the token's presence, checked before anything. */
static void request_checks(void)
{
	struct ghello h = hello(0, true), x;
	bool proven[W] = { 0 };
	uint32_t v2[3] = { htole32(GROUP_MAGIC), 0, htole32(W) };
	const char *why;

	CHECK(check(&h, sizeof(h), 2, "s3cret", NULL) == NULL);
	/* Protocol 2's request (its replayable proof) is refused by name. */
	why = check((const struct ghello *)v2, sizeof(v2), 2, "s3cret", NULL);
	CHECK(why && strstr(why, "protocol 2"));
	CHECK(group_refusal_final(why));
	/* No token against a token, and the other way round. */
	x = hello(0, false);
	why = check(&x, sizeof(x), 2, "s3cret", NULL);
	CHECK(why && strstr(why, "needs a token"));
	CHECK(group_refusal_final(why));
	CHECK(check(&x, sizeof(x), 2, NULL, NULL) == NULL);
	CHECK(check(&x, sizeof(x), 2, "", NULL) == NULL);
	why = check(&h, sizeof(h), 2, NULL, NULL);
	CHECK(why && strstr(why, "no group token"));
	CHECK(group_refusal_final(why));
	/* The token first: a peer without it learns nothing of the world size
	 * nor of which ranks are in. */
	x = hello(0, false);
	x.world = htole32(7);
	proven[0] = true;
	why = check(&x, sizeof(x), 2, "s3cret", proven);
	CHECK(why && strstr(why, "needs a token"));
	/* A rank in already (a later try may come when it leaves: not final),
	 * another world, a rank not below this one. */
	why = check(&h, sizeof(h), 2, "s3cret", proven);
	CHECK(why && strstr(why, "connected already"));
	CHECK(!group_refusal_final(why));
	x = h;
	x.world = htole32(4);
	why = check(&x, sizeof(x), 2, "s3cret", NULL);
	CHECK(why && strstr(why, "another world size"));
	x = hello(2, true);
	why = check(&x, sizeof(x), 1, "s3cret", NULL);
	CHECK(why && strstr(why, "does not expect"));
	CHECK(group_refusal_final(why));
	/* Not a member: other magic, short or no private data. */
	x = h;
	x.magic = 0;
	CHECK(check(&x, sizeof(x), 2, "s3cret", NULL) != NULL);
	CHECK(check(&h, sizeof(h) - 1, 2, NULL, NULL) != NULL);
	why = group_hello_check(NULL, 0, 2, W, NULL, NULL, NULL, &x);
	CHECK(why && group_refusal_final(why));
	/* as the connector words it */
	CHECK(group_refusal_final(
		"connection to 10.0.0.2:7000 rejected: rdmactl: another world size"));
	CHECK(!group_refusal_final("connection to 10.0.0.2:7000 rejected: port unreachable"));
}

/* The accepting rank's answer, as the connecting rank checks it. */
static void answer_checks(void)
{
	struct rc_auth a, b;
	struct gaccept ga, x;
	const char *why;

	exchange(&a, "file", 0, 2);
	group_accept_fill(&ga, "s3cret", &a);
	b = a;
	memset(b.sn, 0, RC_AUTH_NONCE); /* the connecting side learns sn from the answer */
	CHECK(group_accept_check(&ga, sizeof(ga), "s3cret", &b) == NULL);
	CHECK(!memcmp(b.sn, a.sn, RC_AUTH_NONCE));
	/* Under a token that extends the right one, or a prefix of it. */
	why = group_accept_check(&ga, sizeof(ga), "s3cretX", &b);
	CHECK(why && strstr(why, "did not prove the group token"));
	why = group_accept_check(&ga, sizeof(ga), "s3cre", &b);
	CHECK(why && strstr(why, "did not prove the group token"));
	/* An answer to another request (cn), or made for another connection
	 * (rank, world, job, queue pair): none proves. */
	b.cn[3] ^= 1;
	CHECK(group_accept_check(&ga, sizeof(ga), "s3cret", &b) != NULL);
	exchange(&b, "file", 1, 2);
	CHECK(group_accept_check(&ga, sizeof(ga), "s3cret", &b) != NULL);
	exchange(&b, "etcd/job-2", 0, 2);
	CHECK(group_accept_check(&ga, sizeof(ga), "s3cret", &b) != NULL);
	{
		struct gjob j = { "file", eps };

		group_auth(&b, &j, 0, 2, W, 0x11, 0x23);
		memset(b.cn, 0x5a, RC_AUTH_NONCE);
		CHECK(group_accept_check(&ga, sizeof(ga), "s3cret", &b) != NULL);
		group_auth(&b, &j, 0, 2, W + 1, 0x11, 0x22);
		memset(b.cn, 0x5a, RC_AUTH_NONCE);
		CHECK(group_accept_check(&ga, sizeof(ga), "s3cret", &b) != NULL);
	}
	/* Another endpoint for the accepting rank: another job. */
	{
		struct rc_endpoint moved[W];
		struct gjob j = { "file", moved };

		memcpy(moved, eps, sizeof(moved));
		snprintf(moved[2].port, sizeof(moved[2].port), "23009");
		group_auth(&b, &j, 0, 2, W, 0x11, 0x22);
		memset(b.cn, 0x5a, RC_AUTH_NONCE);
		CHECK(group_accept_check(&ga, sizeof(ga), "s3cret", &b) != NULL);
	}
	/* One flipped bit of the proof, its first byte and its last. */
	exchange(&b, "file", 0, 2);
	x = ga;
	x.proof[0] ^= 1;
	CHECK(group_accept_check(&x, sizeof(x), "s3cret", &b) != NULL);
	x = ga;
	x.proof[RC_AUTH_MAC - 1] ^= 0x80;
	CHECK(group_accept_check(&x, sizeof(x), "s3cret", &b) != NULL);
	/* A rank without the token answers zeros: refused by name; a rank with
	 * one, by a connecting rank without. */
	group_accept_fill(&x, NULL, &a);
	why = group_accept_check(&x, sizeof(x), "s3cret", &b);
	CHECK(why && strstr(why, "it has none"));
	CHECK(group_accept_check(&x, sizeof(x), NULL, &b) == NULL);
	why = group_accept_check(&ga, sizeof(ga), NULL, &b);
	CHECK(why && strstr(why, "this rank has none"));
	/* No answer, a short one, another magic (an older rdmactl). */
	why = group_accept_check(NULL, 0, "s3cret", &b);
	CHECK(why && strstr(why, "older"));
	CHECK(group_accept_check(&ga, sizeof(ga) - 1, "s3cret", &b) != NULL);
	x = ga;
	x.magic = htole32(GROUP_MAGIC);
	CHECK(group_accept_check(&x, sizeof(x), "s3cret", &b) != NULL);
}

/* The connecting rank's first message, as the accepting rank checks it. */
static void proof_checks(void)
{
	size_t len = offsetof(struct gmsg, data) + RC_AUTH_MAC;
	struct rc_auth a, b;
	struct gmsg m, x;
	const char *why;

	exchange(&a, "file", 0, 2);
	group_proof_msg(&m, 0, "s3cret", &a);
	CHECK(group_proof_check(&m, len, 0, "s3cret", &a) == NULL);
	/* the accepting rank's own proof is not the connecting rank's */
	x = m;
	rc_auth_mac("s3cret", &a, RC_AUTH_SERVER, x.data);
	CHECK(group_proof_check(&x, len, 0, "s3cret", &a) != NULL);
	/* Another token, another sn (a replay on another connection), another
	 * rank claimed: refused. */
	why = group_proof_check(&m, len, 0, "s3cretX", &a);
	CHECK(why && strstr(why, "did not prove"));
	CHECK(group_proof_check(&m, len, 0, "s3cre", &a) != NULL);
	b = a;
	b.sn[15] ^= 1;
	CHECK(group_proof_check(&m, len, 0, "s3cret", &b) != NULL);
	CHECK(group_proof_check(&m, len, 1, "s3cret", &a) != NULL);
	/* Not a proof: zeros, another kind, length or sequence. */
	group_proof_msg(&x, 0, NULL, &a);
	CHECK(group_proof_check(&x, len, 0, "s3cret", &a) != NULL);
	CHECK(group_proof_check(&x, len, 0, NULL, &a) == NULL);
	x = m;
	x.magic = GROUP_MAGIC;
	why = group_proof_check(&x, len, 0, "s3cret", &a);
	CHECK(why && strstr(why, "no proof"));
	x = m;
	x.seq = 1;
	CHECK(group_proof_check(&x, len, 0, "s3cret", &a) != NULL);
	CHECK(group_proof_check(&m, len - 1, 0, "s3cret", &a) != NULL);
	CHECK(group_proof_check(&m, len + 1, 0, "s3cret", &a) != NULL);
	CHECK(group_proof_check(NULL, 0, 0, "s3cret", &a) != NULL);
}

int main(void)
{
	request_checks();
	answer_checks();
	proof_checks();
	return check_failures ? 1 : 0;
}
