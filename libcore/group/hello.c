// SPDX-License-Identifier: MIT
/*
 * The group's connect plane under a token (group_int.h): the connect
 * request, the accepting rank's answer and the connecting rank's proof, each
 * checked here, with no device touched. The token never travels; a proof is
 * a MAC over both sides' fresh nonces, the job, both ranks, the world and
 * both queue pairs (base/auth_core.h), so no copy of one proves anything on
 * another connection. A request is checked before a queue pair exists, and
 * nothing of the group (its messages, its rings, a rank's place) reaches a
 * connection before its proof held.
 */
#include <endian.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/parse.h>
#include <rdmactl/parse_core.h>
#include <rdmactl/sha256_core.h>

#include "group_int.h"

#define GROUP_PLANE "group"

/* The reasons of a refusal, the reject's private data (at most 63 bytes). */
#define WHY_NOT_MEMBER "rdmactl: not a group member"
#define WHY_OLD "rdmactl: an older rdmactl (group connect protocol 2)"
#define WHY_NO_TOKEN "rdmactl: not authorised (this group needs a token)"
#define WHY_HAS_NONE "rdmactl: this rank has no group token, the connecting one has"
#define WHY_WORLD "rdmactl: another world size"
#define WHY_UNEXPECTED "rdmactl: this rank does not expect that one"
#define WHY_TAKEN "rdmactl: that rank is connected already"

static void put_str(struct rc_sha256 *s, const char *str)
{
	rc_sha256_update(s, str, strlen(str) + 1);
}

void group_auth(struct rc_auth *a, const struct gjob *job, uint32_t from, uint32_t to,
		uint32_t world, uint32_t qp_from, uint32_t qp_to)
{
	unsigned char ctx[RC_SHA256_LEN + 5 * sizeof(uint32_t)];
	uint32_t w[5] = { htole32(from), htole32(to), htole32(world), htole32(qp_from),
			  htole32(qp_to) };
	struct rc_sha256 s;

	rc_sha256_init(&s);
	put_str(&s, job && job->job ? job->job : "");
	for (int i = 0; job && job->all && i < 2; i++) {
		const struct rc_endpoint *ep = &job->all[i ? to : from];

		put_str(&s, ep->host);
		put_str(&s, ep->port);
	}
	rc_sha256_final(&s, ctx);
	memcpy(ctx + RC_SHA256_LEN, w, sizeof(w));
	rc_auth_init(a, GROUP_PLANE, ctx, sizeof(ctx));
}

const char *group_hello_check(const void *pd, size_t len, int me, int world, const char *token,
			      const uint8_t *need, const bool *proven, struct ghello *h)
{
	bool has_token = token && *token;

	memset(h, 0, sizeof(*h));
	if (pd && len >= sizeof(h->magic))
		memcpy(h, pd, len < sizeof(*h) ? len : sizeof(*h));
	h->magic = le32toh(h->magic);
	h->rank = le32toh(h->rank);
	h->world = le32toh(h->world);
	h->flags = le32toh(h->flags);
	if (h->magic == GROUP_MAGIC)
		return WHY_OLD;
	if (h->magic != GHELLO_MAGIC || len < sizeof(*h))
		return WHY_NOT_MEMBER;
	/* The token first: a peer without it learns nothing of the group. */
	if (has_token && !(h->flags & GHELLO_TOKEN))
		return WHY_NO_TOKEN;
	if (!has_token && (h->flags & GHELLO_TOKEN))
		return WHY_HAS_NONE;
	if (h->world != (uint32_t)world)
		return WHY_WORLD;
	if (h->rank >= (uint32_t)me || !need || !need[h->rank * (uint32_t)world + (uint32_t)me])
		return WHY_UNEXPECTED;
	if (proven && proven[h->rank])
		return WHY_TAKEN;
	return NULL;
}

bool group_refusal_final(const char *msg)
{
	/* What group_hello_check says of a request another try cannot mend:
	 * all but WHY_TAKEN. */
	static const char *const final[] = { WHY_NOT_MEMBER, WHY_OLD,   WHY_NO_TOKEN,
					     WHY_HAS_NONE,   WHY_WORLD, WHY_UNEXPECTED };

	for (size_t i = 0; msg && i < sizeof(final) / sizeof(final[0]); i++)
		if (strstr(msg, final[i]))
			return true;
	return false;
}

void group_accept_fill(struct gaccept *ga, const char *token, const struct rc_auth *a)
{
	ga->magic = htole32(GHELLO_MAGIC);
	memcpy(ga->sn, a->sn, RC_AUTH_NONCE);
	rc_auth_mac(token, a, RC_AUTH_SERVER, ga->proof);
}

const char *group_accept_check(const void *data, size_t len, const char *token, struct rc_auth *a)
{
	static const unsigned char zero[RC_AUTH_MAC];
	struct gaccept ga;

	if (!data || len < sizeof(ga))
		return "sent no proof of the group token (an older rdmactl?)";
	memcpy(&ga, data, sizeof(ga));
	if (le32toh(ga.magic) != GHELLO_MAGIC)
		return "sent no proof of the group token (an older rdmactl?)";
	memcpy(a->sn, ga.sn, RC_AUTH_NONCE);
	if (!token || !*token)
		return rc_bytes_equal(ga.proof, zero, RC_AUTH_MAC)
			       ? NULL
			       : "wants a group token, and this rank has none";
	if (rc_bytes_equal(ga.proof, zero, RC_AUTH_MAC))
		return "did not prove the group token (it has none)";
	if (!rc_auth_check(token, a, RC_AUTH_SERVER, ga.proof))
		return "did not prove the group token (a wrong token?)";
	return NULL;
}

void group_proof_msg(struct gmsg *m, uint32_t from, const char *token, const struct rc_auth *a)
{
	m->magic = PROOF_MAGIC;
	m->seq = 0;
	m->from = from;
	m->len = RC_AUTH_MAC;
	rc_auth_mac(token, a, RC_AUTH_CLIENT, m->data);
}

const char *group_proof_check(const void *msg, size_t len, uint32_t from, const char *token,
			      const struct rc_auth *a)
{
	size_t hdr = offsetof(struct gmsg, data);
	struct gmsg m;

	if (!msg || len != hdr + RC_AUTH_MAC)
		return "its first message is no proof of the group token";
	memcpy(&m, msg, len);
	if (m.magic != PROOF_MAGIC || m.len != RC_AUTH_MAC || m.seq != 0 || m.from != from)
		return "its first message is no proof of the group token";
	if (!rc_auth_check(token, a, RC_AUTH_CLIENT, m.data))
		return "did not prove the group token";
	return NULL;
}
