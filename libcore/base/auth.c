// SPDX-License-Identifier: MIT
/* Mutual challenge-response under a shared token: see auth_core.h. */
#include <stdint.h>
#include <string.h>

#include <rdmactl/auth_core.h>
#include <rdmactl/parse_core.h>
#include <rdmactl/sha256_core.h>

#define AUTH_LABEL "rdmactl-auth-v1"
#define SESSION_LABEL "rdmactl-session-v1"

void rc_auth_init(struct rc_auth *a, const char *plane, const void *ctx, size_t ctxlen)
{
	memset(a, 0, sizeof(*a));
	a->plane = plane ? plane : "";
	a->ctxlen = ctxlen < RC_AUTH_CTX ? ctxlen : RC_AUTH_CTX;
	if (a->ctxlen)
		memcpy(a->ctx, ctx, a->ctxlen);
}

int rc_auth_nonce(unsigned char n[RC_AUTH_NONCE])
{
	return rc_random_bytes(n, RC_AUTH_NONCE);
}

/* label NUL plane NUL tag ctxlen(2, big-endian) ctx cn sn, under token. */
static void auth_hmac(const char *token, const struct rc_auth *a, const char *label,
		      const char *tag, unsigned char out[RC_SHA256_LEN])
{
	unsigned char buf[64 + 32 + 32 + 2 + RC_AUTH_CTX + 2 * RC_AUTH_NONCE];
	size_t n = 0, ll = strlen(label), pl = strnlen(a->plane, 31), tl = strnlen(tag, 31);

	memcpy(buf + n, label, ll + 1);
	n += ll + 1;
	memcpy(buf + n, a->plane, pl);
	buf[n + pl] = 0;
	n += pl + 1;
	memcpy(buf + n, tag, tl);
	buf[n + tl] = 0;
	n += tl + 1;
	buf[n++] = (unsigned char)(a->ctxlen >> 8);
	buf[n++] = (unsigned char)a->ctxlen;
	memcpy(buf + n, a->ctx, a->ctxlen);
	n += a->ctxlen;
	memcpy(buf + n, a->cn, RC_AUTH_NONCE);
	n += RC_AUTH_NONCE;
	memcpy(buf + n, a->sn, RC_AUTH_NONCE);
	n += RC_AUTH_NONCE;
	rc_hmac_sha256(token, strlen(token), buf, n, out);
}

void rc_auth_mac(const char *token, const struct rc_auth *a, enum rc_auth_role who,
		 unsigned char out[RC_AUTH_MAC])
{
	unsigned char mac[RC_SHA256_LEN];

	if (!token || !*token) {
		memset(out, 0, RC_AUTH_MAC);
		return;
	}
	auth_hmac(token, a, AUTH_LABEL, who == RC_AUTH_SERVER ? "server" : "client", mac);
	memcpy(out, mac, RC_AUTH_MAC);
}

bool rc_auth_check(const char *token, const struct rc_auth *a, enum rc_auth_role who,
		   const unsigned char got[RC_AUTH_MAC])
{
	unsigned char want[RC_AUTH_MAC];

	if (!token || !*token)
		return true;
	rc_auth_mac(token, a, who, want);
	return rc_bytes_equal(want, got, RC_AUTH_MAC);
}

void rc_auth_session(const char *token, const struct rc_auth *a, const char *use,
		     unsigned char key[RC_AUTH_KEY])
{
	unsigned char mac[RC_SHA256_LEN];

	if (!token || !*token) {
		memset(key, 0, RC_AUTH_KEY);
		return;
	}
	auth_hmac(token, a, SESSION_LABEL, use ? use : "", mac);
	memcpy(key, mac, RC_AUTH_KEY);
}
