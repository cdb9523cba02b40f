// SPDX-License-Identifier: MIT
/*
 * Ring: n-1 steps. In step s every rank holds the blocks that rank o =
 * rank - s + 1 sent out and that are still on their way; it writes the one
 * for its successor into the successor's receive buffer, and the rest into
 * the successor's staging area for step s, then a zero-length write with
 * immediate data that says the step landed (RC keeps the order). Only
 * neighbours are connected; the CPU drives it, no GPU core is involved.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "a2a_int.h"
#include <rdmactl/group_core.h>

/* Tokens rank o sends rank d in phase ph. */
static uint64_t cnt(const struct a2a *a, int ph, int o, int d)
{
	return ph == PH_DISPATCH ? a->o->counts[o * a->W + d] : a->o->counts[d * a->W + o];
}

/* Tokens of x's staging for step s (1..W-2): what origin x - s still sends
 * beyond x. */
static uint64_t stage_size(const struct a2a *a, int x, int ph, int s)
{
	int W = a->W, o = ((x - s) % W + W) % W;
	uint64_t n = 0;

	for (int k = s + 1; k < W; k++)
		n += cnt(a, ph, o, (o + k) % W);
	return n;
}

/* Every rank x's staging at once (stage_size summed over both phases and
 * the steps 1..W-2, twice: both parities), in one pass over counts in
 * memory order: origin o's block for d (k = d - o around the ring, k >= 2)
 * stays in the staging of each rank strictly between them, o + 1 ..
 * o + k - 1, so it is added over that circular range through a difference
 * array. Dispatch reads counts[o][d], combine counts[d][o]: each entry is
 * both, one block a phase. */
int a2a_stage_tokens_all(const struct a2a *a, uint64_t *st)
{
	int W = a->W;
	uint64_t *diff = calloc((size_t)W + 1, sizeof(uint64_t)), run = 0;

	if (!diff)
		return -ENOMEM;
	for (int i = 0; i < W; i++)
		for (int j = 0; j < W; j++) {
			uint64_t v = 2 * a->o->counts[(size_t)i * (size_t)W + (size_t)j];

			if (!v)
				continue;
			/* dispatch: o = i, d = j; combine: o = j, d = i */
			for (int ph = 0; ph < 2; ph++) {
				int o = ph ? j : i, d = ph ? i : j, k = ((d - o) % W + W) % W;
				int from = (o + 1) % W, len = k - 1;

				if (len < 1)
					continue;
				diff[from] += v;
				if (from + len <= W) {
					diff[from + len] -= v;
				} else {
					diff[W] -= v;
					diff[0] += v;
					diff[from + len - W] -= v;
				}
			}
		}
	for (int x = 0; x < W; x++)
		st[x] = run += diff[x];
	free(diff);
	return 0;
}

/* Where x's staging for (phase, parity, step) starts, in tokens. */
static uint64_t stage_off(const struct a2a *a, int x, int ph, int p, int s)
{
	uint64_t off = 0;

	for (int f = 0; f < ph * 2 + p; f++)
		for (int t = 1; t < a->W - 1; t++)
			off += stage_size(a, x, f / 2, t);
	for (int t = 1; t < s; t++)
		off += stage_size(a, x, ph, t);
	return off;
}

int a2a_ring_phase(struct a2a *a, uint32_t iter, int ph, struct rc_err *err)
{
	int W = a->W, me = a->me, p = iter & 1, succ = (me + 1) % W, pred = (me + W - 1) % W;
	int ch = ph == PH_DISPATCH ? CH_DISPATCH : CH_COMBINE, rc;
	size_t tb = a->tb;
	uint64_t base = (uint64_t)iter * (uint64_t)(W - 1);

	/* my own block: from the CPU's copy of the send buffer */
	if (ph == PH_DISPATCH)
		rc = a2a_copy_in(a, a->drecv[p] + a->roff[me] * tb, a->dsend + a->soff[me] * tb,
				 (a->soff[me + 1] - a->soff[me]) * tb, err);
	else
		rc = a2a_copy_in(a, a->crecv[p] + a->soff[me] * tb, a->csend + a->roff[me] * tb,
				 (a->roff[me + 1] - a->roff[me]) * tb, err);
	if (rc)
		return rc;
	for (int s = 1; s < W; s++) {
		int o = ((me - s + 1) % W + W) % W;
		uint64_t in = 0, out = 0;

		if (s > 1) {
			uint64_t target = base + (uint64_t)(s - 1);

			rc = rc_group_wait_imm(a->g, &pred, 1, ch, &target, err);
			if (rc)
				return rc;
		}
		for (int k = s; k < W; k++) {
			int d = (o + k) % W;
			uint64_t n = cnt(a, ph, o, d);
			uint8_t *src;
			uint64_t raddr;

			if (s == 1)
				src = ph == PH_DISPATCH ? a->dsend + a->soff[d] * tb
							: a->csend + a->roff[d] * tb;
			else
				src = a->stage + (stage_off(a, me, ph, p, s - 1) + in) * tb;
			in += n;
			if (k == s) /* the successor's own: its receive buffer */
				raddr = ph == PH_DISPATCH ? a->remote[succ].drecv[p] +
								    a2a_recv_off(a, succ, o) * tb
							  : a->remote[succ].crecv[p] +
								    a2a_send_off(a, succ, o) * tb;
			else {
				raddr = a->remote[succ].stage +
					(stage_off(a, succ, ph, p, s) + out) * tb;
				out += n;
			}
			if (!n)
				continue;
			rc = rc_group_write_imm(a->g, succ, a2a_wire(a, src), n * tb, a->lkey,
						raddr, a->remote[succ].rkey, -1, 0, err);
			if (rc)
				return rc;
		}
		rc = rc_group_write_imm(a->g, succ, a2a_wire(a, a->mem), 0, a->lkey,
					a->remote[succ].drecv[p], a->remote[succ].rkey, ch, iter,
					err);
		if (rc)
			return rc;
	}
	uint64_t target = base + (uint64_t)(W - 1);

	return rc_group_wait_imm(a->g, &pred, 1, ch, &target, err);
}
