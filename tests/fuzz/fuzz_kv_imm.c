// SPDX-License-Identifier: MIT
/*
 * kvxfer's immediate values and their counting on a decode rank: each
 * 32-bit immediate decodes to fields that encode back to it, and a stream
 * of notifications (source rank, data QP, immediate), with ranks joining
 * in between, lands a layer exactly when a model kept here says every
 * source that feeds the rank delivered one on each of its data QPs, never
 * twice, never out of range.
 *
 * Input: layers, source ranks, the sources mask, then records of six
 * bytes: QP (0: the rank in the immediate joins, with 1 + byte % 16 data
 * QPs), the immediate (4 bytes, little-endian), one spare byte.
 */
#include <string.h>

#include <rdmactl/kv.h>
#include <rdmactl/kv_core.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint16_t want[KV_MAX_TP] = { 0 }, got[8][8] = { { 0 } };
	uint32_t layers, src_tp, landed = 0;
	uint64_t sources;
	struct kv_tally t;

	if (size < 3)
		return 0;
	layers = 1 + data[0] % 8;
	src_tp = 1 + data[1] % 8;
	sources = data[2] & ((1u << src_tp) - 1);
	if (kv_tally_init(&t, layers, src_tp, sources))
		return 0;
	for (size_t off = 3; off + 6 <= size; off += 6) {
		const uint8_t *rec = data + off;
		uint32_t imm = (uint32_t)rec[1] | (uint32_t)rec[2] << 8 | (uint32_t)rec[3] << 16 |
			       (uint32_t)rec[4] << 24;
		uint32_t rank = kv_imm_rank(imm), layer = kv_imm_layer(imm), qp = rec[0];
		bool in, ok, done;
		int res;

		/* The immediate is a bijection of its four fields. */
		FUZZ_CHECK(kv_imm(kv_imm_gen(imm), kv_imm_slot(imm), layer, rank) == imm);
		FUZZ_CHECK(kv_imm_gen(imm) < 256 && kv_imm_slot(imm) < KV_MAX_SLOTS &&
			   layer < KV_MAX_LAYERS && rank < KV_MAX_TP);
		if (qp == 0) {
			uint32_t n = 1 + rec[5] % 16;

			ok = rank < src_tp && sources >> rank & 1 && !want[rank];
			FUZZ_CHECK((kv_tally_join(&t, rank, n) == 0) == ok);
			if (ok)
				want[rank] = (uint16_t)((1u << n) - 1);
			continue;
		}
		res = kv_tally_note(&t, rank, qp, layer);
		in = rank < src_tp && layer < layers && qp <= KV_MAX_QPS &&
		     want[rank] >> (qp - 1) & 1;
		if (!in) {
			FUZZ_CHECK(res == KV_TALLY_BAD);
			continue;
		}
		if (got[layer][rank] >> (qp - 1) & 1) {
			FUZZ_CHECK(res == KV_TALLY_DUP);
			continue;
		}
		got[layer][rank] |= (uint16_t)(1u << (qp - 1));
		done = got[layer][rank] == want[rank];
		for (uint32_t k = 0; done && k < src_tp; k++)
			if (sources >> k & 1)
				done = want[k] && got[layer][k] == want[k];
		FUZZ_CHECK(res == (done ? KV_TALLY_LANDED : KV_TALLY_COUNTED));
		landed += done;
		FUZZ_CHECK(t.landed == landed && landed <= layers);
	}
	kv_tally_fini(&t);
	return 0;
}
