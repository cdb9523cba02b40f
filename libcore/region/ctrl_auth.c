// SPDX-License-Identifier: MIT
/* Protocol 2's handshake on the region control plane: the connect request's
 * HELLO, the accept's CHALLENGE, AUTH and its answer (ctrl_core.h), and
 * the PULL request's token masked under the session. */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rdmactl/ctrl_core.h>

#include "ctrl_wire.h"

/* The token field of an encoded PULL request (ctrl.c's layout). */
#define PULL_TOKEN_AT (RC_CTRL_HDR_LEN + 16 + RC_HOST_MAX + 8 + 2 * RC_NAME_MAX)

int rc_ctrl_encode_hello(void *buf, size_t cap, const struct rc_ctrl_hello *h)
{
	unsigned char *p = buf;

	if (cap < RC_HELLO_LEN)
		return -ENOSPC;
	put32(p, RC_HELLO_MAGIC);
	p[4] = (unsigned char)(h->version >> 8);
	p[5] = (unsigned char)h->version;
	p[6] = h->role;
	p[7] = h->flags;
	memcpy(p + 8, h->cn, RC_AUTH_NONCE);
	return RC_HELLO_LEN;
}

int rc_ctrl_decode_hello(const void *buf, size_t len, struct rc_ctrl_hello *h)
{
	const unsigned char *p = buf;

	memset(h, 0, sizeof(*h));
	if (!p || len < 6 || get32(p) != RC_HELLO_MAGIC)
		return -EBADMSG;
	h->version = (uint16_t)(p[4] << 8 | p[5]);
	if (h->version != RC_CTRL_PROTO)
		return -EPROTO;
	if (len < RC_HELLO_LEN || (p[6] != RC_ROLE_DATA && p[6] != RC_ROLE_ADMIN))
		return -EBADMSG;
	h->role = p[6];
	h->flags = p[7];
	memcpy(h->cn, p + 8, RC_AUTH_NONCE);
	return 0;
}

int rc_ctrl_encode_challenge(void *buf, size_t cap, const struct rc_ctrl_challenge *c)
{
	unsigned char *p = buf;

	if (cap < RC_CHALLENGE_LEN)
		return -ENOSPC;
	put32(p, RC_HELLO_MAGIC);
	p[4] = (unsigned char)(RC_CTRL_PROTO >> 8);
	p[5] = (unsigned char)RC_CTRL_PROTO;
	p[6] = c->flags;
	p[7] = 0;
	memcpy(p + 8, c->sn, RC_AUTH_NONCE);
	memcpy(p + 8 + RC_AUTH_NONCE, c->proof, RC_AUTH_MAC);
	return RC_CHALLENGE_LEN;
}

int rc_ctrl_decode_challenge(const void *buf, size_t len, struct rc_ctrl_challenge *c)
{
	const unsigned char *p = buf;

	memset(c, 0, sizeof(*c));
	if (!p || len < RC_CHALLENGE_LEN || get32(p) != RC_HELLO_MAGIC ||
	    (p[4] << 8 | p[5]) != RC_CTRL_PROTO)
		return -EBADMSG;
	c->flags = p[6];
	memcpy(c->sn, p + 8, RC_AUTH_NONCE);
	memcpy(c->proof, p + 8 + RC_AUTH_NONCE, RC_AUTH_MAC);
	return 0;
}

int rc_ctrl_encode_auth(void *buf, size_t cap, uint32_t seq, const unsigned char proof[RC_AUTH_MAC])
{
	if (cap < RC_CTRL_HDR_LEN + RC_AUTH_MAC)
		return -ENOSPC;
	rc_ctrl_encode_hdr(buf, cap, RC_CTRL_AUTH, RC_AUTH_MAC, seq);
	memcpy((unsigned char *)buf + RC_CTRL_HDR_LEN, proof, RC_AUTH_MAC);
	return RC_CTRL_HDR_LEN + RC_AUTH_MAC;
}

int rc_ctrl_decode_auth(const void *buf, size_t len, unsigned char proof[RC_AUTH_MAC])
{
	struct rc_ctrl_hdr h;

	if (rc_ctrl_decode_hdr(buf, len, &h) || h.type != RC_CTRL_AUTH || h.len != RC_AUTH_MAC)
		return -EBADMSG;
	memcpy(proof, (const unsigned char *)buf + RC_CTRL_HDR_LEN, RC_AUTH_MAC);
	return 0;
}

int rc_ctrl_encode_auth_resp(void *buf, size_t cap, uint32_t seq, int32_t status)
{
	if (cap < RC_CTRL_HDR_LEN + 4)
		return -ENOSPC;
	rc_ctrl_encode_hdr(buf, cap, RC_CTRL_AUTH_RESP, 4, seq);
	put32((unsigned char *)buf + RC_CTRL_HDR_LEN, (uint32_t)status);
	return RC_CTRL_HDR_LEN + 4;
}

int rc_ctrl_decode_auth_resp(const void *buf, size_t len, int32_t *status)
{
	struct rc_ctrl_hdr h;

	if (rc_ctrl_decode_hdr(buf, len, &h) || h.type != RC_CTRL_AUTH_RESP || h.len != 4)
		return -EBADMSG;
	*status = (int32_t)get32((const unsigned char *)buf + RC_CTRL_HDR_LEN);
	return 0;
}

void rc_ctrl_auth_init(struct rc_auth *a, enum rc_ctrl_role role, uint16_t port)
{
	char ctx[16];
	int n = snprintf(ctx, sizeof(ctx), "port=%u", port);

	rc_auth_init(a, role == RC_ROLE_ADMIN ? "admin" : "region", ctx, (size_t)n);
}

int rc_ctrl_seal_pull(void *msg, size_t len, const char *token, const struct rc_auth *a)
{
	unsigned char pad[2 * RC_AUTH_KEY], *p = (unsigned char *)msg + PULL_TOKEN_AT;
	struct rc_ctrl_hdr h;

	if (rc_ctrl_decode_hdr(msg, len, &h) || h.type != RC_CTRL_PULL_REQ ||
	    len < PULL_TOKEN_AT + RC_MIG_TOKEN_LEN)
		return -EBADMSG;
	if (!token || !*token)
		return 0;
	rc_auth_session(token, a, "pull-token-1", pad);
	rc_auth_session(token, a, "pull-token-2", pad + RC_AUTH_KEY);
	for (size_t i = 0; i < RC_MIG_TOKEN_LEN; i++)
		p[i] ^= pad[i];
	memset(pad, 0, sizeof(pad));
	return 0;
}
