// SPDX-License-Identifier: MIT
/* sweep's pure parts (libcore/sweep): the circle schedule for worlds of 2
 * to 64, even and odd; the --pairs file; median and MAD; the judgement on
 * crafted matrices: a healthy fleet (no outlier: the wrong answer shown
 * false), one slow pair, one asymmetric pair, one slow node, a failed
 * pair, the hard bounds against the link rate and latency, pairs not asked
 * for; the rate while it flows (a stall in one chunk) and a fleet on one
 * device, whose loopback bandwidth is not judged; the second look at a
 * latency that stands out (picked, merged as the lower median). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/sweep.h>
#include <rdmactl/sweep_core.h>

#include "check.h"

typedef int (*partner_fn)(int world, int round, int rank);

/* Problems with a schedule: a rank paired with itself or out of range, a
 * pairing that is not mutual, a rank twice in a round, byes other than one
 * a round for an odd world, a pair met other than once. */
static int schedule_problems(int W, partner_fn partner)
{
	int R = W % 2 ? W : W - 1, bad = 0;
	int *met = calloc((size_t)W * (size_t)W, sizeof(int));
	int *busy = calloc((size_t)W, sizeof(int));

	if (!met || !busy)
		bad++;
	for (int r = 0; !bad && r < R; r++) {
		int byes = 0;

		memset(busy, 0, (size_t)W * sizeof(int));
		for (int i = 0; i < W; i++) {
			int p = partner(W, r, i);

			if (p < 0) {
				byes++;
				continue;
			}
			bad += p == i || p >= W || partner(W, r, p) != i;
			busy[i]++;
			if (i < p && p < W)
				met[i * W + p]++;
		}
		for (int i = 0; i < W; i++)
			bad += busy[i] > 1;
		bad += byes != W % 2;
	}
	for (int i = 0; !bad && i < W; i++)
		for (int j = i + 1; j < W; j++)
			bad += met[i * W + j] != 1;
	free(met);
	free(busy);
	return bad;
}

/* A plausible but wrong schedule: rank i meets i + r + 1 (not mutual). */
static int shifted(int world, int round, int rank)
{
	return (rank + round + 1) % world;
}

static void schedules(void)
{
	for (int W = 2; W <= 64; W++) {
		CHECK(rc_sweep_rounds(W) == (W % 2 ? W : W - 1));
		if (schedule_problems(W, rc_sweep_partner)) {
			fprintf(stderr, "world %d: the schedule is wrong\n", W);
			check_failures++;
		}
	}
	/* the wrong answer: the checker does see a bad schedule */
	for (int W = 3; W <= 9; W++)
		CHECK(schedule_problems(W, shifted) > 0);
	CHECK(rc_sweep_rounds(1) == 0);
	CHECK(rc_sweep_partner(1, 0, 0) == -1);
	CHECK(rc_sweep_partner(4, 3, 0) == -1); /* past the last round */
	CHECK(rc_sweep_partner(4, 0, 4) == -1);
}

/* Problems with the turns of every round of world W whose ranks have the
 * ports port[]: a pair without a turn or with two, two pairs of one turn on
 * one port, more turns than first fit gives (none counted past the last). */
static int turn_problems(int W, const int *port, int nports, int want_max)
{
	int turn[64], bad = 0, most = 0;

	for (int r = 0; r < rc_sweep_rounds(W); r++) {
		int turns = rc_sweep_turns(W, r, port, nports, turn);

		most = turns > most ? turns : most;
		for (int i = 0; i < W; i++) {
			int p = rc_sweep_partner(W, r, i);

			bad += (p < 0) != (turn[i] < 0) || (p >= 0 && turn[p] != turn[i]);
			bad += turn[i] >= turns;
			for (int j = 0; j < W; j++) {
				int q = rc_sweep_partner(W, r, j);

				/* another pair, in the same turn, on one of i's ports */
				if (p >= 0 && q >= 0 && j != i && j != p && turn[j] == turn[i] &&
				    (port[j] == port[i] || port[j] == port[p] ||
				     port[q] == port[i] || port[q] == port[p]))
					bad++;
			}
		}
	}
	return bad + (most != want_max);
}

