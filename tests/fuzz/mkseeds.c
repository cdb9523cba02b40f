// SPDX-License-Identifier: MIT
/*
 * Writes the binary seeds of the fuzz corpora (tests/fuzz/corpus/) from the
 * encoders themselves, so that each seed is a well-formed message the fuzzer
 * mutates from. Run by hand after a wire format changes:
 *   build-fuzz/tests/fuzz/mkseeds tests/fuzz/corpus
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <rdmactl/ctrl.h>
#include <rdmactl/kv.h>
#include <rdmactl/ctrl_core.h>
#include <rdmactl/kv_core.h>

/* The group's connect request, as the group builds it. */
#include "../../libcore/group/hello.c"

static int put(const char *dir, const char *sub, const char *name, const void *buf, int len)
{
	char path[4096];
	FILE *f;

	if (len < 0)
		return len;
	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
	f = fopen(path, "wb");
	if (!f)
		return -errno;
	if (fwrite(buf, 1, (size_t)len, f) != (size_t)len) {
		fclose(f);
		return -EIO;
	}
	return fclose(f) ? -errno : 0;
}

static int ctrl_seeds(const char *dir)
{
	struct rc_region_desc r[2] = {
		{ "kv", 0x7f3a2c000000ull, 64ull << 20, 0x1a2, RC_ACCESS_ATOMIC },
		{ "weights", 0x7f0000000000ull, 4096, 0x33, RC_ACCESS_RO },
	};
	unsigned char buf[RC_CTRL_MSG_MAX];
	int err = 0;

	err |= put(dir, "ctrl", "list-req", buf,
		   rc_ctrl_encode_hdr(buf, sizeof(buf), RC_CTRL_LIST_REQ, 0, 7));
	err |= put(dir, "ctrl", "list-none", buf, rc_ctrl_encode_list(buf, sizeof(buf), 1, r, 0));
	err |= put(dir, "ctrl", "list-one", buf, rc_ctrl_encode_list(buf, sizeof(buf), 2, r, 1));
	err |= put(dir, "ctrl", "list-two", buf, rc_ctrl_encode_list(buf, sizeof(buf), 3, r, 2));
	return err;
}

static int kv_seeds(const char *dir)
{
	static uint32_t pages[8] = { 3, 1, 4, 1, 5, 9, 2, 6 };
	struct kv_hello_pd pd = { .rank = 1, .qp = 2, .nqps = 4, .session = 0xabcdef };
	struct kv_accept_pd acc;
	struct kv_msg m[] = {
		{ .type = KV_MSG_HELLO,
		  .seq = 1,
		  .u.hello = { 1,
			       4,
			       0xabcdef,
			       { KV_LAYOUT_PAGED, KV_PAGE_NHD, KV_DT_BF16, 32, 8, 128, 4, 2, 16, 16 },
			       { 0x70, 0x72, 0x6f, 0x6f, 0x66, 0x21 } } },
		{ .type = KV_MSG_WELCOME,
		  .seq = 2,
		  .u.welcome = { 0, 1024, 0x1234, 0x7f0000000000ull, 16384 } },
		{ .type = KV_MSG_REQ, .seq = 3, .req = 42, .u.request = { 512 } },
		{ .type = KV_MSG_ALLOC,
		  .seq = 4,
		  .req = 42,
		  .u.alloc = { .slot = 5, .gen = 9, .npages = 8, .land = 3, .pages = pages } },
		{ .type = KV_MSG_DONE,
		  .seq = 5,
		  .req = 42,
		  .u.done = { KV_DONE_VERIFIED, 0, 1ull << 20 } },
		{ .type = KV_MSG_CANCEL, .seq = 6, .req = 42, .u.cancel = { 0, "cancelled" } },
		{ .type = KV_MSG_HB, .seq = 7 },
		{ .type = KV_MSG_ERROR, .seq = 8, .u.cancel = { 22, "geometry differs" } },
	};
	unsigned char buf[KV_MSG_MAX];
	char name[32];
	int err = 0;

	err |= put(dir, "kv_msg", "hello-pd", buf, kv_pd_encode(&pd, buf, sizeof(buf)));
	/* A control QP's request with its nonce, the accept with the challenge
	 * and proof. */
	memset(pd.nonce, 0x5a, sizeof(pd.nonce));
	pd.qp = 0;
	err |= put(dir, "kv_msg", "hello-pd-ctrl", buf, kv_pd_encode(&pd, buf, sizeof(buf)));
	memset(acc.nonce, 0xa5, sizeof(acc.nonce));
	memset(acc.proof, 0x3c, sizeof(acc.proof));
	err |= put(dir, "kv_msg", "accept", buf, kv_acc_encode(&acc, buf, sizeof(buf)));
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		snprintf(name, sizeof(name), "%s", kv_msg_name(m[i].type));
		err |= put(dir, "kv_msg", name, buf, kv_msg_encode(&m[i], buf, sizeof(buf)));
	}
	return err;
}

/* Notification streams (fuzz_kv_imm): layers, ranks, sources, then records
 * of QP (0: join), immediate (little-endian), spare byte. */
static int imm_rec(unsigned char *b, int n, uint8_t qp, uint32_t imm, uint8_t spare)
{
	b[n] = qp;
	for (int i = 0; i < 4; i++)
		b[n + 1 + i] = (unsigned char)(imm >> (8 * i));
	b[n + 5] = spare;
	return n + 6;
}

