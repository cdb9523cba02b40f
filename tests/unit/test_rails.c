// SPDX-License-Identifier: MIT
/* A multi-rail transfer's findings (rails_finding): a rail is judged by its
 * rate while busy, so a slow rail is named, a rail that only started late
 * (less share, the same rate) is not, nor is a short transfer's jitter; one
 * that moved nothing while every rail had chunks is idle, and a failed rail
 * is the failover's, not a finding. And the sets of one rail, the ordinary
 * case: a client's wraps a client opened otherwise and leaves it to its
 * owner, a server's is the server alone, nothing started. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <rdmactl/server.h>

#include "rails_cmds.h"

#include "check.h"

#define MIB (1ULL << 20)

/* Two rails over 32 MiB in 1 MiB chunks: rail 1 carried a0 MiB in a_s
 * seconds of work, rail 2 the rest in b_s. */
static struct rc_rails_result two(uint64_t a0, double a_s, double b_s)
{
	struct rc_rails_result res = { .stripe = MIB, .n = 2, .failed_rail = -1 };

	res.total.bytes = 32 * MIB;
	res.rail[0] = (struct rc_rail_result){ .bytes = a0 * MIB, .chunks = a0, .busy_s = a_s };
	res.rail[1] = (struct rc_rail_result){ .bytes = (32 - a0) * MIB,
					       .chunks = 32 - a0,
					       .busy_s = b_s };
	return res;
}

static bool finding(const struct rc_rails_result *res, int i, char *msg)
{
	msg[0] = 0;
	return rails_finding(res, i, i ? "rxe_c" : "rxe_a", msg, 320);
}

/* The sets of one rail touch nothing of what they hold (which here is not
 * a client or a server at all: closing it would crash). */
static void one_rail_sets(void)
{
	long not_a_client, not_a_server;
	struct rc_client *cl = (struct rc_client *)&not_a_client;
	struct rc_server *s = (struct rc_server *)&not_a_server;
	struct rc_server_rails *sr = NULL;
	struct rc_rails *r = NULL;
	struct rc_err e;

	CHECK(rc_rails_of(cl, &r, &e) == 0);
	CHECK(rc_rails_count(r) == 1);
	CHECK(rc_rails_client(r, 0) == cl);
	CHECK(rc_rails_close(r) == 0);
	CHECK(rc_server_rails_open(s, NULL, 1, &sr, &e) == 0);
	CHECK(rc_server_rails_count(sr) == 1);
	CHECK(rc_server_rails_server(sr, 0) == s);
	CHECK(rc_server_rails_start(sr, &e) == 0);
	CHECK(rc_server_rails_close(sr, &e) == 0);
	CHECK(rc_server_rails_close(NULL, &e) == 0);
	sr = NULL;
	CHECK(rc_server_rails_open(s, NULL, 0, &sr, &e) == -EINVAL && !sr);
	CHECK(rc_server_rails_open(s, NULL, RC_RAILS_MAX + 1, &sr, &e) == -EINVAL && !sr);
}

int main(void)
{
	struct rc_rails_result res;
	char msg[320];

	/* an even split at the same rate: no finding */
	res = two(16, 1.0, 1.0);
	CHECK(!finding(&res, 0, msg) && !finding(&res, 1, msg));
	/* rail 2 started late: 6 of 32 chunks, the same 16 MiB/s while busy */
	res = two(26, 1.625, 0.375);
	CHECK(!finding(&res, 0, msg));
	CHECK(!finding(&res, 1, msg));
	/* rail 2 slow: 2 chunks in 2 s against 30 in 2 s */
	res = two(30, 2.0, 2.0);
	CHECK(!finding(&res, 0, msg));
	CHECK(finding(&res, 1, msg));
	CHECK(!strncmp(msg,
		       "rail 2 (rxe_c) carried 6.2% of the bytes at 0.008 Gb/s while busy, "
		       "far below its peers (0.126 Gb/s on average)",
		       strlen("rail 2 (rxe_c) carried 6.2% of the bytes at 0.008 Gb/s while busy, "
			      "far below its peers (0.126 Gb/s on average)")));
	/* at the line: half the peers' rate is not under half */
	res = two(16, 1.0, 2.0);
	CHECK(!finding(&res, 1, msg));
	res = two(16, 1.0, 2.1);
	CHECK(finding(&res, 1, msg));
	/* a short transfer's jitter: rail 1 at a third of rail 2's rate, but
	 * for 42 ms only (8 and 24 MiB in about 60 ms, as a loaded guest does;
	 * the floor is 0.1 s) */
	res = two(8, 0.061, 0.058);
	CHECK(!finding(&res, 0, msg));
	/* the same rates for ten times as long cost it 0.42 s: a finding */
	res = two(8, 0.61, 0.58);
	CHECK(finding(&res, 0, msg));
	/* rail 1 moved nothing though 32 chunks were there: idle */
	res = two(0, 0, 2.0);
	CHECK(finding(&res, 0, msg));
	CHECK_STR(msg,
		  "rail 1 (rxe_a) carried nothing while its peers moved 32 chunks: an idle rail");
	CHECK(!finding(&res, 1, msg));
	/* one chunk for two rails: the one without is not idle */
	res = (struct rc_rails_result){ .stripe = MIB, .n = 2, .total.bytes = MIB };
	res.rail[0] = (struct rc_rail_result){ .bytes = MIB, .chunks = 1, .busy_s = 0.1 };
	CHECK(!finding(&res, 1, msg));
	/* a failed rail is the failover's; its peer has no peer left to judge by */
	res = two(30, 2.0, 2.0);
	res.rail[1].failed = true;
	CHECK(!finding(&res, 1, msg));
	CHECK(!finding(&res, 0, msg));
	one_rail_sets();
	CHECK_DONE();
}