static void turns(void)
{
	int own[8], one[8], two[8], hosts[8], key_port[8], turn[8];
	uint64_t keys[8] = { 7, 9, 7, 7, 9, 3, 3, 9 };

	for (int i = 0; i < 8; i++) {
		own[i] = i;       /* a port a rank: every pair at once */
		one[i] = 0;       /* one device: one pair at a time */
		two[i] = i % 2;   /* two ranks' ports alternate */
		hosts[i] = i / 4; /* two hosts of one NIC each, 4 ranks each */
	}
	CHECK(turn_problems(8, own, 8, 1) == 0);
	CHECK(turn_problems(8, one, 1, 4) == 0);
	CHECK(turn_problems(7, one, 1, 3) == 0);
	CHECK(turn_problems(2, one, 1, 1) == 0);
	CHECK(turn_problems(8, two, 2, 4) == 0);
	CHECK(turn_problems(8, hosts, 2, 4) == 0);
	/* the wrong answer: a shared port judged as if it were a port a rank */
	CHECK(turn_problems(8, one, 1, 1) > 0);
	CHECK(rc_sweep_turns(8, 0, own, 8, turn) == 1 && turn[0] == turn[7]);
	CHECK(rc_sweep_port_ids(8, keys, key_port) == 3);
	CHECK(key_port[0] == 0 && key_port[1] == 1 && key_port[2] == 0 && key_port[5] == 2 &&
	      key_port[7] == 1);
}

static void pairs(void)
{
	uint8_t want[4 * 4];
	struct rc_err e;

	CHECK(rc_sweep_pairs_parse("0 2\n# a comment\n\n3 1 # trailing\n2 0\n", 4, want, &e) == 0);
	CHECK(want[0 * 4 + 2] && want[2 * 4 + 0] && want[1 * 4 + 3] && want[3 * 4 + 1]);
	CHECK(!want[0 * 4 + 1] && !want[2 * 4 + 3] && !want[0 * 4 + 0]);
	CHECK(rc_sweep_pairs_parse("0 4\n", 4, want, &e) == -EINVAL);
	CHECK(strstr(e.msg, "line 1") != NULL);
	CHECK(rc_sweep_pairs_parse("0 1\n2 2\n", 4, want, &e) == -EINVAL);
	CHECK(strstr(e.msg, "line 2: rank 2 paired with itself") != NULL);
	CHECK(rc_sweep_pairs_parse("0 1 2\n", 4, want, &e) == -EINVAL);
	CHECK(rc_sweep_pairs_parse("0 x\n", 4, want, &e) == -EINVAL);
	CHECK(rc_sweep_pairs_parse("# nothing\n", 4, want, &e) == -EINVAL);
	CHECK(strstr(e.msg, "no pair") != NULL);
	CHECK(rc_sweep_pairs_load("/nonexistent/pairs", 4, want, &e) == -ENOENT);
}

static void stats(void)
{
	double v[] = { 5, 1, 3, 2, 4 }, w[] = { 1, 2, 3, 100 };

	CHECK(rc_sweep_median(v, 5) == 3);
	CHECK(v[0] == 5); /* left as it was */
	CHECK(rc_sweep_median(w, 4) == 2.5);
	CHECK(rc_sweep_mad(v, 5, 3) == 1);
	CHECK(rc_sweep_mad(w, 4, 2.5) == 1); /* |1-2.5|,|2-2.5|,|3-2.5|,97.5 -> 1 */
	CHECK(isnan(rc_sweep_median(v, 0)));
}

#define W 6

struct fleet {
	struct rc_sweep_cell m[W * W];
	double rate[W];
	unsigned why[W * W];
	bool bad[W];
	int outl[W];
	struct rc_sweep_verdict v;
};

