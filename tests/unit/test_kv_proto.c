// SPDX-License-Identifier: MIT
/* kvxfer control messages and the immediate value: round trips, the exact
 * layout of a few fields, and refusal of anything malformed. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <rdmactl/ctrl.h>
#include <rdmactl/kv.h>
#include <rdmactl/ctrl_core.h>
#include <rdmactl/kv_core.h>

#include "check.h"

static unsigned char buf[KV_MSG_MAX];
static uint32_t pages[KV_MAX_REQ_PAGES];

static int round_trip(const struct kv_msg *in, struct kv_msg *out)
{
	int len = kv_msg_encode(in, buf, sizeof(buf));

	CHECK(len > 0);
	if (len <= 0)
		return -1;
	CHECK(kv_msg_decode(buf, (size_t)len, out, pages, KV_MAX_REQ_PAGES) == 0);
	/* One byte short, or one too many, is refused. */
	CHECK(kv_msg_decode(buf, (size_t)len - 1, out, pages, KV_MAX_REQ_PAGES) == -EBADMSG);
	return len;
}

static void messages(void)
{
	struct kv_geom g = { .layout = KV_LAYOUT_MLA,
			     .page_layout = KV_PAGE_HND,
			     .dtype = KV_DT_FP8,
			     .layers = 61,
			     .kv_heads = 1,
			     .head_dim = 576,
			     .src_tp = 8,
			     .dst_tp = 4,
			     .src_page_tokens = 64,
			     .dst_page_tokens = 32 };
	struct kv_msg in = { .type = KV_MSG_HELLO, .seq = 9 }, out;
	uint32_t mine[3] = { 7, 0, 4095 };
	int len;

	in.u.hello.rank = 3;
	in.u.hello.nqps = 4;
	in.u.hello.session = 0xdeadbeef;
	in.u.hello.g = g;
	round_trip(&in, &out);
	CHECK(out.type == KV_MSG_HELLO && out.seq == 9);
	CHECK(out.u.hello.rank == 3 && out.u.hello.nqps == 4 && out.u.hello.session == 0xdeadbeef);
	CHECK(!memcmp(&out.u.hello.g, &g, sizeof(g)));
	CHECK(out.u.hello.token[0] == 0);
	/* The token travels whole; a byte outside the printable range is refused. */
	strcpy(in.u.hello.token, "s3cr3t!");
	round_trip(&in, &out);
	CHECK_STR(out.u.hello.token, "s3cr3t!");
	in.u.hello.token[2] = '\n';
	CHECK(kv_msg_decode(buf, (size_t)kv_msg_encode(&in, buf, sizeof(buf)), &out, pages,
			    KV_MAX_REQ_PAGES) == -EBADMSG);
	memset(in.u.hello.token, 0, sizeof(in.u.hello.token));

	in = (struct kv_msg){ .type = KV_MSG_WELCOME };
	in.u.welcome.rank = 1;
	in.u.welcome.pool_pages = 64;
	in.u.welcome.rkey = 0x1234;
	in.u.welcome.base = 0x7f0012345000ULL;
	in.u.welcome.page_bytes = 32768;
	round_trip(&in, &out);
	CHECK_EQ_U64(out.u.welcome.base, 0x7f0012345000ULL);
	CHECK(out.u.welcome.rank == 1 && out.u.welcome.pool_pages == 64 &&
	      out.u.welcome.rkey == 0x1234 && out.u.welcome.page_bytes == 32768);

	in = (struct kv_msg){ .type = KV_MSG_REQ, .req = 42 };
	in.u.request.tokens = 1000;
	len = round_trip(&in, &out);
	CHECK(len == RC_CTRL_HDR_LEN + 8);
	/* Little-endian: the request id right after the header. */
	CHECK(buf[RC_CTRL_HDR_LEN] == 42 && buf[RC_CTRL_HDR_LEN + 1] == 0);
	CHECK(out.req == 42 && out.u.request.tokens == 1000);

	in = (struct kv_msg){ .type = KV_MSG_ALLOC, .req = 5 };
	in.u.alloc.slot = 200;
	in.u.alloc.gen = 0x1ab; /* eight bits travel */
	in.u.alloc.npages = 3;
	in.u.alloc.pages = mine;
	round_trip(&in, &out);
	CHECK(out.req == 5 && out.u.alloc.slot == 200 && out.u.alloc.gen == 0xab);
	CHECK(out.u.alloc.npages == 3 && out.u.alloc.pages[2] == 4095 && out.u.alloc.pages[0] == 7);
	len = kv_msg_encode(&in, buf, sizeof(buf));
	CHECK(kv_msg_decode(buf, (size_t)len, &out, pages, 2) == -EBADMSG); /* too many pages */
	in.u.alloc.slot = KV_MAX_SLOTS;
	CHECK(kv_msg_encode(&in, buf, sizeof(buf)) == -EINVAL);
	in.u.alloc.slot = 0;
	in.u.alloc.npages = KV_MAX_REQ_PAGES + 1;
	CHECK(kv_msg_encode(&in, buf, sizeof(buf)) == -EINVAL);

	in = (struct kv_msg){ .type = KV_MSG_DONE, .req = 6 };
	in.u.done.flags = KV_DONE_CHECKED;
	in.u.done.status = EBADMSG;
	in.u.done.bytes = 1ULL << 40;
	round_trip(&in, &out);
	CHECK(out.u.done.flags == KV_DONE_CHECKED && out.u.done.status == EBADMSG);
	CHECK_EQ_U64(out.u.done.bytes, 1ULL << 40);

	in = (struct kv_msg){ .type = KV_MSG_CANCEL, .req = 7 };
	in.u.cancel.code = ECONNRESET;
	snprintf(in.u.cancel.text, sizeof(in.u.cancel.text), "source rank 1 died\n");
	round_trip(&in, &out);
	CHECK(out.req == 7 && out.u.cancel.code == ECONNRESET);
	CHECK_STR(out.u.cancel.text, "source rank 1 died?"); /* control bytes never pass */
	CHECK(kv_msg_name(KV_MSG_CANCEL)[0] == 'C');

	in = (struct kv_msg){ .type = KV_MSG_HB };
	len = kv_msg_encode(&in, buf, sizeof(buf));
	CHECK(len == RC_CTRL_HDR_LEN);
	CHECK(kv_msg_decode(buf, (size_t)len, &out, pages, 0) == 0 && out.type == KV_MSG_HB);

	/* Unknown type, bad geometry kinds, a message that claims more than it has. */
	in = (struct kv_msg){ .type = 0x99 };
	CHECK(kv_msg_encode(&in, buf, sizeof(buf)) == -EINVAL);
	rc_ctrl_encode_hdr(buf, sizeof(buf), 0x99, 0, 0);
	CHECK(kv_msg_decode(buf, RC_CTRL_HDR_LEN, &out, pages, 0) == -EBADMSG);
	in = (struct kv_msg){ .type = KV_MSG_HELLO };
	in.u.hello.g = g;
	len = kv_msg_encode(&in, buf, sizeof(buf));
	buf[RC_CTRL_HDR_LEN + 12] = 7; /* layout 7 */
	CHECK(kv_msg_decode(buf, (size_t)len, &out, pages, 0) == -EBADMSG);
	in = (struct kv_msg){ .type = KV_MSG_REQ };
	len = kv_msg_encode(&in, buf, sizeof(buf));
	buf[len] = 0;
	rc_ctrl_encode_hdr(buf, sizeof(buf), KV_MSG_REQ, 9, 0); /* 9 payload bytes, 8 used */
	CHECK(kv_msg_decode(buf, (size_t)len + 1, &out, pages, 0) == -EBADMSG);
	CHECK(kv_msg_encode(&in, buf, 20) == -ENOSPC);
}

