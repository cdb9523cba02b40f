// SPDX-License-Identifier: MIT
/* Latency under load and incast, their pure parts (libcore/sweep/tail.c,
 * judge.c): percentiles, who loads whom in each --load mode, the leakage
 * judged against the fleet and the port blamed for it (a bottleneck into
 * one rank blames that rank's port, not the ports that only send into it,
 * nor a rank elsewhere), Jain's index against hand-computed values, the
 * incast's steps and the step where its goodput flattens, the bounded
 * latency CDF against hand-computed quantiles. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/sweep.h>
#include <rdmactl/sweep_core.h>

#include "check.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

static void jain(void)
{
	double eq[] = { 5, 5, 5, 5 }, one[] = { 8, 0, 0, 0 }, three[] = { 1, 2, 3 },
	       two[] = { 10, 20 }, zero[] = { 0, 0 };

	CHECK(NEAR(rc_jain(eq, 4), 1));
	CHECK(NEAR(rc_jain(one, 4), 0.25));        /* 64 / (4 * 64) */
	CHECK(NEAR(rc_jain(three, 3), 36.0 / 42)); /* 6^2 / (3 * 14) */
	CHECK(NEAR(rc_jain(two, 2), 0.9));         /* 30^2 / (2 * 500) */
	CHECK(!NEAR(rc_jain(three, 3), 1.0 / 3));  /* the wrong answer: min over max */
	CHECK(!NEAR(rc_jain(three, 3), 2.0 / 3));  /* nor the mean over the max */
	CHECK(isnan(rc_jain(zero, 2)) && isnan(rc_jain(eq, 0)));
}

static void knee(void)
{
	double gp[] = { 1, 1.9, 2.0, 2.05 }, fair[] = { 1, 1, 1, 1 }, grow[] = { 1, 2, 4, 8 },
	       unfair[] = { 1, 0.99, 0.6, 0.5 };
	unsigned why;

	/* 1 -> 1.9 grew; 1.9 -> 2.0 did not (5 %): the third step (4 senders) */
	CHECK(rc_incast_knee(4, gp, fair, 0.1, 0.9, &why) == 2 && why == RC_INCAST_FLAT);
	CHECK(rc_incast_knee(4, grow, fair, 0.1, 0.9, &why) == -1 && why == 0);
	CHECK(rc_incast_knee(4, grow, unfair, 0.1, 0.9, &why) == 2 && why == RC_INCAST_UNFAIR);
	CHECK(rc_incast_knee(4, gp, unfair, 0.1, 0.9, &why) == 2 &&
	      why == (RC_INCAST_FLAT | RC_INCAST_UNFAIR));
	/* a looser growth threshold moves it: 5 % is growth at 0.04 */
	CHECK(rc_incast_knee(4, gp, fair, 0.04, 0.9, &why) == 3);

	int n[RC_INCAST_STEPS_MAX];

	CHECK(rc_incast_counts(6, n, RC_INCAST_STEPS_MAX) == 4);
	CHECK(n[0] == 1 && n[1] == 2 && n[2] == 4 && n[3] == 5);
	CHECK(rc_incast_counts(5, n, RC_INCAST_STEPS_MAX) == 3 && n[2] == 4);
	CHECK(rc_incast_counts(2, n, RC_INCAST_STEPS_MAX) == 1 && n[0] == 1);
	CHECK(rc_incast_counts(3, n, RC_INCAST_STEPS_MAX) == 2 && n[1] == 2);
}

static void tails_and_targets(void)
{
	double v[1000];
	struct rc_sweep_tail t;

	for (int i = 0; i < 1000; i++)
		v[i] = 1000 - i;
	rc_sweep_tail_of(v, 1000, &t);
	CHECK(t.n == 1000 && t.p50_us == 500 && t.p99_us == 990 && t.p999_us == 999);
	CHECK(t.max_us == 1000);
	rc_sweep_tail_of(v, 0, &t);
	CHECK(t.n == 0 && t.max_us == 0);

	/* world 4, round 0: 0-3 and 1-2 meet; 0 measures towards 3 */
	int a = 0, b = rc_sweep_partner(4, 0, 0), c = rc_sweep_partner(4, 0, b == 3 ? 1 : 3);

	CHECK(b >= 0 && c >= 0);
	for (int me = 0; me < 4; me++) {
		int other = rc_sweep_partner(4, 0, me);

		CHECK(rc_sweep_load_target(RC_SWEEP_LOAD_SAME_PAIR, 4, 0, me, a, b) ==
		      (me == b ? a : -1));
		CHECK(rc_sweep_load_target(RC_SWEEP_LOAD_SAME_PORT, 4, 0, me, a, b) ==
		      (me == a || me == b ? -1 : b));
		CHECK(rc_sweep_load_target(RC_SWEEP_LOAD_FABRIC, 4, 0, me, a, b) ==
		      (me == a || me == b ? -1 : other));
		CHECK(rc_sweep_load_target(RC_SWEEP_LOAD_NONE, 4, 0, me, a, b) == -1);
	}
	CHECK(!strcmp(rc_sweep_load_name(RC_SWEEP_LOAD_SAME_PORT), "same-port"));
	CHECK(rc_sweep_load_name(9) == NULL);
}

