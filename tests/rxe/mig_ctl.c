// SPDX-License-Identifier: MIT
/*
 * Migration control messages to `rdmactl register`, as any connected
 * client could send them (tests/rxe/migrate.bats): forged steps, hashes.
 *
 *   mig_ctl HOST:PORT/REGION TOKEN STEP [ARG [ARG2]]
 *   mig_ctl HOST:PORT/REGION TOKEN - <SCRIPT
 *
 * TOKEN: the token proved, admin or data ("-": none). STEP: track, take,
 * fence, unfence, cutover (ARG: the new home, then the move id, 0 when
 * left out), drop, where, hash (ARG:
 * how many times the whole region, in one request, default 1), or blocks
 * (ARG: OFFSET, the digest of the 64 KiB block there, RC_HASH_BLOCKS, of
 * the source's frozen copy; printed as digest=HEX). hashes K: K
 * requests of the whole region (FIRST to LAST), all posted before any
 * answer is read; $MIG_CTL_DONE is created once the last answer is in. ARG for the
 * other steps: the move id, "@" for the one TRACK answered on this
 * connection. A SCRIPT holds a STEP [ARG] a line, "sleep S" or "wait PATH", all on one
 * connection. With $MIG_CTL_MARK set, that file is created once connected.
 *
 * Prints "status=S bytes=B msg=M" (the server's answer) for each step and
 * exits 0 when the server accepted the (last) step, 1 when it refused it
 * or did not answer, 2 on usage.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdmactl/client.h>
#include <rdmactl/ctrl.h>
#include <rdmactl/parse.h>
#include <rdmactl/sha256.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/ctrl_core.h>
#include <rdmactl/client_core.h>

static const char *steps[] = { "", "track", "take", "fence", "unfence", "cutover", "drop", "where" };
static uint32_t move; /* what TRACK answered last */

static int one(struct rc_client *cl, const char *step, const char *arg, const char *arg2)
{
	unsigned char req[RC_CTRL_MSG_MAX], resp[RC_CTRL_MSG_MAX];
	struct rc_extent ext[RC_HASH_MAX_EXT];
	struct rc_mig_resp r = { 0 };
	struct rc_err e;
	int len = -1, n;
	double t0;

	if (!strcmp(step, "hash")) {
		struct rc_hash_req h = { .ext = ext, .flags = RC_MIG_FIRST | RC_MIG_LAST };
		long k = arg ? strtol(arg, NULL, 10) : 1;

		if (k < 1 || k > RC_HASH_MAX_EXT)
			return 2;
		snprintf(h.region, sizeof(h.region), "%s", cl->region.name);
		for (h.n = 0; h.n < (uint32_t)k; h.n++)
			ext[h.n] =
				(struct rc_extent){ .src = 0, .dst = 0, .len = cl->region.length };
		len = rc_ctrl_encode_hash(req, sizeof(req), 7, &h);
	} else if (!strcmp(step, "blocks")) {
		struct rc_hash_req h = { .ext = ext,
					 .n = 1,
					 .flags = RC_MIG_FIRST | RC_MIG_LAST | RC_HASH_BLOCKS };
		uint64_t off = arg ? strtoull(arg, NULL, 10) : 0;

		snprintf(h.region, sizeof(h.region), "%s", cl->region.name);
		ext[0] = (struct rc_extent){ .src = off, .dst = off, .len = RC_MIG_BLOCK };
		len = rc_ctrl_encode_hash(req, sizeof(req), 7, &h);
	} else {
		struct rc_mig_cmd c = { 0 };

		for (size_t i = 1; i < sizeof(steps) / sizeof(steps[0]); i++)
			if (!strcmp(step, steps[i]))
				c.step = (uint32_t)i;
		if (!c.step)
			return 2;
		snprintf(c.region, sizeof(c.region), "%s", cl->region.name);
		if (c.step == RC_MIG_CUTOVER) {
			snprintf(c.arg, sizeof(c.arg), "%s", arg ? arg : "");
			arg = arg2; /* the move id */
		}
		if (arg)
			c.move = !strcmp(arg, "@") ? move : (uint32_t)strtoul(arg, NULL, 10);
		len = rc_ctrl_encode_mig_cmd(req, sizeof(req), 7, &c);
	}
	t0 = rc_now();
	n = rc_client_ctrl(cl, req, (size_t)len, resp, sizeof(resp), 120000, &e);
	fprintf(stderr, "%s answered in %.0f ms\n", step, (rc_now() - t0) * 1000);
	if (n < 0) {
		printf("no answer: %s\n", e.msg);
		return 1;
	}
	if (!strcmp(step, "take")) {
		struct rc_hash_req d = { .ext = ext };

		if (!rc_ctrl_decode_dirty(resp, (size_t)n, &d, RC_HASH_MAX_EXT)) {
			printf("status=0 extents=%u\n", d.n);
			return 0;
		}
	}
	if (rc_ctrl_decode_mig_resp(resp, (size_t)n, &r)) {
		printf("a malformed answer\n");
		return 1;
	}
	if (!strcmp(step, "blocks")) {
		char hex[2 * RC_SHA256_LEN + 1];

		rc_sha256_hex(r.digest, hex);
		printf("status=%d digest=%s msg=%s\n", r.status, hex, r.msg);
		return r.status ? 1 : 0;
	}
	printf("status=%d bytes=%llu msg=%s\n", r.status, (unsigned long long)r.bytes, r.msg);
	fflush(stdout);
	if (!strcmp(step, "track") && !r.status)
		move = (uint32_t)r.bytes;
	return r.status ? 1 : 0;
}

