// SPDX-License-Identifier: MIT
/*
 * Flat: every rank writes its block straight into each peer's receive
 * buffer, one-sided, one write with immediate data per peer and phase; a
 * phase is complete when every peer's counter moved on.
 */
#include <string.h>

#include "a2a_int.h"
#include <rdmactl/group_core.h>

int a2a_flat_phase(struct a2a *a, uint32_t iter, int ph, struct rc_err *err)
{
	int W = a->W, me = a->me, p = iter & 1, *peers = a->wait_peers, n = 0, rc;
	uint64_t *target = a->wait_target;
	/* dispatch sends by destination, combine by source */
	const uint64_t *off = ph == PH_DISPATCH ? a->soff : a->roff;
	uint8_t *src = ph == PH_DISPATCH ? a->dsend : a->csend;
	uint8_t *self = ph == PH_DISPATCH ? a->drecv[p] : a->crecv[p];
	uint64_t self_off = ph == PH_DISPATCH ? a->roff[me] : a->soff[me];

	for (int k = 1; k < W; k++) {
		int j = (me + k) % W;
		uint64_t roff = ph == PH_DISPATCH ? a2a_recv_off(a, j, me) : a2a_send_off(a, j, me);
		uint64_t raddr =
			(ph == PH_DISPATCH ? a->remote[j].drecv[p] : a->remote[j].crecv[p]) +
			roff * a->tb;

		rc = rc_group_write_imm(a->g, j, a2a_wire(a, src + off[j] * a->tb),
					(off[j + 1] - off[j]) * a->tb, a->lkey, raddr,
					a->remote[j].rkey,
					ph == PH_DISPATCH ? CH_DISPATCH : CH_COMBINE, iter, err);
		if (rc)
			return rc;
		peers[n] = j;
		target[n++] = (uint64_t)iter + 1;
	}
	/* its own block: from the CPU's copy of the send buffer */
	rc = a2a_copy_in(a, self + self_off * a->tb, src + off[me] * a->tb,
			 (off[me + 1] - off[me]) * a->tb, err);
	if (rc)
		return rc;
	return rc_group_wait_imm(a->g, peers, n, ph == PH_DISPATCH ? CH_DISPATCH : CH_COMBINE,
				 target, err);
}
