// SPDX-License-Identifier: MIT
/*
 * The client's side of protocol 2's handshake (ctrl_core.h,
 * rdmactl-register(8), SECURITY): a HELLO in the connect request (role,
 * fresh nonce, never the token), the server's CHALLENGE checked at
 * ESTABLISHED before anything is sent (a server that does not prove the
 * token gets nothing), then AUTH, the client's proof, answered before the
 * connection is used. An admin connection a server without an admin token
 * refuses by name goes again as a data connection.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include <rdmactl/ops.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/ctrl_core.h>
#include <rdmactl/client_core.h>
#include <rdmactl/msgch_core.h>

#define AUTH_SLICE_MS 100

static bool conn_gone(const struct rc_conn *c)
{
	struct pollfd p = { .fd = c->ech ? c->ech->fd : -1, .events = POLLIN };

	return c->disconnected || (c->ech && poll(&p, 1, 0) != 0);
}

static int refused(const struct rc_conn *c, uint8_t role, struct rc_err *err)
{
	return rc_err_set(err, EKEYREJECTED,
			  "%s refused our proof of the %stoken: token refused by the server",
			  c->peer, role == RC_ROLE_ADMIN ? "admin " : "");
}

/* Send AUTH on c and wait for its answer. */
static int auth_exchange(struct rc_conn *c, uint8_t role, const unsigned char proof[RC_AUTH_MAC],
			 struct rc_err *err)
{
	struct rc_msgch_opts mo = { .nconns = 1,
				    .recvs = 1,
				    .sends = 1,
				    .slot = RC_CTRL_MSG_MAX,
				    .what = "the control QP" };
	double deadline = rc_now() + c->timeout_ms / 1000.0;
	struct rc_msgch_rx rx = { 0 };
	struct rc_msgch ch;
	struct ibv_wc wc[2];
	int32_t status = 1;
	bool sent = false;
	int rc;

	if ((rc = rc_msgch_init(&ch, &mo, err)))
		return rc;
	if ((rc = rc_msgch_reg(&ch, c->pd, err)) || (rc = rc_msgch_start(&ch, 0, c, err)))
		goto out;
	rc_ctrl_encode_auth(rc_msgch_send_buf(&ch, 0), RC_CTRL_MSG_MAX, 1, proof);
	rc = rc_msgch_send(&ch, 0, RC_CTRL_HDR_LEN + RC_AUTH_MAC, err);
	/* Its send's completion too: none is left behind for the caller's QP. */
	while (!rc && (status > 0 || !sent)) {
		int n = rc_poll(c, wc, 2, AUTH_SLICE_MS, err);

		if (n == -ETIMEDOUT && conn_gone(c))
			rc = refused(c, role, err);
		else if (n == -ETIMEDOUT && rc_now() > deadline)
			rc = rc_err_set(err, ETIMEDOUT, "%s did not answer our proof within %d ms",
					c->peer, c->timeout_ms);
		else if (n < 0 && n != -ETIMEDOUT)
			rc = refused(c, role, err); /* it dropped us: our sends flushed */
		for (int i = 0; !rc && i < n; i++) {
			int k = rc_msgch_wc(&ch, 0, &wc[i], &rx, err);

			if (k == RC_MSGCH_SENT)
				sent = true;
			else if (k == RC_MSGCH_MSG &&
				 rc_ctrl_decode_auth_resp(rx.data, rx.len, &status))
				rc = rc_err_set(err, EPROTO,
						"%s answered our proof with no AUTH_RESP", c->peer);
			else if (k < 0)
				rc = k;
		}
	}
	if (!rc && status)
		rc = refused(c, role, err);
out:
	rc_msgch_fini(&ch);
	return rc;
}

/* The challenge in c's accept, checked against token: 0, or -errno. */
static int check_challenge(struct rc_conn *c, uint8_t role, const char *token, struct rc_auth *a,
			   struct rc_err *err)
{
	struct rc_ctrl_challenge ch;
	const unsigned char *pd;
	size_t len;

