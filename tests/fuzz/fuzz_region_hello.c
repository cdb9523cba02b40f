// SPDX-License-Identifier: MIT
/*
 * Protocol 2's handshake on the region control plane (ctrl_auth.c): the
 * connect request's HELLO, the accept's CHALLENGE, AUTH and AUTH_RESP, and
 * a PULL request's masked token, decoded from any bytes. What decodes
 * encodes back to the same bytes; a HELLO of another version is told apart
 * from no HELLO (protocol 1's raw token); masking twice is no change.
 */
#include <errno.h>
#include <string.h>

#include <rdmactl/ctrl_core.h>

#include "fuzz.h"

static void hello(const uint8_t *data, size_t size)
{
	unsigned char again[RC_HELLO_LEN];
	struct rc_ctrl_hello h;
	int rc = rc_ctrl_decode_hello(data, size, &h);

	FUZZ_CHECK(rc == 0 || rc == -EPROTO || rc == -EBADMSG);
	if (rc == -EPROTO)
		FUZZ_CHECK(h.version != RC_CTRL_PROTO);
	if (rc)
		return;
	FUZZ_CHECK(size >= RC_HELLO_LEN && (h.role == RC_ROLE_DATA || h.role == RC_ROLE_ADMIN));
	FUZZ_CHECK(rc_ctrl_encode_hello(again, sizeof(again), &h) == RC_HELLO_LEN);
	FUZZ_CHECK(memcmp(again, data, RC_HELLO_LEN) == 0);
}

static void challenge(const uint8_t *data, size_t size)
{
	unsigned char again[RC_CHALLENGE_LEN];
	struct rc_ctrl_challenge c;

	if (rc_ctrl_decode_challenge(data, size, &c))
		return;
	FUZZ_CHECK(rc_ctrl_encode_challenge(again, sizeof(again), &c) == RC_CHALLENGE_LEN);
	/* Byte 7 is reserved: zero on the way out, whatever came in. */
	FUZZ_CHECK(memcmp(again, data, 7) == 0 && memcmp(again + 8, data + 8, 32) == 0);
}

static void auth(const uint8_t *data, size_t size)
{
	unsigned char proof[RC_AUTH_MAC], again[RC_CTRL_HDR_LEN + RC_AUTH_MAC];
	struct rc_ctrl_hdr h;
	int32_t status;

	if (!rc_ctrl_decode_auth(data, size, proof)) {
		FUZZ_CHECK(rc_ctrl_decode_hdr(data, size, &h) == 0 && h.type == RC_CTRL_AUTH);
		FUZZ_CHECK(rc_ctrl_encode_auth(again, sizeof(again), h.seq, proof) ==
			   (int)sizeof(again));
		FUZZ_CHECK(memcmp(again, data, sizeof(again)) == 0);
	}
	if (!rc_ctrl_decode_auth_resp(data, size, &status)) {
		FUZZ_CHECK(rc_ctrl_decode_hdr(data, size, &h) == 0 && h.type == RC_CTRL_AUTH_RESP);
		FUZZ_CHECK(rc_ctrl_encode_auth_resp(again, sizeof(again), h.seq, status) ==
			   RC_CTRL_HDR_LEN + 4);
		FUZZ_CHECK(memcmp(again, data, RC_CTRL_HDR_LEN + 4) == 0);
	}
}

/* A PULL's token, masked and unmasked under one session: as it was. */
static void seal(const uint8_t *data, size_t size)
{
	unsigned char msg[RC_CTRL_MSG_MAX], before[RC_CTRL_MSG_MAX];
	struct rc_auth a;
	size_t n = size < sizeof(msg) ? size : sizeof(msg);

	memcpy(msg, data, n);
	memcpy(before, data, n);
	rc_ctrl_auth_init(&a, RC_ROLE_ADMIN, 7471);
	if (rc_ctrl_seal_pull(msg, n, "adm1n-s3cret", &a))
		return;
	FUZZ_CHECK(rc_ctrl_seal_pull(msg, n, "adm1n-s3cret", &a) == 0);
	FUZZ_CHECK(memcmp(msg, before, n) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	hello(data, size);
	challenge(data, size);
	auth(data, size);
	seal(data, size);
	return 0;
}