/* Every direction about 100 Gbit/s (a little spread), 5 us WRITE, 6 us READ. */
static void healthy(struct fleet *f)
{
	memset(f, 0, sizeof(*f));
	for (int i = 0; i < W; i++) {
		f->rate[i] = 200;
		for (int j = 0; j < W; j++) {
			struct rc_sweep_cell *c = &f->m[i * W + j];

			c->bw_gbit = 100 + ((i * 7 + j * 3) % 5) - 2;
			c->wlat_p50_us = 5 + ((i + j) % 3) * 0.1;
			c->rlat_p50_us = 6 + ((i * j) % 3) * 0.1;
			c->wlat_p99_us = c->wlat_p50_us * 2;
			c->rlat_p99_us = c->rlat_p50_us * 2;
		}
	}
	f->v.why = f->why;
	f->v.node_bad = f->bad;
	f->v.node_outliers = f->outl;
}

static int judge(struct fleet *f, const struct rc_sweep_limits *l)
{
	struct rc_sweep_limits none = { 0 };

	return rc_sweep_judge(W, f->m, f->rate, l ? l : &none, &f->v);
}

static int count_why(const struct fleet *f, unsigned bit)
{
	int n = 0;

	for (int k = 0; k < W * W; k++)
		n += (f->why[k] & bit) != 0;
	return n;
}

static int count_bits(const unsigned *why, int n, unsigned bit)
{
	int c = 0;

	for (int k = 0; k < n; k++)
		c += (why[k] & bit) != 0;
	return c;
}

