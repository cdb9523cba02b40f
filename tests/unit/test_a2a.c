// SPDX-License-Identifier: MIT
/* The all-to-all routing model, its figures and the connection plans. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdmactl/a2a.h>
#include <rdmactl/a2a_core.h>

#include "check.h"

static uint64_t sum(const uint64_t *c, int n)
{
	uint64_t s = 0;

	for (int i = 0; i < n; i++)
		s += c[i];
	return s;
}

static void routing(void)
{
	struct rc_a2a_route r = { .world = 4, .tokens = 1000, .experts = 32, .topk = 1, .seed = 1 };
	uint64_t c[16], z[16];
	struct rc_a2a_stats su, sz;
	struct rc_err e;

	CHECK(rc_a2a_skew_parse("uniform", &r, &e) == 0);
	CHECK(rc_a2a_counts(&r, c, &e) == 0);
	/* top-1: each token goes to exactly one rank */
	for (int s = 0; s < 4; s++)
		CHECK_EQ_U64(sum(c + s * 4, 4), 1000);
	for (int i = 0; i < 16; i++)
		CHECK(c[i] > 150 && c[i] < 350);
	/* top-k with two experts on one rank: the token goes there once */
	r.topk = 8;
	CHECK(rc_a2a_counts(&r, c, &e) == 0);
	for (int s = 0; s < 4; s++) {
		CHECK(sum(c + s * 4, 4) >= 1000 * 2);
		CHECK(sum(c + s * 4, 4) <= 1000 * 4);
	}
	/* the same seed routes the same way; another does not */
	CHECK(rc_a2a_counts(&r, z, &e) == 0);
	CHECK(memcmp(c, z, sizeof(c)) == 0);
	/* zipf: the first experts are hot, so rank 0 receives the most */
	r.topk = 2;
	r.seed = 2;
	CHECK(rc_a2a_counts(&r, z, &e) == 0);
	r.seed = 1;
	CHECK(rc_a2a_counts(&r, c, &e) == 0);
	CHECK(memcmp(c, z, sizeof(c)) != 0);
	CHECK(rc_a2a_skew_parse("zipf:1.2", &r, &e) == 0);
	CHECK(rc_a2a_counts(&r, z, &e) == 0);
	rc_a2a_stats(c, 4, 0, 1024, &su);
	rc_a2a_stats(z, 4, 0, 1024, &sz);
	CHECK(su.imbalance < 1.1);
	CHECK(sz.imbalance > 1.5);
	CHECK(z[0] > z[3] * 2);
	CHECK(rc_a2a_skew_parse("zipf:", &r, &e) == -EINVAL);
	CHECK(rc_a2a_skew_parse("zipf:-1", &r, &e) == -EINVAL);
	CHECK(rc_a2a_skew_parse("pareto", &r, &e) == -EINVAL);
	r.skew = RC_A2A_UNIFORM;
	r.experts = 30;
	CHECK(rc_a2a_counts(&r, c, &e) == -EINVAL);
	CHECK(strstr(e.msg, "30 experts") != NULL);
	r.experts = 8;
	r.topk = 9;
	CHECK(rc_a2a_counts(&r, c, &e) == -EINVAL);
}

/* Past 64 ranks: every rank can be hit, and a token still reaches each rank
 * holding one of its experts exactly once (a 64-bit set of ranks lost those
 * past 63 and shifted out of range). */
static void routing_wide(void)
{
	enum { W = 100 };
	struct rc_a2a_route r = { .world = W, .tokens = 200, .experts = 2 * W, .topk = 8, .seed = 3 };
	uint64_t *c = calloc((size_t)W * W, sizeof(*c)), col_hi = 0;
	struct rc_err e;

	CHECK(c != NULL);
	if (!c)
		return;
	CHECK(rc_a2a_counts(&r, c, &e) == 0);
	for (int s = 0; s < W; s++) {
		uint64_t n = sum(c + s * W, W);

		/* 8 distinct experts, two a rank: 4 to 8 ranks a token */
		CHECK(n >= 200 * 4 && n <= 200 * 8);
	}
	for (int s = 0; s < W; s++)
		for (int d = 64; d < W; d++)
			col_hi += c[s * W + d];
	CHECK(col_hi > 0);
	/* one expert a token, on a rank past 64: each row sums to the tokens */
	r.topk = 1;
	CHECK(rc_a2a_counts(&r, c, &e) == 0);
	for (int s = 0; s < W; s++)
		CHECK_EQ_U64(sum(c + s * W, W), 200);
	free(c);
}

