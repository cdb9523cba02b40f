/* SPDX-License-Identifier: MIT */
/* Mutual challenge-response under a shared token, for every control plane
 * (the region server, kvxfer, the group's connections). Inside face only.
 *
 * The exchange, on top of an rdma_cm connection:
 *   1. the connecting side sends a fresh nonce cn in its connect request;
 *   2. the accepting side answers (in its accept, or first message) with a
 *      fresh nonce sn and its proof, rc_auth_mac(token, a, RC_AUTH_SERVER);
 *      the connecting side checks it before it sends anything else, so a
 *      client never talks to a peer that does not hold the token;
 *   3. the connecting side's first message carries its proof,
 *      rc_auth_mac(token, a, RC_AUTH_CLIENT); the accepting side checks it
 *      before it allocates or reveals anything.
 * Both nonces, the plane and a context both sides know (a job, a listener,
 * a destination) are inside every MAC: a captured request or answer is
 * worth nothing in another connection, since the other side's nonce is new.
 * The token itself never crosses the wire; secrets a session needs are
 * derived from it (rc_auth_session). */
#ifndef RDMACTL_AUTH_CORE_H
#define RDMACTL_AUTH_CORE_H

#include <stdbool.h>
#include <stddef.h>

#define RC_AUTH_NONCE 16 /* bytes of each side's nonce */
#define RC_AUTH_MAC 16   /* bytes of a proof (HMAC-SHA256, truncated) */
#define RC_AUTH_KEY 32   /* bytes of a derived session secret */
#define RC_AUTH_CTX 128  /* most bytes of context bound into the MACs */

enum rc_auth_role {
	RC_AUTH_SERVER = 1, /* the accepting side's proof */
	RC_AUTH_CLIENT = 2, /* the connecting side's proof */
};

struct rc_auth {
	const char *plane; /* "region", "admin", "kvxfer", "group"... */
	unsigned char ctx[RC_AUTH_CTX];
	size_t ctxlen;
	unsigned char cn[RC_AUTH_NONCE]; /* the connecting side's nonce */
	unsigned char sn[RC_AUTH_NONCE]; /* the accepting side's nonce */
};

/* Sets a's plane and context (ctx truncated to RC_AUTH_CTX bytes; a string
 * context is passed with its length) and clears both nonces. */
void rc_auth_init(struct rc_auth *a, const char *plane, const void *ctx, size_t ctxlen);
/* A fresh nonce from the kernel's random source: 0 or -errno. */
int rc_auth_nonce(unsigned char n[RC_AUTH_NONCE]);
/* who's proof over a: the first RC_AUTH_MAC bytes of HMAC-SHA256 under
 * token of a label, the plane, who, the context and both nonces. A NULL or
 * empty token gives zeros: a side without a token proves nothing, and one
 * with a token refuses it. */
void rc_auth_mac(const char *token, const struct rc_auth *a, enum rc_auth_role who,
		 unsigned char out[RC_AUTH_MAC]);
/* Whether got is who's proof over a under token, compared in constant time.
 * With no token (NULL or empty) every proof passes: an open server. */
bool rc_auth_check(const char *token, const struct rc_auth *a, enum rc_auth_role who,
		   const unsigned char got[RC_AUTH_MAC]);
/* A secret of the session, bound to a's nonces, named by use (a label such
 * as "data-qp"): HMAC-SHA256 under token. Never sent; both sides derive it. */
void rc_auth_session(const char *token, const struct rc_auth *a, const char *use,
		     unsigned char key[RC_AUTH_KEY]);

#endif