static void judgements(void)
{
	static struct fleet f;
	struct rc_sweep_limits l = { 0 };

	/* healthy: no outlier, no node */
	healthy(&f);
	CHECK(judge(&f, NULL) == 0);
	CHECK(f.v.healthy);
	CHECK(f.v.outliers == 0 && f.v.bad_pairs == 0 && f.v.bad_nodes == 0);
	CHECK(f.v.measured == W * (W - 1));
	CHECK(fabs(f.v.bw_median - 100) <= 2);
	/* the link rate bound passes too at half the rate, fails at 0.6 */
	l.min_fraction = 0.45;
	CHECK(judge(&f, &l) == 0 && f.v.healthy);
	l.min_fraction = 0.6;
	CHECK(judge(&f, &l) == 0 && !f.v.healthy);
	CHECK(count_why(&f, RC_SWEEP_BELOW_LINE) == W * (W - 1));
	l.min_fraction = 0;
	/* latency bound: 5.5 us fails every READ (6 us), 10 us none */
	l.max_lat_us = 5.5;
	CHECK(judge(&f, &l) == 0 && count_why(&f, RC_SWEEP_LAT_MAX) == W * (W - 1));
	l.max_lat_us = 10;
	CHECK(judge(&f, &l) == 0 && f.v.healthy);

	/* one slow pair, both directions: that pair, no node */
	healthy(&f);
	f.m[1 * W + 3].bw_gbit = 20;
	f.m[3 * W + 1].bw_gbit = 22;
	CHECK(judge(&f, NULL) == 0);
	CHECK(!f.v.healthy);
	CHECK(f.v.outliers == 2 && f.v.bad_pairs == 1 && f.v.bad_nodes == 0);
	CHECK(f.why[1 * W + 3] == RC_SWEEP_SLOW && f.why[3 * W + 1] == RC_SWEEP_SLOW);
	CHECK(count_why(&f, RC_SWEEP_ASYM) == 0);

	/* the fleet's bandwidth not judged (slow_ratio and asym_ratio < 0): a
	 * slow pair passes, its latency still judged */
	healthy(&f);
	f.m[1 * W + 3].bw_gbit = 1;
	f.m[3 * W + 1].wlat_p50_us = 500;
	l = (struct rc_sweep_limits){ .slow_ratio = -1, .asym_ratio = -1 };
	CHECK(judge(&f, &l) == 0 && isnan(f.v.bw_floor));
	CHECK(f.v.outliers == 1 && f.why[3 * W + 1] == RC_SWEEP_LAT);
	l = (struct rc_sweep_limits){ 0 };

	/* one asymmetric pair: only 2 -> 4 slow; named slow and asymmetric */
	healthy(&f);
	f.m[2 * W + 4].bw_gbit = 30;
	CHECK(judge(&f, NULL) == 0);
	CHECK(f.v.outliers == 1 && f.v.bad_pairs == 1);
	CHECK(f.why[2 * W + 4] == (RC_SWEEP_SLOW | RC_SWEEP_ASYM));
	CHECK(f.why[4 * W + 2] == 0);
	/* mildly asymmetric (70 against 100) is below the slow bar too? no: above half */
	healthy(&f);
	f.m[2 * W + 4].bw_gbit = 70;
	CHECK(judge(&f, NULL) == 0 && f.v.healthy);

	/* one slow node: rank 5's every link, both ways */
	healthy(&f);
	for (int j = 0; j < 5; j++) {
		f.m[5 * W + j].bw_gbit = 25;
		f.m[j * W + 5].bw_gbit = 25;
	}
	CHECK(judge(&f, NULL) == 0);
	CHECK(!f.v.healthy);
	CHECK(f.v.bad_nodes == 1 && f.bad[5]);
	for (int i = 0; i < 5; i++)
		CHECK(!f.bad[i]);
	CHECK(f.outl[5] == 5 && f.outl[0] == 1);

	/* a node with most but not all links slow (3 of 5) is named; 2 of 5 not */
	healthy(&f);
	for (int j = 0; j < 3; j++)
		f.m[0 * W + j + 1].bw_gbit = 10;
	CHECK(judge(&f, NULL) == 0 && f.bad[0] && f.v.bad_nodes == 1);
	healthy(&f);
	for (int j = 0; j < 2; j++)
		f.m[0 * W + j + 1].bw_gbit = 10;
	CHECK(judge(&f, NULL) == 0 && !f.bad[0] && f.v.bad_nodes == 0 && f.v.bad_pairs == 2);

	/* high latency on one direction */
	healthy(&f);
	f.m[0 * W + 1].wlat_p50_us = 50;
	CHECK(judge(&f, NULL) == 0 && f.why[0 * W + 1] == RC_SWEEP_LAT && f.v.outliers == 1);

	/* a failed pair: not in the fleet's figures, an outlier of its own */
	healthy(&f);
	f.m[2 * W + 3].status = -110;
	f.m[2 * W + 3].bw_gbit = 0;
	CHECK(judge(&f, NULL) == 0);
	CHECK(f.why[2 * W + 3] == RC_SWEEP_FAILED && f.why[3 * W + 2] == 0);
	CHECK(f.v.measured == W * (W - 1) - 1 && !f.v.healthy);

	/* pairs not asked for (--pairs): neither measured nor outliers; a node
	 * is judged on the pairs it has. Rank 0 asked with 1 and 2 only, both
	 * slow: named (2 of 2); with only 0-1 asked and slow, not (1 pair) */
	healthy(&f);
	for (int j = 3; j < W; j++)
		f.m[0 * W + j].status = f.m[j * W + 0].status = RC_SWEEP_SKIPPED;
	f.m[0 * W + 1].bw_gbit = f.m[0 * W + 2].bw_gbit = 10;
	CHECK(judge(&f, NULL) == 0);
	CHECK(f.v.measured == W * (W - 1) - 2 * (W - 3));
	CHECK(f.bad[0] && f.v.bad_nodes == 1 && f.v.bad_pairs == 2);
	for (int j = 3; j < W; j++)
		CHECK(f.why[0 * W + j] == 0 && f.why[j * W + 0] == 0);
	healthy(&f);
	for (int j = 2; j < W; j++)
		f.m[0 * W + j].status = f.m[j * W + 0].status = RC_SWEEP_SKIPPED;
	f.m[0 * W + 1].bw_gbit = 10;
	CHECK(judge(&f, NULL) == 0 && !f.bad[0] && f.v.bad_pairs == 1);
	healthy(&f);
	for (int i = 0; i < W; i++)
		for (int j = 0; j < W; j++)
			if (i != j && (i + j) % 2)
				f.m[i * W + j].status = RC_SWEEP_SKIPPED;
	CHECK(judge(&f, NULL) == 0 && f.v.healthy);

	/* bad arguments */
	CHECK(rc_sweep_judge(1, f.m, NULL, &l, &f.v) == -22);
	CHECK(!strcmp(rc_sweep_why_name(RC_SWEEP_ASYM), "asymmetric"));
}

