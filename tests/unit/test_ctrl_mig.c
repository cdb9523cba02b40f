// SPDX-License-Identifier: MIT
/* The migration messages of the control protocol: round trips, the most
 * extents one message holds, and refusal of malformed messages. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rdmactl/ctrl.h>
#include <rdmactl/ctrl_core.h>

#include "check.h"

int main(void)
{
	static struct rc_extent in[RC_PULL_MAX_EXT + 1], out[RC_PULL_MAX_EXT + 1];
	unsigned char buf[RC_CTRL_MSG_MAX];
	struct rc_pull_req p = { .flags = RC_MIG_FIRST,
				 .host = "198.18.0.1",
				 .port = "7471",
				 .src_region = "kv",
				 .dst_region = "kv",
				 .token = "s3cret",
				 .ext = in };
	struct rc_pull_req q = { .ext = out };
	struct rc_hash_req h = { .flags = RC_MIG_LAST | RC_HASH_DST, .region = "kv", .ext = in };
	struct rc_hash_req g = { .ext = out };
	struct rc_mig_resp r = { .status = -ENOENT, .bytes = 1234, .msg = "no region named 'x'" }, s;
	int len;

	CHECK(RC_PULL_MAX_EXT >= 100 && RC_HASH_MAX_EXT >= RC_PULL_MAX_EXT);
	for (unsigned i = 0; i <= RC_PULL_MAX_EXT; i++)
		in[i] = (struct rc_extent){ .src = i * 4096ull,
					    .dst = (i + 7) * 4096ull,
					    .len = 4096 + i };
	p.n = RC_PULL_MAX_EXT + 1;
	CHECK(rc_ctrl_encode_pull(buf, sizeof(buf), 1, &p) == -ENOSPC);
	p.n = RC_PULL_MAX_EXT;
	len = rc_ctrl_encode_pull(buf, sizeof(buf), 1, &p);
	CHECK(len > 0 && len <= RC_CTRL_MSG_MAX);
	CHECK(rc_ctrl_decode_pull(buf, (size_t)len, &q, RC_PULL_MAX_EXT) == 0);
	CHECK_STR(q.host, "198.18.0.1");
	CHECK_STR(q.port, "7471");
	CHECK_STR(q.src_region, "kv");
	CHECK_STR(q.token, "s3cret");
	CHECK(q.flags == RC_MIG_FIRST && q.n == RC_PULL_MAX_EXT);
	CHECK(!memcmp(in, out, sizeof(in[0]) * RC_PULL_MAX_EXT));
	/* Short, or fewer extents room than sent: refused. */
	CHECK(rc_ctrl_decode_pull(buf, (size_t)len - 1, &q, RC_PULL_MAX_EXT) == -EBADMSG);
	CHECK(rc_ctrl_decode_pull(buf, (size_t)len, &q, 3) == -EBADMSG);
	/* A string without its NUL: refused. */
	memset(buf + RC_CTRL_HDR_LEN + 16, 'a', RC_HOST_MAX);
	CHECK(rc_ctrl_decode_pull(buf, (size_t)len, &q, RC_PULL_MAX_EXT) == -EBADMSG);

	h.n = 5;
	len = rc_ctrl_encode_hash(buf, sizeof(buf), 2, &h);
	CHECK(len == RC_CTRL_HDR_LEN + RC_HASH_FIXED_LEN + 5 * 24);
	CHECK(rc_ctrl_decode_hash(buf, (size_t)len, &g, RC_HASH_MAX_EXT) == 0);
	CHECK(g.n == 5 && g.flags == (RC_MIG_LAST | RC_HASH_DST));
	CHECK_STR(g.region, "kv");
	CHECK_EQ_U64(out[4].dst, 11 * 4096ull);
	/* A pull is not a hash. */
	CHECK(rc_ctrl_decode_pull(buf, (size_t)len, &q, RC_PULL_MAX_EXT) == -EBADMSG);

	memset(r.digest, 0xab, sizeof(r.digest));
	len = rc_ctrl_encode_mig_resp(buf, sizeof(buf), 3, &r);
	CHECK(len > 0);
	CHECK(rc_ctrl_decode_mig_resp(buf, (size_t)len, &s) == 0);
	CHECK(s.status == -ENOENT && s.bytes == 1234 && s.digest[31] == 0xab);
	CHECK_STR(s.msg, "no region named 'x'");
	/* A peer's message comes out with its control characters made '?'. */
	snprintf(r.msg, sizeof(r.msg), "bad \033[2J\007 end");
	len = rc_ctrl_encode_mig_resp(buf, sizeof(buf), 3, &r);
	CHECK(rc_ctrl_decode_mig_resp(buf, (size_t)len, &s) == 0);
	CHECK_STR(s.msg, "bad ?[2J? end");
	len = rc_ctrl_encode_mig_resp(buf, sizeof(buf), 3, &r);
	/* A positive status is no errno. */
	buf[RC_CTRL_HDR_LEN] = 5, buf[RC_CTRL_HDR_LEN + 1] = 0, buf[RC_CTRL_HDR_LEN + 2] = 0,
	buf[RC_CTRL_HDR_LEN + 3] = 0;
	CHECK(rc_ctrl_decode_mig_resp(buf, (size_t)len, &s) == -EBADMSG);
	/* The live migration's steps and notices. */
	struct rc_mig_cmd c = { .step = RC_MIG_CUTOVER,
				.region = "kv",
				.off = 65536,
				.len = 8,
				.arg = "198.18.1.2:7471" },
			  d;

	len = rc_ctrl_encode_mig_cmd(buf, sizeof(buf), 4, &c);
	CHECK(len > 0);
	CHECK(rc_ctrl_decode_mig_cmd(buf, (size_t)len, &d) == 0);
	CHECK(d.step == RC_MIG_CUTOVER && d.off == 65536 && d.len == 8);
	CHECK_STR(d.region, "kv");
	CHECK_STR(d.arg, "198.18.1.2:7471");
	CHECK(rc_ctrl_decode_mig_cmd(buf, (size_t)len - 1, &d) == -EBADMSG);
	h.n = 2;
	h.flags = RC_MIG_LAST;
	len = rc_ctrl_encode_dirty(buf, sizeof(buf), 5, &h);
	CHECK(rc_ctrl_decode_dirty(buf, (size_t)len, &g, RC_HASH_MAX_EXT) == 0 && g.n == 2);
	CHECK(rc_ctrl_decode_hash(buf, (size_t)len, &g, RC_HASH_MAX_EXT) == -EBADMSG);
	p.rkey = 0xfeed;
	p.n = 1;
	len = rc_ctrl_encode_pull(buf, sizeof(buf), 6, &p);
	CHECK(rc_ctrl_decode_pull(buf, (size_t)len, &q, RC_PULL_MAX_EXT) == 0 && q.rkey == 0xfeed);
	CHECK_DONE();
}