/* The token proven in the connect request: the secret and proof travel
 * whole; a longer token, a prefix, another field or another secret does not
 * prove it. */
static void pd_proof(void)
{
	struct kv_hello_pd p = { .rank = 1, .qp = 0, .nqps = 2, .session = 7 }, q, x;
	unsigned char pd[KV_PD_LEN];

	for (int i = 0; i < KV_PD_SECRET; i++)
		p.secret[i] = (uint8_t)(i * 37 + 1);
	CHECK(KV_PD_LEN == 56);
	CHECK(kv_pd_authentic(&p, NULL) && kv_pd_authentic(&p, ""));
	CHECK(!kv_pd_authentic(&p, "s3cret")); /* zeros prove nothing */
	kv_pd_prove(&p, "s3cret");
	CHECK(kv_pd_encode(&p, pd, sizeof(pd)) == KV_PD_LEN);
	CHECK(kv_pd_decode(pd, sizeof(pd), &q) == 0);
	CHECK(!memcmp(q.secret, p.secret, KV_PD_SECRET) && !memcmp(q.proof, p.proof, KV_PD_PROOF));
	CHECK(kv_pd_authentic(&q, "s3cret"));
	CHECK(!kv_pd_authentic(&q, "s3cretX"));
	CHECK(!kv_pd_authentic(&q, "s3cre"));
	CHECK(!kv_pd_authentic(&q, "S3cret"));
	x = q;
	x.qp = 1;
	CHECK(!kv_pd_authentic(&x, "s3cret"));
	x = q;
	x.secret[KV_PD_SECRET - 1] ^= 1;
	CHECK(!kv_pd_authentic(&x, "s3cret"));
	x = q;
	x.session ^= 1;
	CHECK(!kv_pd_authentic(&x, "s3cret"));
	x = q;
	x.proof[KV_PD_PROOF - 1] ^= 0x80;
	CHECK(!kv_pd_authentic(&x, "s3cret"));
	/* Proven with the longer token or the prefix: refused by the real one. */
	x = p;
	kv_pd_prove(&x, "s3cretX");
	CHECK(!kv_pd_authentic(&x, "s3cret"));
	kv_pd_prove(&x, "s3cre");
	CHECK(!kv_pd_authentic(&x, "s3cret"));
	/* A request cut short: the proof is missing, not zero-filled into a pass. */
	CHECK(kv_pd_decode(pd, KV_PD_LEN - 1, &q) == -EBADMSG);
}