/* A world of three: each node has two pairs. One slow link (0-1) is half
 * of node 0's and node 1's pairs, not most: the pair is named, no node.
 * Both of node 0's links slow (below the link rate's bound, as the median
 * of six directions would be slow itself): node 0 named, 1 and 2 not. */
static void world_of_three(void)
{
	struct rc_sweep_cell m[3 * 3] = { 0 };
	struct rc_sweep_limits l = { .min_fraction = 0.45 };
	double rate[3] = { 200, 200, 200 };
	unsigned why[3 * 3];
	bool bad[3];
	int outl[3], np[3];
	struct rc_sweep_verdict v = { .why = why,
				      .node_bad = bad,
				      .node_outliers = outl,
				      .node_pairs = np };

	for (int k = 0; k < 9; k++)
		m[k] = (struct rc_sweep_cell){ .bw_gbit = 100 + k % 3,
					       .wlat_p50_us = 5,
					       .rlat_p50_us = 6,
					       .wlat_p99_us = 10,
					       .rlat_p99_us = 12 };
	m[0 * 3 + 1].bw_gbit = m[1 * 3 + 0].bw_gbit = 20;
	CHECK(rc_sweep_judge(3, m, rate, &l, &v) == 0);
	CHECK(v.bad_pairs == 1 && v.outliers == 2 && !v.healthy);
	CHECK(np[0] == 2 && outl[0] == 1 && outl[1] == 1 && outl[2] == 0);
	CHECK(v.bad_nodes == 0 && !bad[0] && !bad[1] && !bad[2]);
	/* the wrong answer: both of node 0's pairs slow name node 0 */
	m[0 * 3 + 2].bw_gbit = m[2 * 3 + 0].bw_gbit = 20;
	CHECK(rc_sweep_judge(3, m, rate, &l, &v) == 0);
	CHECK(v.bad_pairs == 2 && outl[0] == 2);
	CHECK(v.bad_nodes == 1 && bad[0] && !bad[1] && !bad[2]);
}

/* The rate while it flows: a stall on the retransmit timer (268 ms) in one
 * chunk of ten leaves the median at the link's rate, where the average
 * falls fivefold; a link slowed all along is slow in every chunk; a full
 * table merges its chunks and keeps the rate. */
static void flow(void)
{
	struct rc_sweep_flow f;
	double t = 0, avg;

	rc_sweep_flow_start(&f, 64, t);
	for (int k = 1; k <= 10; k++) {
		t += k == 4 ? 0.268 : 0.008; /* 64 writes of 16 KiB in 8 ms: 1.05 Gb/s */
		rc_sweep_flow_note(&f, 64 * (uint64_t)k, t);
	}
	avg = 640.0 * 16384 * 8 / t / 1e9;
	CHECK(f.n == 10);
	CHECK(fabs(rc_sweep_flow_rate(&f, 16384) - 1.048576) < 1e-6);
	CHECK(avg < 0.25); /* the average: what judged a healthy direction slow */
	/* completions that do not fill a chunk: no chunk yet */
	rc_sweep_flow_start(&f, 64, 0);
	rc_sweep_flow_note(&f, 63, 1);
	CHECK(f.n == 0 && rc_sweep_flow_rate(&f, 16384) == 0);
	/* slowed all along: 64 writes in 80 ms, every chunk */
	rc_sweep_flow_start(&f, 64, 0);
	for (int k = 1; k <= 10; k++)
		rc_sweep_flow_note(&f, 64 * (uint64_t)k, 0.08 * k);
	CHECK(fabs(rc_sweep_flow_rate(&f, 16384) - 0.1048576) < 1e-6);
	/* 1000 chunks: merged to at most RC_SWEEP_FLOW_CHUNKS, the rate kept */
	rc_sweep_flow_start(&f, 4, 0);
	for (int k = 1; k <= 1000; k++)
		rc_sweep_flow_note(&f, 4 * (uint64_t)k, 0.001 * k);
	CHECK(f.n > RC_SWEEP_FLOW_CHUNKS / 2 - 1 && f.n <= RC_SWEEP_FLOW_CHUNKS);
	CHECK(fabs(rc_sweep_flow_rate(&f, 1000) - 0.032) < 1e-9);
}