/* The index of c's point at rank r, or -1. */
static int point_at(const struct rc_sweep_cdf *c, int r)
{
	for (int i = 0; i < c->k; i++)
		if (c->rank[i] == r)
			return i;
	return -1;
}

/* The bounded CDF: every sample up to 128 of them, else the grid's
 * quantiles, whose p50, p99, p99.9 and max are the tail's; what a peer
 * sends is refused when it does not hold together. */
static void cdfs(void)
{
	double v[1000], few[5] = { 1, 2, 3, 4, 5 };
	struct rc_sweep_tail t;
	struct rc_sweep_cdf c, bad;
	int i50, i99, i999;

	for (int i = 0; i < 1000; i++)
		v[i] = 1000 - i;
	rc_sweep_tail_of(v, 1000, &t); /* sorts: 1 .. 1000 */
	rc_sweep_cdf_of(v, 1000, &c);
	CHECK(c.n == 1000 && c.k > 100 && c.k <= RC_SWEEP_CDF_MAX && rc_sweep_cdf_ok(&c));
	/* by hand: rank round(999 p), the value rank + 1 */
	i50 = point_at(&c, 500), i99 = point_at(&c, 989), i999 = point_at(&c, 998);
	CHECK(i50 >= 0 && c.us[i50] == 501 && c.us[i50] == t.p50_us + 1);
	CHECK(i99 >= 0 && c.us[i99] == 990 && c.us[i99] == t.p99_us);
	CHECK(i999 >= 0 && c.us[i999] == 999 && c.us[i999] == t.p999_us);
	CHECK(c.rank[c.k - 1] == 999 && c.us[c.k - 1] == 1000 && c.us[c.k - 1] == t.max_us);
	CHECK(c.rank[0] == 0 && c.us[0] == 1 && c.rank[1] == 10 && c.us[1] == 11);
	/* the wrong answers: the p99 at rank n p (990: the value 991), or the
	 * value off by one from its rank (989); nor a point between the grid's */
	CHECK(c.us[i99] != 991 && c.us[i99] != 989 && point_at(&c, 988) < 0);
	/* 128 samples or fewer: every one, the exact step curve */
	rc_sweep_cdf_of(few, 5, &c);
	CHECK(c.n == 5 && c.k == 5 && rc_sweep_cdf_ok(&c));
	for (int i = 0; i < 5; i++)
		CHECK(c.rank[i] == i && c.us[i] == i + 1);
	rc_sweep_cdf_of(v, 0, &c);
	CHECK(c.n == 0 && c.k == 0 && rc_sweep_cdf_ok(&c));

	/* a peer's CDF that does not hold together */
	rc_sweep_cdf_of(v, 1000, &c);
	bad = c, bad.k = RC_SWEEP_CDF_MAX + 1;
	CHECK(!rc_sweep_cdf_ok(&bad));
	bad = c, bad.rank[5] = bad.rank[4];
	CHECK(!rc_sweep_cdf_ok(&bad));
	bad = c, bad.us[5] = bad.us[4] - 1;
	CHECK(!rc_sweep_cdf_ok(&bad));
	bad = c, bad.us[5] = NAN;
	CHECK(!rc_sweep_cdf_ok(&bad));
	bad = c, bad.n = 2000; /* its last point is not the maximum */
	CHECK(!rc_sweep_cdf_ok(&bad));
	bad = c, bad.rank[bad.k - 1] = 1000;
	CHECK(!rc_sweep_cdf_ok(&bad));
	bad = c, bad.n = 0;
	CHECK(!rc_sweep_cdf_ok(&bad));
	bad = c, bad.k = -1;
	CHECK(!rc_sweep_cdf_ok(&bad));
}

#define W 6

struct fleet {
	struct rc_sweep_cell m[W * W];
	unsigned why[W * W];
	bool bad[W];
	int outl[W], blamed[W];
	struct rc_sweep_verdict v;
};