static int imm_seeds(const char *dir)
{
	unsigned char b[256] = { 1, 1, 0x3 }; /* 2 layers, 2 ranks, both feed */
	int n = 3, err = 0;

	n = imm_rec(b, n, 0, kv_imm(0, 0, 0, 0), 1); /* rank 0 joins, 2 QPs */
	n = imm_rec(b, n, 0, kv_imm(0, 0, 0, 1), 0); /* rank 1 joins, 1 QP */
	for (uint32_t l = 0; l < 2; l++) {
		n = imm_rec(b, n, 1, kv_imm(3, 5, l, 0), 0);
		n = imm_rec(b, n, 2, kv_imm(3, 5, l, 0), 0);
		n = imm_rec(b, n, 1, kv_imm(3, 5, l, 1), 0);
	}
	err |= put(dir, "kv_imm", "two-ranks-land", b, n);
	n = 3;
	n = imm_rec(b, n, 0, kv_imm(0, 0, 0, 0), 1);
	n = imm_rec(b, n, 1, kv_imm(1, 2, 0, 0), 0);
	n = imm_rec(b, n, 1, kv_imm(1, 2, 0, 0), 0); /* twice on QP 1 */
	err |= put(dir, "kv_imm", "one-qp-twice", b, n);
	return err;
}

/* The group's connect plane (fuzz_group_hello): a byte that picks the rank
 * checking (rank 5 of 8; bit 3: its group has the token s3cret; bit 6: an
 * answer and a first message follow, else a request), then the bytes:
 * requests of protocol 3 with and without the token, one of protocol 2;
 * rank 5's answer to rank 6 and rank 6's proof, as fuzz_group_hello makes
 * the exchange, with the token and without. */
static int group_seeds(const char *dir)
{
	static const struct rc_endpoint eps[8];
	struct ghello h = { .magic = GHELLO_MAGIC, .rank = 2, .world = 8, .flags = GHELLO_TOKEN };
	uint32_t v2[3] = { GROUP_MAGIC, 2, 8 };
	unsigned char b[1 + sizeof(struct gaccept) + sizeof(struct gmsg)];
	size_t plen = offsetof(struct gmsg, data) + RC_AUTH_MAC;
	struct gjob job = { "file", eps };
	struct gaccept ga;
	struct rc_auth a;
	struct gmsg m;
	int err = 0;

	for (int i = 0; i < RC_AUTH_NONCE; i++)
		h.cn[i] = (uint8_t)(i * 13 + 7);
	b[0] = 5 | 8;
	memcpy(b + 1, &h, sizeof(h));
	err |= put(dir, "group_hello", "request-token", b, (int)(1 + sizeof(h)));
	h.flags = 0;
	b[0] = 5;
	memcpy(b + 1, &h, sizeof(h));
	err |= put(dir, "group_hello", "request-no-token", b, (int)(1 + sizeof(h)));
	b[0] = 5 | 8;
	memcpy(b + 1, v2, sizeof(v2));
	err |= put(dir, "group_hello", "request-v2", b, (int)(1 + sizeof(v2)));
	for (int t = 0; t < 2; t++) {
		const char *token = t ? "s3cret" : NULL;

		group_auth(&a, &job, 6, 5, 8, 0x11, 0x22);
		memset(a.cn, 0x5a, RC_AUTH_NONCE);
		memset(a.sn, 0xa5, RC_AUTH_NONCE);
		group_accept_fill(&ga, token, &a);
		group_proof_msg(&m, 6, token, &a);
		b[0] = (unsigned char)(5 | 0x40 | (t ? 8 : 0));
		memcpy(b + 1, &ga, sizeof(ga));
		memcpy(b + 1 + sizeof(ga), &m, plen);
		err |= put(dir, "group_hello", t ? "answer-proof" : "answer-proof-no-token", b,
			   (int)(1 + sizeof(ga) + plen));
	}
	return err;
}

/* Reject reasons (fuzz_reject): as rdmactl's servers send them, zero-padded
 * as the CM delivers them, and one with a byte that is not printable. */
static int reject_seeds(const char *dir)
{
	static const char *why[] = { "rdmactl: not authorised (a missing or wrong token)",
				     "rdmactl: invalid token", "rdmactl: refused" };
	unsigned char b[148] = { 0 };
	char name[16];
	int err = 0;

	for (size_t i = 0; i < sizeof(why) / sizeof(why[0]); i++) {
		memset(b, 0, sizeof(b));
		memcpy(b, why[i], strlen(why[i]));
		snprintf(name, sizeof(name), "reason-%zu", i);
		err |= put(dir, "reject", name, b, (int)sizeof(b));
	}
	b[9] = 0x7f;
	err |= put(dir, "reject", "unprintable", b, 40);
	return err;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: mkseeds CORPUS-DIR\n");
		return 2;
	}
	if (ctrl_seeds(argv[1]) || kv_seeds(argv[1]) || imm_seeds(argv[1]) ||
	    group_seeds(argv[1]) || reject_seeds(argv[1])) {
		fprintf(stderr, "mkseeds: cannot write the seeds under %s\n", argv[1]);
		return 1;
	}
	return 0;
}
