// SPDX-License-Identifier: MIT
/*
 * A port's congestion counters by kind, read from sysfs: the files NICs
 * name them by under /sys/class/infiniband/DEV/ports/PORT (rxe's and
 * mlx5's hw_counters, the IB port counters), summed per kind; a kind with
 * no file on this NIC is absent, not zero. sweep --load and --incast read
 * them around their loaded phases, alltoall --background around its loaded
 * pass.
 */
#include <stdio.h>

#include <rdmactl/dev.h>
#include <rdmactl/dev_core.h>

const char *rc_cong_name(int k)
{
	static const char *const names[RC_CONG_N] = {
		"retransmissions", "out_of_sequence", "duplicate_requests", "rnr_naks",  "cnp_sent",
		"cnp_handled",     "ecn_marked",      "discards",           "xmit_wait",
	};

	return k >= 0 && k < RC_CONG_N ? names[k] : NULL;
}

bool rc_sysfs_u64(const char *path, uint64_t *v)
{
	FILE *f = fopen(path, "r");
	unsigned long long x = 0;
	bool ok;

	if (!f)
		return false;
	ok = fscanf(f, "%llu", &x) == 1;
	fclose(f);
	*v = x;
	return ok;
}

/* The files that count each kind (rc_cong_name's order). */
static const char *const cong_files[RC_CONG_N][5] = {
	{ "hw_counters/completer_retry_err", "hw_counters/local_ack_timeout_err",
	  "hw_counters/roce_adp_retrans", NULL },
	{ "hw_counters/rcvd_seq_err", "hw_counters/out_of_seq_request",
	  "hw_counters/out_of_sequence", "hw_counters/packet_seq_err", NULL },
	{ "hw_counters/duplicate_request", NULL },
	{ "hw_counters/rcvd_rnr_err", "hw_counters/send_rnr_err", "hw_counters/rnr_nak_retry_err",
	  NULL },
	{ "hw_counters/np_cnp_sent", NULL },
	{ "hw_counters/rp_cnp_handled", NULL },
	{ "hw_counters/np_ecn_marked_roce_packets", NULL },
	{ "counters/port_rcv_discards", "counters/port_xmit_discards", "hw_counters/out_of_buffer",
	  NULL },
	{ "counters/port_xmit_wait", NULL },
};

void rc_cong_read(const char *sysfs, const char *dev, int port, struct rc_cong *c)
{
	char path[512];

	*c = (struct rc_cong){ 0 };
	if (!dev || !dev[0] || port < 1)
		return;
	for (int k = 0; k < RC_CONG_N; k++)
		for (int f = 0; cong_files[k][f]; f++) {
			uint64_t v;

			snprintf(path, sizeof(path), "%s/class/infiniband/%.64s/ports/%d/%s",
				 sysfs ? sysfs : "/sys", dev, port, cong_files[k][f]);
			if (!rc_sysfs_u64(path, &v))
				continue;
			c->val[k] += v;
			c->present |= 1u << k;
		}
}

void rc_cong_moved(const struct rc_cong *a, const struct rc_cong *b, struct rc_cong *moved)
{
	moved->present = a->present & b->present;
	moved->pad = 0;
	for (int k = 0; k < RC_CONG_N; k++)
		moved->val[k] = (moved->present >> k & 1) && b->val[k] > a->val[k]
					? b->val[k] - a->val[k]
					: 0;
}