static void imm_and_pd(void)
{
	uint32_t imm = kv_imm(0x1ff, 255, 1023, 63);
	struct kv_hello_pd p = { .rank = 5, .qp = 2, .nqps = 4, .session = 99 }, q;
	unsigned char pd[KV_PD_LEN];

	CHECK(kv_imm_gen(imm) == 0xff && kv_imm_slot(imm) == 255);
	CHECK(kv_imm_layer(imm) == 1023 && kv_imm_rank(imm) == 63);
	imm = kv_imm(3, 17, 60, 2);
	CHECK(kv_imm_gen(imm) == 3 && kv_imm_slot(imm) == 17 && kv_imm_layer(imm) == 60 &&
	      kv_imm_rank(imm) == 2);
	/* Fields do not bleed into each other. */
	CHECK(kv_imm(0, 0, 1, 0) != kv_imm(0, 0, 0, 1) && kv_imm(1, 0, 0, 0) != kv_imm(0, 1, 0, 0));

	CHECK(kv_pd_encode(&p, pd, sizeof(pd)) == KV_PD_LEN);
	CHECK(kv_pd_decode(pd, sizeof(pd), &q) == 0);
	CHECK(q.rank == 5 && q.qp == 2 && q.nqps == 4 && q.session == 99);
	/* rdma_cm pads private data with zeros: a longer buffer is fine. */
	unsigned char padded[56] = { 0 };
	memcpy(padded, pd, sizeof(pd));
	CHECK(kv_pd_decode(padded, sizeof(padded), &q) == 0);
	CHECK(kv_pd_decode(pd, 8, &q) == -EBADMSG);
	CHECK(kv_pd_decode(NULL, 0, &q) == -EBADMSG);
	pd[0] ^= 1;
	CHECK(kv_pd_decode(pd, sizeof(pd), &q) == -EBADMSG);
	p.qp = 5; /* beyond nqps */
	kv_pd_encode(&p, pd, sizeof(pd));
	CHECK(kv_pd_decode(pd, sizeof(pd), &q) == -EBADMSG);
	pd_proof();
}

int main(void)
{
	messages();
	imm_and_pd();
	CHECK_DONE();
}