static void stats(void)
{
	/* 2 ranks: 0 sends 1 token to itself and 3 to 1; 1 sends 2 and 2 */
	uint64_t c[4] = { 1, 3, 2, 2 };
	struct rc_a2a_stats st;

	rc_a2a_stats(c, 2, 0, 100, &st);
	CHECK(st.size == 2.0 * 800 / 2);
	CHECK_EQ_U64(st.peer_max, 300);
	CHECK_EQ_U64(st.peer_mean, 250);
	CHECK_EQ_U64(st.my_send, 300);
	CHECK_EQ_U64(st.my_recv, 200);
	/* rank 1 receives 5 of the 8 tokens: max 500 over a mean of 400 */
	CHECK(st.imbalance > 1.249 && st.imbalance < 1.251);
	CHECK_EQ_U64(rc_a2a_token_bytes(7168, RC_A2A_BF16), 14336);
	CHECK_EQ_U64(rc_a2a_token_bytes(7168, RC_A2A_FP8), 7168 + 56 * 4);
}

static int matrix(const char *text, uint64_t *c, struct rc_err *e)
{
	char path[] = "/tmp/test_a2a.XXXXXX";
	int fd = mkstemp(path), rc;

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		abort();
	close(fd);
	rc = rc_a2a_matrix_load(path, 2, c, e);
	unlink(path);
	return rc;
}

static void matrices(void)
{
	uint64_t c[4];
	struct rc_err e;

	CHECK(matrix("# src x dst\n0, 5\n7,0\n", c, &e) == 0);
	CHECK(c[1] == 5 && c[2] == 7 && c[0] == 0);
	CHECK(matrix("1,2,3\n4,5,6\n", c, &e) == -EINVAL);
	CHECK(strstr(e.msg, "more than 2 columns") != NULL);
	CHECK(matrix("1,2\n", c, &e) == -EINVAL);
	CHECK(strstr(e.msg, "1 rows") != NULL);
	CHECK(matrix("1,2\n3\n", c, &e) == -EINVAL);
	CHECK(strstr(e.msg, "1 columns") != NULL);
	CHECK(matrix("1,2\n3,-4\n", c, &e) == -EINVAL);
	CHECK(strstr(e.msg, "negative") != NULL);
	CHECK(matrix("1,2\n3,x\n", c, &e) == -EINVAL);
	CHECK(strstr(e.msg, "not a token count") != NULL);
	CHECK(matrix("1;2\n3,4\n", c, &e) == -EINVAL);
	CHECK(rc_a2a_matrix_load("/nonexistent.csv", 2, c, &e) == -EINVAL);
}

/* Buffer sizes stay in range: a row or column over 1 TiB is named. */
static void fits(void)
{
	uint64_t c[9] = { 0 };
	struct rc_err e;

	c[0] = 1ULL << 53;
	c[1] = 1;
	CHECK(rc_a2a_counts_fit(c, 2, 14336, &e) == -EINVAL);
	CHECK(strstr(e.msg, "row 1 (the tokens rank 0 sends): 9007199254740993 tokens") != NULL);
	/* exactly 1 TiB fits, a token more does not */
	c[0] = (1ULL << 40) / 16;
	c[1] = 0;
	CHECK(rc_a2a_counts_fit(c, 2, 16, &e) == 0);
	c[2] = 1;
	CHECK(rc_a2a_counts_fit(c, 2, 16, &e) == -EINVAL);
	CHECK(strstr(e.msg, "column 1 (the tokens rank 0 receives)") != NULL);
	/* a row whose sum wraps 64 bits */
	for (int i = 0; i < 3; i++)
		c[i] = UINT64_MAX / 2;
	CHECK(rc_a2a_counts_fit(c, 3, 2, &e) == -EINVAL);
	CHECK(strstr(e.msg, "row 1 (the tokens rank 0 sends): more than") != NULL);
	CHECK(rc_a2a_counts_fit(c, 3, 0, &e) == -EINVAL);
	/* a row whose plain sum wraps to under the cap (UINT64_MAX + 2 is 1):
	 * every row and column of this matrix would, so the row is named */
	c[0] = UINT64_MAX;
	c[1] = 2;
	c[2] = 2;
	c[3] = UINT64_MAX;
	CHECK(rc_a2a_counts_fit(c, 2, 2, &e) == -EINVAL);
	CHECK(strstr(e.msg,
		     "row 1 (the tokens rank 0 sends): more than 18446744073709551614 tokens") !=
	      NULL);
}

