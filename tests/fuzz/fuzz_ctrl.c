// SPDX-License-Identifier: MIT
/*
 * The region control protocol as a client and the server read it off the
 * wire: a header, and a LIST reply with its region records. A decoded reply
 * must encode to a message that decodes to the same regions, and every name
 * must be a NUL-terminated string. The migration messages (pull, hash, step,
 * answer, written-block list) likewise: decoded, re-encoded, decoded again
 * to the same fields.
 */
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ctrl.h>
#include <rdmactl/ctrl_core.h>

#include "fuzz.h"

static void migration(const uint8_t *data, size_t size)
{
	static struct rc_extent x[RC_HASH_MAX_EXT], y[RC_HASH_MAX_EXT];
	static unsigned char out[RC_CTRL_MSG_MAX];
	struct rc_pull_req p = { .ext = x }, p2 = { .ext = y };
	struct rc_hash_req h = { .ext = x }, h2 = { .ext = y };
	struct rc_mig_cmd c, c2;
	struct rc_mig_resp r, r2;
	int len;

	if (rc_ctrl_decode_pull(data, size, &p, RC_PULL_MAX_EXT) == 0) {
		FUZZ_CHECK(p.n <= RC_PULL_MAX_EXT);
		FUZZ_CHECK(memchr(p.host, '\0', sizeof(p.host)) &&
			   memchr(p.token, '\0', sizeof(p.token)));
		len = rc_ctrl_encode_pull(out, sizeof(out), 1, &p);
		FUZZ_CHECK(len > 0 &&
			   rc_ctrl_decode_pull(out, (size_t)len, &p2, RC_PULL_MAX_EXT) == 0);
		FUZZ_CHECK(p2.n == p.n && p2.rkey == p.rkey && !strcmp(p2.host, p.host));
		FUZZ_CHECK(!memcmp(x, y, sizeof(x[0]) * p.n));
	}
	if (rc_ctrl_decode_hash(data, size, &h, RC_HASH_MAX_EXT) == 0 ||
	    rc_ctrl_decode_dirty(data, size, &h, RC_HASH_MAX_EXT) == 0) {
		FUZZ_CHECK(h.n <= RC_HASH_MAX_EXT && memchr(h.region, '\0', sizeof(h.region)));
		len = rc_ctrl_encode_hash(out, sizeof(out), 1, &h);
		FUZZ_CHECK(len > 0 &&
			   rc_ctrl_decode_hash(out, (size_t)len, &h2, RC_HASH_MAX_EXT) == 0);
		FUZZ_CHECK(h2.n == h.n && h2.flags == h.flags && !memcmp(x, y, sizeof(x[0]) * h.n));
	}
	if (rc_ctrl_decode_mig_cmd(data, size, &c) == 0) {
		len = rc_ctrl_encode_mig_cmd(out, sizeof(out), 1, &c);
		FUZZ_CHECK(len > 0 && rc_ctrl_decode_mig_cmd(out, (size_t)len, &c2) == 0);
		FUZZ_CHECK(c2.step == c.step && c2.off == c.off && c2.len == c.len &&
			   !strcmp(c2.region, c.region) && !strcmp(c2.arg, c.arg));
	}
	if (rc_ctrl_decode_mig_resp(data, size, &r) == 0) {
		FUZZ_CHECK(r.status <= 0 && memchr(r.msg, '\0', sizeof(r.msg)));
		len = rc_ctrl_encode_mig_resp(out, sizeof(out), 1, &r);
		FUZZ_CHECK(len > 0 && rc_ctrl_decode_mig_resp(out, (size_t)len, &r2) == 0);
		FUZZ_CHECK(r2.status == r.status && r2.bytes == r.bytes && !strcmp(r2.msg, r.msg));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rc_region_desc r[RC_MAX_REGIONS], again[RC_MAX_REGIONS];
	static unsigned char out[RC_CTRL_MSG_MAX];
	struct rc_ctrl_hdr h;
	int n, len;

	if (rc_ctrl_decode_hdr(data, size, &h) == 0)
		FUZZ_CHECK(h.len <= size - RC_CTRL_HDR_LEN);
	migration(data, size);

	n = rc_ctrl_decode_list(data, size, r, RC_MAX_REGIONS);
	if (n < 0)
		return 0;
	FUZZ_CHECK(n <= RC_MAX_REGIONS);
	for (int i = 0; i < n; i++) {
		FUZZ_CHECK(memchr(r[i].name, '\0', sizeof(r[i].name)) != NULL);
		FUZZ_CHECK(r[i].access <= RC_ACCESS_ATOMIC);
	}
	len = rc_ctrl_encode_list(out, sizeof(out), h.seq, r, n);
	FUZZ_CHECK(len > 0);
	FUZZ_CHECK(rc_ctrl_decode_list(out, (size_t)len, again, RC_MAX_REGIONS) == n);
	for (int i = 0; i < n; i++) {
		FUZZ_CHECK(strcmp(r[i].name, again[i].name) == 0);
		FUZZ_CHECK(r[i].addr == again[i].addr && r[i].length == again[i].length);
		FUZZ_CHECK(r[i].rkey == again[i].rkey && r[i].access == again[i].access);
	}
	return 0;
}