/* Every direction 5 us idle (p99 10 us), 1.1 to 1.3 times that loaded. */
static void calm(struct fleet *f)
{
	memset(f, 0, sizeof(*f));
	for (int i = 0; i < W; i++)
		for (int j = 0; j < W; j++) {
			struct rc_sweep_cell *c = &f->m[i * W + j];
			double k = 1.1 + ((i * 5 + j) % 3) * 0.1;

			c->bw_gbit = 100;
			c->wlat_p50_us = c->rlat_p50_us = 5;
			c->wlat_p99_us = c->rlat_p99_us = 10;
			c->wload = c->rload =
				(struct rc_sweep_tail){ 5 * k, 10 * k, 11 * k, 12 * k, 50, 0 };
		}
	f->v.why = f->why;
	f->v.node_bad = f->bad;
	f->v.node_outliers = f->outl;
	f->v.blamed = f->blamed;
}

/* A queue into rank r: every direction into it but one from rank skip
 * waits behind the bulk traffic (WRITE p50 50 times its idle, p99 too). */
static void bottleneck_into(struct fleet *f, int r, int skip)
{
	for (int x = 0; x < W; x++)
		if (x != r && x != skip)
			f->m[x * W + r].wload.p50_us = 250, f->m[x * W + r].wload.p99_us = 500;
}

static int blamed_ranks(const struct fleet *f, int side)
{
	int mask = 0;

	for (int i = 0; i < W; i++)
		mask |= (f->blamed[i] & side) ? 1 << i : 0;
	return mask;
}

static void leakage(void)
{
	static struct fleet f;
	struct rc_sweep_limits l = { 0 };

	/* healthy: leakage near 1.2, no outlier, no port blamed */
	calm(&f);
	CHECK(rc_sweep_judge(W, f.m, NULL, &l, &f.v) == 0);
	CHECK(f.v.healthy && f.v.loaded == W * (W - 1));
	CHECK(f.v.wleak_median > 1.05 && f.v.wleak_median < 1.35);
	CHECK(blamed_ranks(&f, 3) == 0);
	CHECK(isnan(rc_sweep_leak(&f.m[0], false)) == false);

	/* a bottleneck into rank 3: its directions in leak, rank 3's port is
	 * blamed as the receiver; the senders into it are not */
	calm(&f);
	bottleneck_into(&f, 3, 5);
	CHECK(rc_sweep_judge(W, f.m, NULL, &l, &f.v) == 0);
	CHECK(!f.v.healthy);
	for (int x = 0; x < W; x++)
		for (int y = 0; y < W; y++)
			if (x != y)
				CHECK(((f.why[x * W + y] & RC_SWEEP_LEAK) != 0) ==
				      (y == 3 && x != 5));
	CHECK(blamed_ranks(&f, RC_SWEEP_BLAME_RECV) == 1 << 3);
	CHECK(blamed_ranks(&f, RC_SWEEP_BLAME_SEND) == 0);

	/* the wrong answer: a bottleneck on another port (into rank 1) must
	 * not be blamed on rank 3 */
	calm(&f);
	bottleneck_into(&f, 1, 3);
	CHECK(rc_sweep_judge(W, f.m, NULL, &l, &f.v) == 0);
	CHECK(blamed_ranks(&f, RC_SWEEP_BLAME_RECV) == 1 << 1);
	CHECK(f.blamed[3] == 0);

	/* a p99 that leaks alone (a stall) is reported, not judged */
	calm(&f);
	f.m[1 * W + 2].wload.p99_us = 9000;
	CHECK(rc_sweep_judge(W, f.m, NULL, &l, &f.v) == 0 && f.v.healthy);

	/* one leaking direction: an outlier, but no port to blame */
	calm(&f);
	f.m[1 * W + 2].rload.p50_us = 900;
	CHECK(rc_sweep_judge(W, f.m, NULL, &l, &f.v) == 0);
	CHECK(f.why[1 * W + 2] == RC_SWEEP_LEAK && f.v.outliers == 1);
	CHECK(blamed_ranks(&f, 3) == 0);

	/* --leak-ratio above the bottleneck's 50: no longer an outlier */
	calm(&f);
	bottleneck_into(&f, 3, 5);
	l.leak_ratio = 80;
	CHECK(rc_sweep_judge(W, f.m, NULL, &l, &f.v) == 0 && f.v.healthy);

	/* not measured under load: no leakage, nothing judged */
	calm(&f);
	for (int k = 0; k < W * W; k++)
		f.m[k].wload.n = f.m[k].rload.n = 0;
	l.leak_ratio = 0;
	CHECK(rc_sweep_judge(W, f.m, NULL, &l, &f.v) == 0 && f.v.healthy && f.v.loaded == 0);
	CHECK(isnan(rc_sweep_leak(&f.m[1], false)));
}

int main(void)
{
	jain();
	knee();
	tails_and_targets();
	cdfs();
	leakage();
	CHECK_DONE();
}