static void plans(void)
{
	uint8_t n[64];

	rc_a2a_need(RC_A2A_FLAT, 8, 0, n);
	CHECK(n[0] == 0 && n[1] == 1 && n[7 * 8 + 6] == 1);
	rc_a2a_need(RC_A2A_RING, 8, 0, n);
	CHECK(n[0 * 8 + 1] && n[0 * 8 + 7] && !n[0 * 8 + 2] && n[7 * 8 + 0]);
	/* two nodes of 4: the node, and the same local index across nodes */
	rc_a2a_need(RC_A2A_HIER, 8, 4, n);
	CHECK(n[0 * 8 + 3] && n[0 * 8 + 4] && !n[0 * 8 + 5] && n[5 * 8 + 1]);
	for (int i = 0; i < 8; i++)
		for (int j = 0; j < 8; j++)
			CHECK(n[i * 8 + j] == n[j * 8 + i]);
}

static void content(void)
{
	uint8_t a[100], b[100];

	rc_a2a_token_fill(a, sizeof(a), 0, 1, 5, 3, 0);
	rc_a2a_token_fill(b, sizeof(b), 0, 1, 5, 3, 0);
	CHECK(memcmp(a, b, sizeof(a)) == 0);
	rc_a2a_token_fill(b, sizeof(b), 0, 1, 5, 4, 0);
	CHECK(memcmp(a, b, sizeof(a)) != 0);
	rc_a2a_token_fill(b, sizeof(b), 0, 1, 5, 3, 1);
	CHECK(memcmp(a, b, sizeof(a)) != 0);
	rc_a2a_token_fill(b, sizeof(b), 1, 0, 5, 3, 0);
	CHECK(memcmp(a, b, sizeof(a)) != 0);
}

/* A rank on several rails: the slices of a block cover it, in order, and
 * differ by at most one token; a wrong slice sum would fail the check. */
static void slices(void)
{
	uint64_t counts[4] = { 0, 1, 7, 1000001 }, out[4], sum[4] = { 0 };

	for (int r = 1; r <= 3; r++) {
		memset(sum, 0, sizeof(sum));
		for (int s = 0; s < r; s++) {
			rc_a2a_slice_counts(counts, 2, s, r, out);
			for (int k = 0; k < 4; k++) {
				sum[k] += out[k];
				CHECK(out[k] * (uint64_t)r + (uint64_t)r >= counts[k]);
				CHECK(out[k] * (uint64_t)r <= counts[k] + (uint64_t)r);
			}
		}
		for (int k = 0; k < 4; k++)
			CHECK_EQ_U64(sum[k], counts[k]);
	}
	rc_a2a_slice_counts(counts, 2, 1, 2, out);
	CHECK_EQ_U64(out[1], 1); /* of one token, the second slice has it */
	CHECK_EQ_U64(out[2], 4);
	CHECK_EQ_U64(out[3], 500001);
}

/* --background pairs: r and r + W/2 into each other, an odd world's last
 * rank quiet; none or a rank outside the world: no peer. */
static void background_peers(void)
{
	int want4[] = { 2, 3, 0, 1 }, want5[] = { 2, 3, 0, 1, -1 };

	for (int r = 0; r < 4; r++)
		CHECK(rc_a2a_bg_peer(RC_A2A_BG_PAIRS, 4, r) == want4[r]);
	for (int r = 0; r < 5; r++)
		CHECK(rc_a2a_bg_peer(RC_A2A_BG_PAIRS, 5, r) == want5[r]);
	CHECK(rc_a2a_bg_peer(RC_A2A_BG_PAIRS, 2, 1) == 0);
	CHECK(rc_a2a_bg_peer(RC_A2A_BG_PAIRS, 1, 0) == -1);
	CHECK(rc_a2a_bg_peer(RC_A2A_BG_PAIRS, 4, 4) == -1);
	CHECK(rc_a2a_bg_peer(RC_A2A_BG_PAIRS, 4, -1) == -1);
	CHECK(rc_a2a_bg_peer(RC_A2A_BG_NONE, 4, 0) == -1);
	CHECK(!strcmp(rc_a2a_bg_name(RC_A2A_BG_PAIRS), "pairs"));
	CHECK(!strcmp(rc_a2a_bg_name(RC_A2A_BG_NONE), "none"));
	CHECK(rc_a2a_bg_name(2) == NULL);
}

int main(void)
{
	routing();
	routing_wide();
	stats();
	matrices();
	fits();
	plans();
	content();
	slices();
	background_peers();
	CHECK_DONE();
}
