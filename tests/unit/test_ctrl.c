// SPDX-License-Identifier: MIT
/* The control protocol's encoding: the region table round trip, its exact
 * wire layout, and refusal of malformed messages. */
#include <errno.h>
#include <stdint.h>

#include <rdmactl/ctrl.h>
#include <rdmactl/mem.h>
#include <rdmactl/ctrl_core.h>

#include "check.h"

int main(void)
{
	struct rc_region_desc in[2] = {
		{ .name = "kv", .addr = 0x7f0000001000ULL, .length = 1 << 20, .rkey = 0x1234,
		  .access = RC_ACCESS_RW },
		{ .name = "weights", .addr = 0x10, .length = 8, .rkey = 0xdeadbeef,
		  .access = RC_ACCESS_ATOMIC },
	}, out[4];
	unsigned char buf[RC_CTRL_MSG_MAX];
	struct rc_ctrl_hdr h;
	int len, n;

	len = rc_ctrl_encode_list(buf, sizeof(buf), 7, in, 2);
	CHECK(len == RC_CTRL_HDR_LEN + 4 + 2 * RC_REGION_WIRE_LEN);
	/* Little-endian magic "RDMC", version 1, type LIST_RESP. */
	CHECK(buf[0] == 'R' && buf[1] == 'D' && buf[2] == 'M' && buf[3] == 'C');
	CHECK(buf[4] == 1 && buf[5] == 0);
	CHECK(buf[6] == RC_CTRL_LIST_RESP && buf[7] == 0);
	CHECK(rc_ctrl_decode_hdr(buf, (size_t)len, &h) == 0);
	CHECK_EQ_U64(h.seq, 7);
	CHECK_EQ_U64(h.len, (unsigned)len - RC_CTRL_HDR_LEN);
	n = rc_ctrl_decode_list(buf, (size_t)len, out, 4);
	CHECK(n == 2);
	CHECK_STR(out[0].name, "kv");
	CHECK_EQ_U64(out[0].addr, 0x7f0000001000ULL);
	CHECK_EQ_U64(out[0].length, 1 << 20);
	CHECK_EQ_U64(out[0].rkey, 0x1234);
	CHECK(out[0].access == RC_ACCESS_RW);
	CHECK_STR(out[1].name, "weights");
	CHECK_EQ_U64(out[1].rkey, 0xdeadbeef);
	CHECK(out[1].access == RC_ACCESS_ATOMIC);

	/* Too small a destination, truncation, bad magic, bad access. */
	CHECK(rc_ctrl_decode_list(buf, (size_t)len, out, 1) == -EBADMSG);
	CHECK(rc_ctrl_decode_list(buf, (size_t)len - 1, out, 4) == -EBADMSG);
	CHECK(rc_ctrl_decode_list(buf, 10, out, 4) == -EBADMSG);
	buf[0] ^= 1;
	CHECK(rc_ctrl_decode_list(buf, (size_t)len, out, 4) == -EBADMSG);
	buf[0] ^= 1;
	buf[RC_CTRL_HDR_LEN + 4 + RC_NAME_MAX + 20] = 9;
	CHECK(rc_ctrl_decode_list(buf, (size_t)len, out, 4) == -EBADMSG);
	CHECK(rc_ctrl_encode_list(buf, 40, 1, in, 2) == -ENOSPC);
	/* A name no server serves (a terminal's escape in it) is refused. */
	len = rc_ctrl_encode_list(buf, sizeof(buf), 7, in, 2);
	buf[RC_CTRL_HDR_LEN + 4 + RC_REGION_WIRE_LEN] = 0x1b;
	CHECK(rc_ctrl_decode_list(buf, (size_t)len, out, 4) == -EBADMSG);

	/* A request header round trip. */
	CHECK(rc_ctrl_encode_hdr(buf, sizeof(buf), RC_CTRL_LIST_REQ, 0, 3) == RC_CTRL_HDR_LEN);
	CHECK(rc_ctrl_decode_hdr(buf, RC_CTRL_HDR_LEN, &h) == 0);
	CHECK(h.type == RC_CTRL_LIST_REQ && h.seq == 3 && h.len == 0);
	CHECK_DONE();
}
