// SPDX-License-Identifier: MIT
/* Notification counting on a decode rank: a layer lands when every source
 * rank that feeds it delivered one on each of its data QPs, not when the
 * count per rank adds up. */
#include <errno.h>
#include <stdint.h>

#include <rdmactl/kv.h>
#include <rdmactl/kv_core.h>

#include "check.h"

static void per_qp(void)
{
	struct kv_tally t;

	CHECK(kv_tally_init(&t, 4, 2, 0x3) == 0);
	CHECK(kv_tally_join(&t, 0, 2) == 0);
	CHECK(kv_tally_join(&t, 1, 1) == 0);
	CHECK(kv_tally_join(&t, 1, 1) == -EINVAL); /* once */
	/* Two on QP 1 of rank 0 and none on QP 2: not landed, the second refused. */
	CHECK(kv_tally_note(&t, 0, 1, 0) == KV_TALLY_COUNTED);
	CHECK(kv_tally_note(&t, 0, 1, 0) == KV_TALLY_DUP);
	CHECK(kv_tally_note(&t, 1, 1, 0) == KV_TALLY_COUNTED);
	CHECK_EQ_U64(t.landed, 0);
	/* QP 2 completes it, whatever the order. */
	CHECK(kv_tally_note(&t, 0, 2, 0) == KV_TALLY_LANDED);
	CHECK_EQ_U64(t.landed, 1);
	CHECK(kv_tally_note(&t, 0, 2, 0) == KV_TALLY_DUP);
	CHECK(kv_tally_note(&t, 1, 1, 0) == KV_TALLY_DUP);
	/* Out of range: the QP, the layer, the rank. */
	CHECK(kv_tally_note(&t, 0, 3, 1) == KV_TALLY_BAD);
	CHECK(kv_tally_note(&t, 0, 0, 1) == KV_TALLY_BAD);
	CHECK(kv_tally_note(&t, 1, 2, 1) == KV_TALLY_BAD);
	CHECK(kv_tally_note(&t, 0, 1, 4) == KV_TALLY_BAD);
	CHECK(kv_tally_note(&t, 2, 1, 1) == KV_TALLY_BAD);
	CHECK(kv_tally_note(&t, 0, 17, 1) == KV_TALLY_BAD);
	CHECK_EQ_U64(t.landed, 1);
	kv_tally_fini(&t);
}

/* A source that feeds this rank but has not joined holds every layer back;
 * one that does not feed it cannot join. */
static void sources(void)
{
	struct kv_tally t;

	CHECK(kv_tally_init(&t, 1, 4, 0x5) == 0);
	CHECK(kv_tally_join(&t, 1, 1) == -EINVAL);
	CHECK(kv_tally_join(&t, 0, 16) == 0);
	for (uint32_t qp = 1; qp <= 16; qp++)
		CHECK(kv_tally_note(&t, 0, qp, 0) == KV_TALLY_COUNTED);
	CHECK(kv_tally_note(&t, 2, 1, 0) == KV_TALLY_BAD); /* not joined */
	CHECK(kv_tally_join(&t, 2, 1) == 0);
	CHECK(kv_tally_note(&t, 2, 1, 0) == KV_TALLY_LANDED);
	kv_tally_fini(&t);
	CHECK(kv_tally_init(&t, 0, 1, 1) == -EINVAL);
	CHECK(kv_tally_init(&t, 1, KV_MAX_TP + 1, 1) == -EINVAL);
}

int main(void)
{
	per_qp();
	sources();
	CHECK_DONE();
}
