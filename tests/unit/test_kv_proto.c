// SPDX-License-Identifier: MIT
/* kvxfer control messages and the immediate value: round trips, the exact
 * layout of a few fields, and refusal of anything malformed. */
#include <endian.h>
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
	/* The proof travels whole, any bytes: no token does. */
	for (int i = 0; i < RC_AUTH_MAC; i++)
		in.u.hello.proof[i] = (uint8_t)(i * 53 + 0x0a);
	len = round_trip(&in, &out);
	CHECK(!memcmp(out.u.hello.proof, in.u.hello.proof, RC_AUTH_MAC));
	CHECK(len == RC_CTRL_HDR_LEN + 12 + 32 + RC_AUTH_MAC + 4);

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

/* The challenge and response of protocol 7: what each side derives from
 * the exchange, and what changes it. */
static void exchange(void)
{
	struct kv_hello_pd c = { .rank = 1, .qp = 0, .nqps = 2, .session = 7 }, q;
	struct kv_accept_pd acc = { 0 }, acc2;
	struct rc_auth a, b;
	unsigned char pd[KV_PD_LEN], ab[KV_ACC_LEN], mac[RC_AUTH_MAC], mac2[RC_AUTH_MAC];
	uint8_t key[RC_AUTH_KEY], key2[RC_AUTH_KEY];

	for (int i = 0; i < RC_AUTH_NONCE; i++) {
		c.nonce[i] = (uint8_t)(i * 37 + 1);
		acc.nonce[i] = (uint8_t)(i * 11 + 5);
	}
	CHECK(KV_PD_LEN == 48 && KV_ACC_LEN == 36);
	CHECK(kv_pd_encode(&c, pd, sizeof(pd)) == KV_PD_LEN);
	CHECK(kv_pd_decode(pd, sizeof(pd), &q) == 0 && !memcmp(&q, &c, sizeof(q)));
	/* Both sides' context: the request's fields and the decode rank's port. */
	kv_auth_start(&a, &q, 7472);
	CHECK_STR(a.plane, "kvxfer");
	CHECK(a.ctxlen == 14 && a.ctx[0] == 1 && a.ctx[4] == 2 && a.ctx[8] == 7);
	CHECK(a.ctx[12] == 7472 >> 8 && a.ctx[13] == (7472 & 0xff));
	CHECK(!memcmp(a.cn, c.nonce, RC_AUTH_NONCE));
	/* The accept: magic, nonce, proof; cut short or another magic refused. */
	memcpy(a.sn, acc.nonce, RC_AUTH_NONCE);
	rc_auth_mac("s3cret", &a, RC_AUTH_SERVER, acc.proof);
	CHECK(kv_acc_encode(&acc, ab, sizeof(ab)) == KV_ACC_LEN);
	CHECK(kv_acc_encode(&acc, ab, sizeof(ab) - 1) == -ENOSPC);
	CHECK(kv_acc_decode(ab, sizeof(ab), &acc2) == 0 && !memcmp(&acc, &acc2, sizeof(acc)));
	CHECK(kv_acc_decode(ab, sizeof(ab) - 1, &acc2) == -EBADMSG);
	CHECK(kv_acc_decode(NULL, 0, &acc2) == -EBADMSG);
	ab[0] ^= 1;
	CHECK(kv_acc_decode(ab, sizeof(ab), &acc2) == -EBADMSG);
	/* Another port, rank or session: another proof. */
	rc_auth_mac("s3cret", &a, RC_AUTH_CLIENT, mac);
	kv_auth_start(&b, &q, 7473);
	memcpy(b.sn, a.sn, RC_AUTH_NONCE);
	rc_auth_mac("s3cret", &b, RC_AUTH_CLIENT, mac2);
	CHECK(memcmp(mac, mac2, RC_AUTH_MAC) != 0);
	q.session ^= 1;
	kv_auth_start(&b, &q, 7472);
	memcpy(b.sn, a.sn, RC_AUTH_NONCE);
	rc_auth_mac("s3cret", &b, RC_AUTH_CLIENT, mac2);
	CHECK(memcmp(mac, mac2, RC_AUTH_MAC) != 0);
	/* The data QPs' secret: another token, nonce or none gives another. */
	kv_data_key("s3cret", &a, key);
	b = a;
	b.sn[0] ^= 1;
	kv_data_key("s3cret", &b, key2);
	CHECK(memcmp(key, key2, RC_AUTH_KEY) != 0);
	kv_data_key("s3cretX", &a, key2);
	CHECK(memcmp(key, key2, RC_AUTH_KEY) != 0);
	kv_data_key(NULL, &a, key2);
	CHECK(memcmp(key, key2, RC_AUTH_KEY) != 0);
	memset(key, 0, sizeof(key));
	CHECK(memcmp(key, key2, RC_AUTH_KEY) != 0); /* without a token, still the nonces' */
}

/* A data QP's proof of its session: the index, rank, session and QPs are
 * in it; a key or proof one bit off is refused. */
static void data_proof(void)
{
	struct kv_hello_pd p = { .rank = 1, .qp = 1, .nqps = 2, .session = 7 }, q, x;
	unsigned char pd[KV_PD_LEN];
	uint8_t key[RC_AUTH_KEY];

	for (int i = 0; i < RC_AUTH_KEY; i++)
		key[i] = (uint8_t)(i * 29 + 3);
	CHECK(!kv_pd_data_proven(&p, key)); /* zeros prove nothing */
	kv_pd_data_prove(&p, key);
	CHECK(kv_pd_encode(&p, pd, sizeof(pd)) == KV_PD_LEN);
	CHECK(kv_pd_decode(pd, sizeof(pd), &q) == 0);
	CHECK(kv_pd_data_proven(&q, key));
	x = q;
	x.qp = 2; /* the proof of QP 1 does not admit QP 2 */
	CHECK(!kv_pd_data_proven(&x, key));
	x = q;
	x.session ^= 1;
	CHECK(!kv_pd_data_proven(&x, key));
	x = q;
	x.rank = 0;
	CHECK(!kv_pd_data_proven(&x, key));
	x = q;
	x.nqps = 1;
	CHECK(!kv_pd_data_proven(&x, key));
	x = q;
	x.proof[RC_AUTH_MAC - 1] ^= 0x80;
	CHECK(!kv_pd_data_proven(&x, key));
	key[RC_AUTH_KEY - 1] ^= 1;
	CHECK(!kv_pd_data_proven(&q, key));
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
	uint32_t v6 = htole32(KV_PD_MAGIC_V6);

	memcpy(padded, pd, sizeof(pd));
	CHECK(kv_pd_decode(padded, sizeof(padded), &q) == 0);
	CHECK(kv_pd_decode(pd, 8, &q) == -EBADMSG);
	CHECK(kv_pd_decode(NULL, 0, &q) == -EBADMSG);
	pd[0] ^= 1;
	CHECK(kv_pd_decode(pd, sizeof(pd), &q) == -EBADMSG);
	/* Protocol 6 (a replayable proof) is refused by name. */
	memcpy(padded, &v6, sizeof(v6));
	CHECK(kv_pd_decode(padded, sizeof(padded), &q) == -EPROTO);
	p.qp = 5; /* beyond nqps */
	kv_pd_encode(&p, pd, sizeof(pd));
	CHECK(kv_pd_decode(pd, sizeof(pd), &q) == -EBADMSG);
	exchange();
	data_proof();
}

int main(void)
{
	messages();
	imm_and_pd();
	CHECK_DONE();
}
