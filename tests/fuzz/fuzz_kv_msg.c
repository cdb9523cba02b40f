// SPDX-License-Identifier: MIT
/*
 * kvxfer's wire: the private data of a connect request (struct kv_hello_pd)
 * and of the decode rank's accept (struct kv_accept_pd), and the control
 * messages both sides exchange. What decodes must encode to a message that
 * decodes to the same thing; a data QP's proof made under a key passes
 * under that key and fails under another; a HELLO's geometry goes through
 * the same check and plan the decode rank runs on it.
 */
#include <string.h>

#include <rdmactl/ctrl.h>
#include <rdmactl/err.h>
#include <rdmactl/kv.h>
#include <rdmactl/kv_core.h>

#include "fuzz.h"

static void same_msg(const struct kv_msg *a, const struct kv_msg *b)
{
	FUZZ_CHECK(a->type == b->type && a->seq == b->seq && a->req == b->req);
	switch (a->type) {
	case KV_MSG_HELLO:
		FUZZ_CHECK(memcmp(&a->u.hello, &b->u.hello, sizeof(a->u.hello)) == 0);
		break;
	case KV_MSG_WELCOME:
		FUZZ_CHECK(memcmp(&a->u.welcome, &b->u.welcome, sizeof(a->u.welcome)) == 0);
		break;
	case KV_MSG_REQ:
		FUZZ_CHECK(a->u.request.tokens == b->u.request.tokens);
		break;
	case KV_MSG_ALLOC:
		FUZZ_CHECK(a->u.alloc.slot == b->u.alloc.slot && a->u.alloc.gen == b->u.alloc.gen);
		FUZZ_CHECK(a->u.alloc.npages == b->u.alloc.npages);
		FUZZ_CHECK(memcmp(a->u.alloc.pages, b->u.alloc.pages,
				  a->u.alloc.npages * sizeof(uint32_t)) == 0);
		break;
	case KV_MSG_DONE:
		FUZZ_CHECK(memcmp(&a->u.done, &b->u.done, sizeof(a->u.done)) == 0);
		break;
	case KV_MSG_CANCEL:
	case KV_MSG_ERROR:
		FUZZ_CHECK(a->u.cancel.code == b->u.cancel.code);
		FUZZ_CHECK(strcmp(a->u.cancel.text, b->u.cancel.text) == 0);
		break;
	default:
		break;
	}
}

/* A geometry that passes the decode rank's check must plan without
 * crashing, for a small request. */
static void plan_geometry(const struct kv_geom *g)
{
	struct kv_plan_in in = { .tokens = 64 };
	struct kv_plan p;
	struct rc_err err;

	if (kv_geom_check(g, &err) != 0)
		return;
	FUZZ_CHECK(kv_halves(g) == 1 || kv_halves(g) == 2);
	(void)kv_plan(g, &in, &p, &err);
}

/* The exchange a decoded request starts: its data-QP proof under the
 * session's key passes, under another key (another nonce) it does not. */
static void exchange(const struct kv_hello_pd *pd)
{
	struct kv_hello_pd q = *pd;
	struct rc_auth a;
	uint8_t key[RC_AUTH_KEY], other[RC_AUTH_KEY];

	kv_auth_start(&a, pd, 7472);
	kv_data_key("s3cret", &a, key);
	a.sn[0] ^= 1;
	kv_data_key("s3cret", &a, other);
	kv_pd_data_prove(&q, key);
	FUZZ_CHECK(kv_pd_data_proven(&q, key));
	FUZZ_CHECK(!kv_pd_data_proven(&q, other));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint32_t pages[KV_MAX_REQ_PAGES], pages2[KV_MAX_REQ_PAGES];
	static unsigned char out[KV_MSG_MAX];
	struct kv_hello_pd pd, pd2;
	struct kv_accept_pd acc, acc2;
	struct kv_msg m, m2;
	int len;

	if (kv_pd_decode(data, size, &pd) == 0) {
		FUZZ_CHECK(pd.nqps >= 1 && pd.nqps <= KV_MAX_QPS && pd.qp <= pd.nqps);
		len = kv_pd_encode(&pd, out, sizeof(out));
		FUZZ_CHECK(len == KV_PD_LEN);
		FUZZ_CHECK(kv_pd_decode(out, (size_t)len, &pd2) == 0);
		FUZZ_CHECK(memcmp(&pd, &pd2, sizeof(pd)) == 0);
		exchange(&pd);
	}
	if (kv_acc_decode(data, size, &acc) == 0) {
		len = kv_acc_encode(&acc, out, sizeof(out));
		FUZZ_CHECK(len == KV_ACC_LEN);
		FUZZ_CHECK(kv_acc_decode(out, (size_t)len, &acc2) == 0);
		FUZZ_CHECK(memcmp(&acc, &acc2, sizeof(acc)) == 0);
	}

	if (kv_msg_decode(data, size, &m, pages, KV_MAX_REQ_PAGES) != 0)
		return 0;
	FUZZ_CHECK(strcmp(kv_msg_name(m.type), "?") != 0);
	if (m.type == KV_MSG_ALLOC)
		FUZZ_CHECK(m.u.alloc.slot < KV_MAX_SLOTS && m.u.alloc.npages <= KV_MAX_REQ_PAGES);
	if (m.type == KV_MSG_CANCEL || m.type == KV_MSG_ERROR)
		FUZZ_CHECK(memchr(m.u.cancel.text, '\0', sizeof(m.u.cancel.text)) != NULL);
	len = kv_msg_encode(&m, out, sizeof(out));
	FUZZ_CHECK(len > 0);
	FUZZ_CHECK(kv_msg_decode(out, (size_t)len, &m2, pages2, KV_MAX_REQ_PAGES) == 0);
	same_msg(&m, &m2);
	if (m.type == KV_MSG_HELLO)
		plan_geometry(&m.u.hello.g);
	return 0;
}