/* Four ranks on SoftRoCE's one device, as a sweep measured them (Gb/s
 * while flowing, 2026-12-07): each direction ran at about 0.15 or about 1
 * by chance. Every pair loops back on the one port and crosses no link:
 * healthy. The same figures between ranks on four ports: named (the wrong
 * answer, shown to fire), and a stall in the average alone never is. */
static void one_device(void)
{
	static const double bw[4][4] = { { 0, 0.963, 0.147, 0.138 },
					 { 0.968, 0, 0.231, 0.138 },
					 { 0.971, 0.980, 0, 1.032 },
					 { 1.008, 0.113, 0.518, 0 } };
	static struct rc_sweep_cell m[16];
	unsigned why[16];
	bool bad[4];
	int outl[4];
	struct rc_sweep_verdict v = { .why = why, .node_bad = bad, .node_outliers = outl };
	struct rc_sweep_limits l = { 0 };

	memset(m, 0, sizeof(m));
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++) {
			m[i * 4 + j].bw_gbit = bw[i][j] / 2;
			m[i * 4 + j].bw_flow_gbit = bw[i][j];
			m[i * 4 + j].wlat_p50_us = 25;
			m[i * 4 + j].rlat_p50_us = 45;
			m[i * 4 + j].shared_port = 1;
		}
	CHECK(rc_sweep_judge(4, m, NULL, &l, &v) == 0);
	CHECK(v.healthy && v.outliers == 0 && v.bw_judged == 0 && isnan(v.bw_floor));
	CHECK(v.measured == 12 && v.bw_median > 0.2 && v.bw_median < 0.9);
	/* its latency is still judged: one direction slowed by 20 ms */
	m[1 * 4 + 3].wlat_p50_us = 20000;
	CHECK(rc_sweep_judge(4, m, NULL, &l, &v) == 0);
	CHECK(!v.healthy && v.outliers == 1 && why[1 * 4 + 3] == RC_SWEEP_LAT);
	m[1 * 4 + 3].wlat_p50_us = 25;
	/* the same figures across links: outliers */
	for (int k = 0; k < 16; k++)
		m[k].shared_port = 0;
	CHECK(rc_sweep_judge(4, m, NULL, &l, &v) == 0);
	CHECK(!v.healthy && v.bw_judged == 12 && count_bits(why, 16, RC_SWEEP_ASYM) > 0);
	/* across links, a stall that only the average shows: healthy */
	for (int k = 0; k < 16; k++)
		m[k].bw_flow_gbit = 1 + (k % 3) * 0.01;
	m[2 * 4 + 1].bw_gbit = 0.05;
	CHECK(rc_sweep_judge(4, m, NULL, &l, &v) == 0 && v.healthy);
	/* where the rate while it flows is unknown (0), the average is judged */
	m[2 * 4 + 1].bw_flow_gbit = 0;
	CHECK(rc_sweep_judge(4, m, NULL, &l, &v) == 0 && !v.healthy);
	CHECK(why[2 * 4 + 1] & RC_SWEEP_SLOW);
}

/* The second look: run 2's figures from the guest, one READ median 3.2
 * times the fleet's, is picked with any direction above 1.5 times the
 * median, not one at 1.4 times nor a failed one; the second medians are
 * merged as the lower of two, only where picked, and a rank that sent a
 * non-positive or non-finite median for a picked direction is named, m
 * untouched. */
