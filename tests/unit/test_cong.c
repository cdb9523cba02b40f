// SPDX-License-Identifier: MIT
/* A port's congestion counters (libcore/verbs/cong.c) from crafted sysfs
 * trees: an mlx5-like port (CNP and ECN files, discards counted in two
 * files and summed) and an rxe-like one (no CNP, ECN or port counters:
 * those kinds absent, not 0); what moved between two readings, a counter
 * that went back counted as no move, a kind missing from one reading not
 * present; no device or port 0 reads nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdmactl/dev.h>

#include "check.h"

static char root[64];

static void put(const char *dev, const char *file, unsigned long long v)
{
	char path[512], dir[512];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/class/infiniband/%s/ports/1/%s", root, dev, file);
	*strrchr(dir, '/') = '\0';
	for (char *p = dir + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(dir, 0755);
		*p = '/';
	}
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/1/%s", root, dev, file);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fprintf(f, "%llu\n", v);
		fclose(f);
	}
}

static int kind(const char *name)
{
	for (int k = 0; k < RC_CONG_N; k++)
		if (!strcmp(rc_cong_name(k), name))
			return k;
	return -1;
}

static bool has(const struct rc_cong *c, const char *name)
{
	return c->present >> kind(name) & 1;
}

static void mlx5_like(void)
{
	struct rc_cong a, b, d;

	put("mlx5_0", "hw_counters/np_cnp_sent", 10);
	put("mlx5_0", "hw_counters/rp_cnp_handled", 7);
	put("mlx5_0", "hw_counters/out_of_sequence", 3);
	put("mlx5_0", "counters/port_rcv_discards", 100);
	put("mlx5_0", "counters/port_xmit_discards", 5);
	put("mlx5_0", "hw_counters/np_ecn_marked_roce_packets", 2);
	put("mlx5_0", "hw_counters/unrelated_err", 9);
	rc_cong_read(root, "mlx5_0", 1, &a);
	CHECK(has(&a, "cnp_sent") && has(&a, "cnp_handled") && has(&a, "ecn_marked"));
	CHECK(has(&a, "out_of_sequence") && has(&a, "discards"));
	CHECK(!has(&a, "retransmissions") && !has(&a, "xmit_wait") && !has(&a, "rnr_naks"));
	CHECK_EQ_U64(a.val[kind("discards")], 105);
	CHECK_EQ_U64(a.val[kind("cnp_sent")], 10);
	/* the congestion of a loaded phase: CNPs, ECN marks, discards */
	put("mlx5_0", "hw_counters/np_cnp_sent", 250);
	put("mlx5_0", "hw_counters/np_ecn_marked_roce_packets", 40);
	put("mlx5_0", "counters/port_xmit_discards", 8);
	put("mlx5_0", "hw_counters/rp_cnp_handled", 3); /* went back (a reset) */
	rc_cong_read(root, "mlx5_0", 1, &b);
	rc_cong_moved(&a, &b, &d);
	CHECK(d.present == a.present);
	CHECK_EQ_U64(d.val[kind("cnp_sent")], 240);
	CHECK_EQ_U64(d.val[kind("ecn_marked")], 38);
	CHECK_EQ_U64(d.val[kind("discards")], 3);
	CHECK_EQ_U64(d.val[kind("cnp_handled")], 0);
	CHECK_EQ_U64(d.val[kind("out_of_sequence")], 0);
	/* a kind that one reading lacks is not present in the move */
	b.present &= ~(1u << kind("cnp_sent"));
	rc_cong_moved(&a, &b, &d);
	CHECK(!has(&d, "cnp_sent"));
	CHECK_EQ_U64(d.val[kind("cnp_sent")], 0);
}

static void rxe_like(void)
{
	struct rc_cong a, b, d;

	put("rxe_a", "hw_counters/completer_retry_err", 4);
	put("rxe_a", "hw_counters/rcvd_seq_err", 1);
	put("rxe_a", "hw_counters/duplicate_request", 0);
	put("rxe_a", "hw_counters/rcvd_rnr_err", 0);
	put("rxe_a", "hw_counters/send_rnr_err", 0);
	rc_cong_read(root, "rxe_a", 1, &a);
	CHECK(has(&a, "retransmissions") && has(&a, "duplicate_requests") && has(&a, "rnr_naks"));
	CHECK(!has(&a, "cnp_sent") && !has(&a, "ecn_marked") && !has(&a, "discards"));
	put("rxe_a", "hw_counters/completer_retry_err", 28);
	put("rxe_a", "hw_counters/duplicate_request", 5);
	rc_cong_read(root, "rxe_a", 1, &b);
	rc_cong_moved(&a, &b, &d);
	CHECK_EQ_U64(d.val[kind("retransmissions")], 24);
	CHECK_EQ_U64(d.val[kind("duplicate_requests")], 5);
	CHECK_EQ_U64(d.val[kind("out_of_sequence")], 0);
	/* another port, no device, port 0: nothing present */
	rc_cong_read(root, "rxe_a", 2, &a);
	CHECK(a.present == 0);
	rc_cong_read(root, NULL, 1, &a);
	CHECK(a.present == 0);
	rc_cong_read(root, "rxe_a", 0, &a);
	CHECK(a.present == 0);
}

int main(void)
{
	char cmd[128];

	snprintf(root, sizeof(root), "/tmp/test_cong.XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	for (int k = 0; k < RC_CONG_N; k++)
		CHECK(rc_cong_name(k) != NULL && kind(rc_cong_name(k)) == k);
	CHECK(rc_cong_name(RC_CONG_N) == NULL && rc_cong_name(-1) == NULL);
	mlx5_like();
	rxe_like();
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", root);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", root);
	CHECK_DONE();
}
