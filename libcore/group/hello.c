// SPDX-License-Identifier: MIT
/*
 * The group's connect request: who connects, and, in a group with a token,
 * the proof that it holds the token. The token itself never travels: the
 * request carries a fresh nonce and the HMAC-SHA256 under the token of the
 * nonce and both ranks, so a proof made for one rank does not admit its
 * sender to another, and an extended or shortened token proves nothing.
 * Checked before a queue pair exists; nothing of the group (its ring
 * addresses, its keys) leaves a rank before the check passed.
 */
#include <endian.h>
#include <stddef.h>
#include <string.h>

#include <rdmactl/parse.h>
#include <rdmactl/parse_core.h>

#include "group_int.h"

void group_proof(const char *token, const struct ghello *h, uint32_t to, uint8_t proof[GHELLO_PROOF])
{
	unsigned char msg[16 + GHELLO_NONCE];
	uint32_t w[4] = { htole32(h->magic), htole32(h->rank), htole32(h->world), htole32(to) };

	memcpy(msg, w, sizeof(w));
	memcpy(msg + sizeof(w), h->nonce, GHELLO_NONCE);
	rc_token_proof(token, GHELLO_LABEL, msg, sizeof(msg), proof, GHELLO_PROOF);
}

/* The reasons of a refusal, the reject's private data (at most 63 bytes). */
#define WHY_NOT_MEMBER "rdmactl: not a group member"
#define WHY_NO_TOKEN "rdmactl: not authorised (this group needs a token)"
#define WHY_HAS_NONE "rdmactl: this rank has no group token, the connecting one has"
#define WHY_WRONG_TOKEN "rdmactl: not authorised (a wrong group token)"
#define WHY_WORLD "rdmactl: another world size"
#define WHY_UNEXPECTED "rdmactl: this rank does not expect that one"
#define WHY_TAKEN "rdmactl: that rank is connected already"

const char *group_hello_check(const void *pd, size_t len, int me, int world, const char *token,
			      const uint8_t *need, const bool *taken, struct ghello *h)
{
	static const uint8_t zero[GHELLO_PROOF];
	uint8_t want[GHELLO_PROOF];
	bool has_token = token && *token;

	memset(h, 0, sizeof(*h));
	if (pd && len >= offsetof(struct ghello, nonce))
		memcpy(h, pd, len < sizeof(*h) ? len : sizeof(*h));
	if (h->magic != GROUP_MAGIC)
		return WHY_NOT_MEMBER;
	/* A peer of a group without a token sends a short hello or zeros. */
	if (len < sizeof(*h) || rc_bytes_equal(h->proof, zero, GHELLO_PROOF)) {
		if (has_token)
			return WHY_NO_TOKEN;
	} else {
		if (!has_token)
			return WHY_HAS_NONE;
		group_proof(token, h, (uint32_t)me, want);
		if (!rc_bytes_equal(want, h->proof, GHELLO_PROOF))
			return WHY_WRONG_TOKEN;
	}
	if (h->world != (uint32_t)world)
		return WHY_WORLD;
	if (h->rank >= (uint32_t)me || !need || !need[h->rank * (uint32_t)world + (uint32_t)me])
		return WHY_UNEXPECTED;
	if (taken && taken[h->rank])
		return WHY_TAKEN;
	return NULL;
}

bool group_refusal_final(const char *msg)
{
	/* What group_hello_check says of a request another try cannot mend:
	 * all but WHY_TAKEN. */
	static const char *const final[] = { WHY_NOT_MEMBER,  WHY_NO_TOKEN, WHY_HAS_NONE,
					     WHY_WRONG_TOKEN, WHY_WORLD,    WHY_UNEXPECTED };

	for (size_t i = 0; msg && i < sizeof(final) / sizeof(final[0]); i++)
		if (strstr(msg, final[i]))
			return true;
	return false;
}