	pd = rc_conn_accept_data(c, &len);
	if (rc_ctrl_decode_challenge(pd, len, &ch))
		return rc_err_set(err, EPROTO,
				  "%s accepted without a challenge: not a server of protocol %d "
				  "(an older rdmactl, or another program)",
				  c->peer, RC_CTRL_PROTO);
	memcpy(a->sn, ch.sn, RC_AUTH_NONCE);
	if (token && *token && !rc_auth_check(token, a, RC_AUTH_SERVER, ch.proof))
		return rc_err_set(err, EKEYREJECTED,
				  "server %s did not prove the %stoken: refusing (an invalid token "
				  "here, a server with another token, or a forged etcd record)",
				  c->peer, role == RC_ROLE_ADMIN ? "admin " : "");
	return 0;
}

int rc_region_connect(const char *host, const char *port, const char *token, enum rc_ctrl_role role,
		      const struct rc_conn_opts *co, struct rc_conn **out, struct rc_auth *a,
		      struct rc_err *err)
{
	struct rc_ctrl_hello h = { .version = RC_CTRL_PROTO, .role = (uint8_t)role };
	unsigned char hello[RC_HELLO_LEN], proof[RC_AUTH_MAC];
	struct rc_conn_opts o = *co;
	struct rc_conn *c;
	int rc;

	*out = NULL;
	if ((rc = rc_auth_nonce(h.cn)))
		return rc_err_set(err, -rc, "no random nonce for the connect request: %s",
				  strerror(-rc));
	h.flags = token && *token ? RC_HELLO_TOKEN : 0;
	o.private_data = hello;
	o.private_len = (uint8_t)rc_ctrl_encode_hello(hello, sizeof(hello), &h);
	if ((rc = rc_connect(host, port, &o, &c, err)))
		return rc;
	/* The port the server listens on, as both sides know it. */
	rc_ctrl_auth_init(a, role, ntohs(rdma_get_dst_port(c->id)));
	memcpy(a->cn, h.cn, RC_AUTH_NONCE);
	rc = check_challenge(c, (uint8_t)role, token, a, err);
	if (!rc) {
		rc_auth_mac(token, a, RC_AUTH_CLIENT, proof);
		rc = auth_exchange(c, (uint8_t)role, proof, err);
	}
	if (rc) {
		rc_conn_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

int client_connect(struct rc_client *cl, const struct rc_target *t, const struct rc_conn_opts *co,
		   struct rc_conn **out, struct rc_err *err)
{
	const char *admin = cl->opts.admin_token;
	struct rc_auth a;
	struct rc_err e = { 0 };
	int rc;

	if (!cl->nconns)
		cl->role = admin ? RC_ROLE_ADMIN : RC_ROLE_DATA;
	if (cl->role == RC_ROLE_ADMIN) {
		rc = rc_region_connect(t->host, t->port, admin, RC_ROLE_ADMIN, co, out, &a, &e);
		/* A server without an admin token: what it may allow a data
		 * connection (--allow-unauthenticated-migration) is its to say. */
		if (rc != -ECONNREFUSED || !strstr(e.msg, "no admin token here")) {
			if (rc && err)
				*err = e;
			goto done;
		}
		cl->role = RC_ROLE_DATA;
	}
	rc = rc_region_connect(t->host, t->port, cl->opts.token, RC_ROLE_DATA, co, out, &a, err);
done:
	if (!rc && !cl->nconns)
		cl->auth = a;
	return rc;
}

const char *rc_client_session(const struct rc_client *cl, const struct rc_auth **a)
{
	const char *tok = cl->role == RC_ROLE_ADMIN ? cl->opts.admin_token : cl->opts.token;

	*a = &cl->auth;
	return tok && *tok ? tok : NULL;
}
