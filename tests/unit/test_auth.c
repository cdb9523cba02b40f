// SPDX-License-Identifier: MIT
/* The control planes' challenge-response (base/auth.c): each proof against
 * HMAC-SHA256 as openssl computes it over the same bytes, and each wrong
 * answer refused: another nonce, context, plane, role or token. */
#include <string.h>

#include <rdmactl/auth_core.h>

#include "check.h"

/* openssl dgst -sha256 -mac HMAC -macopt key:s3cret over
 * "rdmactl-auth-v1\0region\0server\0" 00 03 "job" cn sn (cn 16 x 01, sn 16 x 02). */
static const char server_hex[] = "0ef26ba67d71f17680ec9fe5802b1ee9";
/* the same with "client" */
static const char client_hex[] = "8606f02a48c0b12bb4830d0df65f6367";
/* "rdmactl-session-v1\0region\0data-qp\0" 00 03 "job" cn sn, all 32 bytes */
static const char session_hex[] = "5a72ba9d90dd11e660c72bb16d592db05e1dcec520c642fe7ea1841b9dac72ba";

static void hex(const unsigned char *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static void fixed(struct rc_auth *a)
{
	rc_auth_init(a, "region", "job", 3);
	memset(a->cn, 1, RC_AUTH_NONCE);
	memset(a->sn, 2, RC_AUTH_NONCE);
}

static void known_answers(void)
{
	struct rc_auth a;
	unsigned char mac[RC_AUTH_MAC], key[RC_AUTH_KEY];
	char h[2 * RC_AUTH_KEY + 1];

	fixed(&a);
	rc_auth_mac("s3cret", &a, RC_AUTH_SERVER, mac);
	hex(mac, sizeof(mac), h);
	CHECK_STR(h, server_hex);
	rc_auth_mac("s3cret", &a, RC_AUTH_CLIENT, mac);
	hex(mac, sizeof(mac), h);
	CHECK_STR(h, client_hex);
	rc_auth_session("s3cret", &a, "data-qp", key);
	hex(key, sizeof(key), h);
	CHECK_STR(h, session_hex);
}

/* A proof checks only against exactly what it was made over. */
static void wrong_answers(void)
{
	struct rc_auth a, b;
	unsigned char mac[RC_AUTH_MAC];

	fixed(&a);
	rc_auth_mac("s3cret", &a, RC_AUTH_CLIENT, mac);
	CHECK(rc_auth_check("s3cret", &a, RC_AUTH_CLIENT, mac));
	CHECK(!rc_auth_check("s3cret", &a, RC_AUTH_SERVER, mac)); /* reflected */
	CHECK(!rc_auth_check("s3cres", &a, RC_AUTH_CLIENT, mac)); /* another token */
	b = a;
	b.sn[15] ^= 1; /* a replay into a new connection: a new server nonce */
	CHECK(!rc_auth_check("s3cret", &b, RC_AUTH_CLIENT, mac));
	b = a;
	b.cn[0] ^= 0x80;
	CHECK(!rc_auth_check("s3cret", &b, RC_AUTH_CLIENT, mac));
	rc_auth_init(&b, "region", "jo", 2); /* another job */
	memcpy(b.cn, a.cn, RC_AUTH_NONCE);
	memcpy(b.sn, a.sn, RC_AUTH_NONCE);
	CHECK(!rc_auth_check("s3cret", &b, RC_AUTH_CLIENT, mac));
	rc_auth_init(&b, "admin", "job", 3); /* another plane */
	memcpy(b.cn, a.cn, RC_AUTH_NONCE);
	memcpy(b.sn, a.sn, RC_AUTH_NONCE);
	CHECK(!rc_auth_check("s3cret", &b, RC_AUTH_CLIENT, mac));
	mac[RC_AUTH_MAC - 1] ^= 1;
	CHECK(!rc_auth_check("s3cret", &a, RC_AUTH_CLIENT, mac));
}

/* No token: zeros proved, and an open side accepts anything; a side with a
 * token refuses the zeros. */
static void no_token(void)
{
	struct rc_auth a;
	unsigned char mac[RC_AUTH_MAC], zero[RC_AUTH_MAC] = { 0 };

	fixed(&a);
	rc_auth_mac(NULL, &a, RC_AUTH_SERVER, mac);
	CHECK(!memcmp(mac, zero, sizeof(zero)));
	CHECK(rc_auth_check("", &a, RC_AUTH_SERVER, mac));
	CHECK(!rc_auth_check("s3cret", &a, RC_AUTH_SERVER, mac));
}

static void fresh_nonces(void)
{
	unsigned char n1[RC_AUTH_NONCE], n2[RC_AUTH_NONCE];

	CHECK(rc_auth_nonce(n1) == 0);
	CHECK(rc_auth_nonce(n2) == 0);
	CHECK(memcmp(n1, n2, RC_AUTH_NONCE) != 0);
}

int main(void)
{
	known_answers();
	wrong_answers();
	no_token();
	fresh_nonces();
	CHECK_DONE();
}
