// SPDX-License-Identifier: MIT
/*
 * kvxfer serve, counting notifications: a layer lands when each source
 * rank that feeds this decode rank delivered one WRITE_WITH_IMM on each of
 * its data QPs. Counting per rank would take two on one QP for a layer
 * whose other QP is still writing; a bit per QP cannot.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/kv.h>
#include <rdmactl/kv_core.h>

int kv_tally_init(struct kv_tally *t, uint32_t layers, uint32_t src_tp, uint64_t sources)
{
	memset(t, 0, sizeof(*t));
	if (layers < 1 || layers > KV_MAX_LAYERS || src_tp < 1 || src_tp > KV_MAX_TP)
		return -EINVAL;
	t->layers = layers;
	t->src_tp = src_tp;
	t->sources = src_tp < 64 ? sources & ((1ULL << src_tp) - 1) : sources;
	t->got = calloc((size_t)layers * src_tp, sizeof(*t->got));
	return t->got ? 0 : -ENOMEM;
}

void kv_tally_fini(struct kv_tally *t)
{
	free(t->got);
	t->got = NULL;
}

int kv_tally_join(struct kv_tally *t, uint32_t rank, uint32_t nqps)
{
	if (rank >= t->src_tp || !(t->sources >> rank & 1) || nqps < 1 || nqps > KV_MAX_QPS ||
	    t->want[rank])
		return -EINVAL;
	t->want[rank] = (uint16_t)((1u << nqps) - 1);
	return 0;
}

int kv_tally_note(struct kv_tally *t, uint32_t rank, uint32_t qp, uint32_t layer)
{
	uint16_t *got, bit;

	if (!t->got || rank >= t->src_tp || layer >= t->layers || qp < 1 || qp > KV_MAX_QPS ||
	    !(t->want[rank] >> (qp - 1) & 1))
		return KV_TALLY_BAD;
	got = &t->got[(size_t)layer * t->src_tp];
	bit = (uint16_t)(1u << (qp - 1));
	if (got[rank] & bit)
		return KV_TALLY_DUP;
	got[rank] |= bit;
	if (got[rank] != t->want[rank])
		return KV_TALLY_COUNTED;
	for (uint32_t k = 0; k < t->src_tp; k++)
		if (t->sources >> k & 1 && (!t->want[k] || got[k] != t->want[k]))
			return KV_TALLY_COUNTED; /* another source, or another of its QPs */
	t->landed++;
	return KV_TALLY_LANDED;
}
