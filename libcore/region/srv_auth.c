// SPDX-License-Identifier: MIT
/*
 * The region server's side of protocol 2's handshake (ctrl_core.h,
 * rdmactl-register(8), SECURITY). A connect request carries a HELLO (role
 * and the client's nonce, never a token); the accept carries the CHALLENGE
 * (the server's nonce and its proof of the role's token), and the client's
 * first message must be AUTH, its proof over both nonces. Until then the
 * connection is served nothing: no LIST, no migration step, no slot but
 * the AUTH's, and its QP takes no RDMA READ, WRITE or atomic (its remote
 * access is withheld). At most SRV_AUTH_PENDING connections wait to prove,
 * each for SRV_AUTH_MS. A request of protocol 1 (the raw token) is refused
 * by name.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rdmactl/conn_core.h>
#include <rdmactl/ctrl_core.h>
#include <rdmactl/ops.h>

#include "srv_pool.h"

/* The token a role proves here ("" for none: nothing to prove). */
static const char *role_token(const struct rc_server *s, uint8_t role)
{
	return role == RC_ROLE_ADMIN ? s->admin : s->token;
}

static int pending(const struct rc_server *s)
{
	int n = 0;

	for (int i = 0; i < s->nconns; i++)
		n += !s->conns[i]->authed;
	return n;
}

/* A request without a HELLO: protocol 1's token, or no private data at all
 * (a verbs client that holds no token, served at once by an open server). */
static int admit_legacy(struct rc_server *s, const unsigned char *pd, size_t len,
			struct srv_conn *sc, char *why, size_t cap)
{
	if (len && pd[0]) {
		snprintf(why, cap, "rdmactl: protocol 1 client; server speaks %d: upgrade rdmactl",
			 RC_CTRL_PROTO);
		return -1;
	}
	if (s->token[0]) {
		snprintf(why, cap, "rdmactl: a token is required");
		return -1;
	}
	sc->role = RC_ROLE_DATA;
	sc->authed = true;
	return 0;
}

int srv_auth_admit(struct rc_server *s, const struct rc_cm_event *ev, struct srv_conn *sc,
		   unsigned char *chal, size_t *chal_len, char *why, size_t cap)
{
	const unsigned char *pd = ev->param.private_data;
	size_t len = pd ? ev->param.private_data_len : 0;
	struct rc_ctrl_challenge c = { 0 };
	struct rc_ctrl_hello h;
	const char *tok;
	int rc = rc_ctrl_decode_hello(pd, len, &h);

	*chal_len = 0;
	if (rc == -EPROTO) {
		/* At most 63 bytes: what a client shows of a reason. */
		snprintf(why, cap, "rdmactl: protocol %u client; server speaks %d: upgrade %s",
			 h.version, RC_CTRL_PROTO, h.version < RC_CTRL_PROTO ? "rdmactl" : "server");
		return -1;
	}
	if (rc)
		return admit_legacy(s, pd, len, sc, why, cap);
	if (h.role == RC_ROLE_ADMIN && !s->admin[0]) {
		snprintf(why, cap, "rdmactl: no admin token here (connect as a data client)");
		return -1;
	}
	tok = role_token(s, h.role);
	if (tok[0] && !(h.flags & RC_HELLO_TOKEN)) {
		snprintf(why, cap, "rdmactl: a token is required");
		return -1;
	}
	if (pending(s) >= SRV_AUTH_PENDING) {
		snprintf(why, cap, "rdmactl: too many connections still proving their token");
		return -1;
	}
	rc_ctrl_auth_init(&sc->auth, (enum rc_ctrl_role)h.role, s->l->port);
	memcpy(sc->auth.cn, h.cn, RC_AUTH_NONCE);
	if (rc_auth_nonce(sc->auth.sn)) {
		snprintf(why, cap, "rdmactl: no random nonce for the challenge");
		return -1;
	}
	memcpy(c.sn, sc->auth.sn, RC_AUTH_NONCE);
	c.flags = tok[0] ? RC_CHALLENGE_PROVES : 0;
	rc_auth_mac(tok, &sc->auth, RC_AUTH_SERVER, c.proof);
	*chal_len = (size_t)rc_ctrl_encode_challenge(chal, RC_CHALLENGE_LEN, &c);
	sc->role = h.role;
	sc->auth_by = rc_now() + SRV_AUTH_MS / 1000.0;
	return 0;
}

bool srv_auth_late(const struct srv_conn *sc, double now)
{
	return !sc->authed && now > sc->auth_by;
}

int srv_auth_first(struct rc_server *s, struct srv_conn *sc, int i, char *why, size_t cap)
{
	const struct srv_slot *sl = &s->pool.slot[i];
	unsigned char proof[RC_AUTH_MAC], *out = rc_msgch_reply_buf(&s->pool.ch, (uint32_t)i);
	const void *in = rc_msgch_recv_buf(&s->pool.ch, (uint32_t)i);
	struct rc_ctrl_hdr h;
	int len;

	if (sl->has_imm || rc_ctrl_decode_auth(in, sl->len, proof)) {
		snprintf(why, cap, "it sent %s before it proved its token",
			 sl->has_imm ? "an immediate" : "a request");
		return -1;
	}
	if (!rc_auth_check(role_token(s, sc->role), &sc->auth, RC_AUTH_CLIENT, proof)) {
		snprintf(why, cap, "a wrong proof of the %stoken",
			 sc->role == RC_ROLE_ADMIN ? "admin " : "");
		return -1;
	}
	if (rc_conn_release_access(sc->c)) { /* what the accept withheld */
		snprintf(why, cap, "its QP could not be opened to remote access");
		return -1;
	}
	rc_ctrl_decode_hdr(in, sl->len, &h);
	sc->authed = true;
	sc->admin = sc->role == RC_ROLE_ADMIN || (!s->admin[0] && s->o.allow_unauth_migration);
	len = rc_ctrl_encode_auth_resp(out, RC_CTRL_MSG_MAX, h.seq, 0);
	s->pool.slot[i].owner = sc;
	s->pool.slot[i].state = SLOT_BUSY;
	sc->inflight++;
	if (srv_slot_reply(s, sc, i, (uint32_t)len))
		srv_slot_release(s, i);
	return 0;
}