static void retime(void)
{
	static const double w[4][4] = { { 0, 70.5, 23.0, 22.8 },
					{ 27.9, 0, 26.2, 25.8 },
					{ 22.7, 26.3, 0, 26.8 },
					{ 23.0, 22.6, 22.8, 0 } };
	static const double r[4][4] = { { 0, 134.1, 40.4, 36.8 },
					{ 47.2, 0, 45.8, 44.9 },
					{ 41.2, 46.2, 0, 46.1 },
					{ 40.1, 39.9, 39.6, 0 } };
	static struct rc_sweep_cell m[16];
	static struct rc_sweep_retime got[16];
	uint8_t mask[16];
	unsigned why[16];
	bool bad[4];
	int outl[4];
	struct rc_sweep_verdict v = { .why = why, .node_bad = bad, .node_outliers = outl };
	struct rc_sweep_limits l = { 0 };

	memset(m, 0, sizeof(m));
	for (int k = 0; k < 16; k++) {
		m[k].wlat_p50_us = w[k / 4][k % 4];
		m[k].rlat_p50_us = r[k / 4][k % 4];
		m[k].bw_gbit = m[k].bw_flow_gbit = 1;
		m[k].shared_port = 1;
	}
	/* as measured once: a latency outlier on a healthy device */
	CHECK(rc_sweep_judge(4, m, NULL, &l, &v) == 0);
	CHECK(!v.healthy && v.outliers == 1 && why[0 * 4 + 1] == RC_SWEEP_LAT);
	m[2 * 4 + 3].rlat_p50_us = 1.4 * 44.9; /* near the median, below 1.5x */
	m[3 * 4 + 2].wlat_p50_us = 80;         /* picked, but failed */
	m[3 * 4 + 2].status = -EIO;
	CHECK(rc_sweep_retime_pick(4, m, mask) == 1);
	CHECK(mask[0 * 4 + 1] == 1 && mask[2 * 4 + 3] == 0 && mask[3 * 4 + 2] == 0);
	CHECK(mask[0] == 0 && mask[5] == 0);
	m[3 * 4 + 2].status = 0;
	m[3 * 4 + 2].wlat_p50_us = 22.8;
	m[2 * 4 + 3].rlat_p50_us = 46.1;
	/* a rank that sent nothing for a picked direction, or NaN: named */
	for (int k = 0; k < 16; k++)
		got[k] = (struct rc_sweep_retime){ 0 };
	CHECK(rc_sweep_retime_merge(4, m, mask, got) == -1);
	got[1] = (struct rc_sweep_retime){ NAN, 40 };
	CHECK(rc_sweep_retime_merge(4, m, mask, got) == -1);
	got[1] = (struct rc_sweep_retime){ 24, -1 };
	CHECK(rc_sweep_retime_merge(4, m, mask, got) == -1);
	CHECK(m[1].wlat_p50_us == 70.5 && m[1].rlat_p50_us == 134.1);
	/* timed again at the fleet's pace: the lower kept, healthy; a
	 * figure sent for a direction not picked is not used */
	got[1] = (struct rc_sweep_retime){ 24.1, 150 };
	got[2] = (struct rc_sweep_retime){ 1, 1 };
	CHECK(rc_sweep_retime_merge(4, m, mask, got) == 1);
	CHECK(m[1].wlat_p50_us == 24.1 && m[1].rlat_p50_us == 134.1 && m[2].wlat_p50_us == 23.0);
	got[1] = (struct rc_sweep_retime){ 30, 42.5 };
	CHECK(rc_sweep_retime_merge(4, m, mask, got) == 1);
	CHECK(m[1].wlat_p50_us == 24.1 && m[1].rlat_p50_us == 42.5);
	CHECK(rc_sweep_judge(4, m, NULL, &l, &v) == 0 && v.healthy);
	/* a slow link is slow both times: still named */
	m[1 * 4 + 3].wlat_p50_us = 20000;
	CHECK(rc_sweep_retime_pick(4, m, mask) == 1 && mask[1 * 4 + 3]);
	memset(got, 0, sizeof(got));
	got[1 * 4 + 3] = (struct rc_sweep_retime){ 19800, 45 };
	CHECK(rc_sweep_retime_merge(4, m, mask, got) == 1);
	CHECK(rc_sweep_judge(4, m, NULL, &l, &v) == 0 && !v.healthy);
	CHECK(v.outliers == 1 && why[1 * 4 + 3] == RC_SWEEP_LAT);
}

int main(void)
{
	schedules();
	turns();
	pairs();
	stats();
	judgements();
	world_of_three();
	flow();
	one_device();
	retime();
	CHECK_DONE();
}
