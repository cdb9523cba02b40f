// SPDX-License-Identifier: MIT
/* The one loop that empties a shared CQ: completions routed to their
 * connection by QP number, a bounded number per pass. Apart from shared.c
 * so that the region server's fuzz target runs it over its stubs. */
#include <errno.h>

#include <rdmactl/conn_core.h>

int rc_shared_drain(struct rc_shared *sh, int budget, rc_shared_fn *fn, void *arg)
{
	struct ibv_wc wc[32];
	int n, seen = 0;

	if (!sh)
		return 0;
	while (seen < budget) {
		n = rc_shared_take(sh, wc, budget - seen < 32 ? budget - seen : 32);
		if (n <= 0)
			return n < 0 ? n : seen;
		for (int j = 0; j < n; j++)
			fn(arg, rc_shared_conn(sh, wc[j].qp_num), &wc[j]);
		seen += n;
	}
	return seen;
}