/* K hash requests of the whole region, FIRST to LAST, all posted at once on
 * the connection before any answer is read (as a client may); $MIG_CTL_DONE,
 * when set, is created once the last answer is in. */
static int hashes(struct rc_client *cl, int k)
{
	struct rc_conn *c = cl->conns[0];
	struct rc_extent x = { .src = 0, .dst = 0, .len = cl->region.length };
	struct {
		unsigned char req[16][RC_CTRL_MSG_MAX];
		unsigned char resp[16][RC_CTRL_MSG_MAX];
	} *b = calloc(1, sizeof(*b));
	struct ibv_mr *mr;
	struct ibv_wc wc[4];
	struct rc_err e;
	int got = 0, bad = 0;
	double t0 = rc_now();

	if (!b || k < 1 || k > 16)
		return 2;
	mr = ibv_reg_mr(c->pd, b, sizeof(*b), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		return 1;
	for (int i = 0; i < k; i++)
		if (rc_post_recv(c, b->resp[i], RC_CTRL_MSG_MAX, mr->lkey, (uint64_t)i, &e))
			return 1;
	for (int i = 0; i < k; i++) {
		struct rc_hash_req h = { .ext = &x,
					 .n = 1,
					 .flags = (i == 0 ? RC_MIG_FIRST : 0) |
						  (i == k - 1 ? RC_MIG_LAST : 0) };
		int len;

		snprintf(h.region, sizeof(h.region), "%s", cl->region.name);
		len = rc_ctrl_encode_hash(b->req[i], RC_CTRL_MSG_MAX, (uint32_t)i, &h);
		if (len < 0 || rc_post_send(c, b->req[i], (uint32_t)len, mr->lkey, (uint64_t)i, &e))
			return 1;
	}
	while (got < k) {
		int n = rc_poll(c, wc, 4, 120000, &e);

		if (n < 0) {
			printf("no answer: %s\n", e.msg);
			return 1;
		}
		for (int i = 0; i < n; i++) {
			struct rc_mig_resp r;

			if (rc_wrid_op(wc[i].wr_id) != RC_OP_RECV)
				continue;
			got++;
			if (rc_ctrl_decode_mig_resp(b->resp[wc[i].wr_id & RC_WRID_MASK],
						    wc[i].byte_len, &r) ||
			    r.status) {
				printf("hash %d: status=%d msg=%s\n",
				       (int)(wc[i].wr_id & RC_WRID_MASK), r.status, r.msg);
				bad++;
			}
		}
	}
	if (getenv("MIG_CTL_DONE")) {
		FILE *f = fopen(getenv("MIG_CTL_DONE"), "w");

		if (f)
			fclose(f);
	}
	printf("status=%d answers=%d in %.0f ms\n", bad ? -1 : 0, got, (rc_now() - t0) * 1000);
	ibv_dereg_mr(mr);
	free(b);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct rc_client_opts o = { .nconns = 1 };
	struct rc_client *cl;
	struct rc_target t;
	struct rc_err e;
	char line[512];
	int rc = 0;

	if (argc < 4 || rc_parse_target(argv[1], &t)) {
		fprintf(stderr, "usage: mig_ctl HOST:PORT/REGION TOKEN STEP [ARG]\n");
		return 2;
	}
	/* TOKEN may be the admin token or the data one: the admin role first
	 * (a server without an admin token takes it as data), then the data role. */
	if (strcmp(argv[2], "-"))
		o.token = o.admin_token = argv[2];
	o.conn.timeout_ms = 60000;
	rc = rc_client_open(&t, &o, &cl, &e);
	if (rc && o.admin_token) {
		o.admin_token = NULL;
		rc = rc_client_open(&t, &o, &cl, &e);
	}
	if (rc) {
		printf("connect failed: %s\n", e.msg);
		return 1;
	}
	if (getenv("MIG_CTL_MARK")) {
		FILE *f = fopen(getenv("MIG_CTL_MARK"), "w");

		if (f)
			fclose(f);
	}
	if (!strcmp(argv[3], "hashes")) {
		rc = hashes(cl, argc > 4 ? atoi(argv[4]) : 1);
		rc_client_close(cl);
		return rc;
	}
	if (strcmp(argv[3], "-")) {
		rc = one(cl, argv[3], argc > 4 ? argv[4] : NULL, argc > 5 ? argv[5] : NULL);
		rc_client_close(cl);
		return rc;
	}
	while (fgets(line, sizeof(line), stdin)) {
		char *step = strtok(line, " \t\n"), *arg = strtok(NULL, " \t\n"),
		     *arg2 = strtok(NULL, " \t\n");

		if (!step)
			continue;
		if (!strcmp(step, "sleep") && arg) {
			nanosleep(&(struct timespec){ .tv_sec = atoi(arg) }, NULL);
			continue;
		}
		if (!strcmp(step, "wait") && arg) { /* for PATH to exist, 60 s at most */
			for (int i = 0; i < 6000 && access(arg, F_OK); i++)
				nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
			continue;
		}
		rc = one(cl, step, arg, arg2);
	}
	rc_client_close(cl);
	return rc;
}
