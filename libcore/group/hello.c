// SPDX-License-Identifier: MIT
/*
 * The group's connect request: who connects, and, in a group with a token,
 * the proof that it holds the token. The token itself never travels: the
 * request carries a nonce fresh for each try (the time, then random bytes)
 * and the HMAC-SHA256 under the token of the nonce and both ranks, so a
 * proof made for one rank does not admit its sender to another, and an
 * extended or shortened token proves nothing. A request made more than
 * GHELLO_WINDOW_S from the rank's clock, or whose nonce the rank saw
 * before, is refused: one copied off the wire admits no one.
 * Checked before a queue pair exists; nothing of the group (its ring
 * addresses, its keys) leaves a rank before the check passed.
 */
#include <endian.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/parse.h>
#include <rdmactl/parse_core.h>

#include "group_int.h"

void group_proof(const char *token, const struct ghello *h, uint32_t to, uint8_t proof[GHELLO_PROOF])
{
	uint32_t w[5] = { htole32(h->magic), htole32(h->rank), htole32(h->world), htole32(to),
			  htole32(h->attempt) };
	unsigned char msg[sizeof(w) + GHELLO_NONCE];

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
#define WHY_STALE "rdmactl: a stale connect request (clocks apart?)"
#define WHY_REPLAY "rdmactl: a replayed connect request"
#define WHY_NOMEM "rdmactl: out of memory"
#define WHY_OLDER "rdmactl: a later try of that rank is held"

int group_nonce(uint8_t nonce[GHELLO_NONCE], uint64_t now)
{
	uint32_t t = htole32((uint32_t)now);

	memcpy(nonce, &t, sizeof(t));
	return rc_random_bytes(nonce + sizeof(t), GHELLO_NONCE - sizeof(t));
}

void group_seen_free(struct gseen *s)
{
	free(s->n);
	memset(s, 0, sizeof(*s));
}

/* Where nonce is in s, or goes: *found says which. */
static size_t seen_find(const struct gseen *s, const uint8_t *nonce, bool *found)
{
	size_t lo = 0, hi = s->len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = memcmp(s->n[mid], nonce, GHELLO_NONCE);

		if (!c) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

/* A proof that held, made within the window and never seen: its nonce
 * joins seen. NULL, or why not. */
static const char *fresh(const struct ghello *h, uint64_t now, struct gseen *seen)
{
	uint32_t t;
	int64_t age;
	bool found;
	size_t at;

	memcpy(&t, h->nonce, sizeof(t));
	age = (int64_t)now - (int64_t)le32toh(t);
	if (age > GHELLO_WINDOW_S || age < -GHELLO_WINDOW_S)
		return WHY_STALE;
	if (!seen)
		return NULL;
	at = seen_find(seen, h->nonce, &found);
	if (found)
		return WHY_REPLAY;
	if (seen->len == seen->cap) {
		size_t cap = seen->cap ? 2 * seen->cap : 64;
		void *n = realloc(seen->n, cap * GHELLO_NONCE);

		if (!n)
			return WHY_NOMEM;
		seen->n = n;
		seen->cap = cap;
	}
	memmove(seen->n[at + 1], seen->n[at], (seen->len - at) * GHELLO_NONCE);
	memcpy(seen->n[at], h->nonce, GHELLO_NONCE);
	seen->len++;
	return NULL;
}

const char *group_hello_check(const void *pd, size_t len, int me, int world, const char *token,
			      const uint8_t *need, const bool *taken, uint64_t now,
			      struct gseen *seen, struct ghello *h)
{
	static const uint8_t zero[GHELLO_PROOF];
	uint8_t want[GHELLO_PROOF];
	const char *why;
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
		if ((why = fresh(h, now, seen)))
			return why;
	}
	if (h->world != (uint32_t)world)
		return WHY_WORLD;
	if (h->rank >= (uint32_t)me || !need || !need[h->rank * (uint32_t)world + (uint32_t)me])
		return WHY_UNEXPECTED;
	if (taken && taken[h->rank])
		return WHY_TAKEN;
	return NULL;
}

const char *group_hello_order(const struct ghello *h, uint32_t held)
{
	return held && h->attempt <= held ? WHY_OLDER : NULL;
}

bool group_refusal_final(const char *msg)
{
	/* What group_hello_check says of a request another try cannot mend:
	 * all but WHY_TAKEN (and WHY_OLDER, which only a try already given up
	 * gets). */
	static const char *const final[] = { WHY_NOT_MEMBER,  WHY_NO_TOKEN, WHY_HAS_NONE,
					     WHY_WRONG_TOKEN, WHY_WORLD,    WHY_UNEXPECTED,
					     WHY_STALE,       WHY_REPLAY };

	for (size_t i = 0; msg && i < sizeof(final) / sizeof(final[0]); i++)
		if (strstr(msg, final[i]))
			return true;
	return false;
}
