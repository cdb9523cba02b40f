// SPDX-License-Identifier: MIT
/* The routing model: how many tokens each rank dispatches to each rank. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/a2a.h>
#include <rdmactl/a2a_core.h>

const char *rc_a2a_algo_name(enum rc_a2a_algo a)
{
	return a == RC_A2A_RING ? "ring" : a == RC_A2A_HIER ? "hierarchical" : "flat";
}

size_t rc_a2a_token_bytes(uint32_t hidden, enum rc_a2a_dtype dt)
{
	if (dt == RC_A2A_FP8)
		return (size_t)hidden + ((size_t)hidden + 127) / 128 * 4;
	return (size_t)hidden * 2;
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

int rc_a2a_skew_parse(const char *s, struct rc_a2a_route *r, struct rc_err *err)
{
	char *end;

	if (!strcmp(s, "uniform")) {
		r->skew = RC_A2A_UNIFORM;
		return 0;
	}
	if (!strncmp(s, "zipf:", 5)) {
		r->zipf_s = strtod(s + 5, &end);
		if (end == s + 5 || *end || !(r->zipf_s > 0) || r->zipf_s > 10)
			return rc_err_param(err, "skew", EINVAL,
					    "skew %s: S must be a number in (0, 10]", s);
		r->skew = RC_A2A_ZIPF;
		return 0;
	}
	if (!strncmp(s, "matrix:", 7) && s[7]) {
		r->skew = RC_A2A_MATRIX;
		r->matrix = s + 7;
		return 0;
	}
	return rc_err_param(err, "skew", EINVAL,
			    "skew '%s': expected uniform, zipf:S or matrix:FILE.csv", s);
}

int rc_a2a_matrix_load(const char *path, int world, uint64_t *counts, struct rc_err *err)
{
	FILE *fp = fopen(path, "r");
	char line[4096];
	int row = 0, lineno = 0, rc = 0;

	if (!fp)
		return rc_err_set(err, EINVAL, "cannot read the matrix %s: %s", path,
				  strerror(errno));
	while (fgets(line, sizeof(line), fp)) {
		char *p = line;
		int col = 0;

		lineno++;
		p[strcspn(p, "#\r\n")] = '\0';
		if (!p[strspn(p, " \t")])
			continue;
		if (row >= world) {
			rc = rc_err_set(err, EINVAL,
					"%s:%d: more than %d rows (one per source rank)", path,
					lineno, world);
			break;
		}
		for (;;) {
			char *end;
			long long v;

			while (*p == ' ' || *p == '\t')
				p++;
			errno = 0;
			v = strtoll(p, &end, 10);
			if (end != p && errno == ERANGE) {
				rc = rc_err_set(err, EINVAL,
						"%s:%d: column %d: the count is out of range", path,
						lineno, col + 1);
				goto out;
			}
			if (end == p) {
				rc = rc_err_set(err, EINVAL, "%s:%d: column %d is not a token count",
						path, lineno, col + 1);
				goto out;
			}
			if (v < 0) {
				rc = rc_err_set(err, EINVAL, "%s:%d: column %d: negative count %lld",
						path, lineno, col + 1, v);
				goto out;
			}
			if (col >= world) {
				rc = rc_err_set(err, EINVAL, "%s:%d: more than %d columns", path,
						lineno, world);
				goto out;
			}
			counts[row * world + col++] = (uint64_t)v;
			p = end;
			while (*p == ' ' || *p == '\t')
				p++;
			if (!*p)
				break;
			if (*p != ',') {
				rc = rc_err_set(err, EINVAL, "%s:%d: expected ',' after column %d",
						path, lineno, col);
				goto out;
			}
			p++;
		}
		if (col != world) {
			rc = rc_err_set(err, EINVAL, "%s:%d: %d columns, the world size is %d",
					path, lineno, col, world);
			goto out;
		}
		row++;
	}
	if (!rc && row != world)
		rc = rc_err_set(err, EINVAL, "%s: %d rows, the world size is %d", path, row, world);
out:
	fclose(fp);
	return rc;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The first line over cap as the error: a row (what rank i sends) or a
 * column (what it receives); sum UINT64_MAX: past counting. */
static int line_over(bool row, int i, uint64_t sum, size_t tb, struct rc_err *err)
{
	char n[32];

	if (sum == UINT64_MAX)
		snprintf(n, sizeof(n), "more than %llu", (unsigned long long)UINT64_MAX - 1);
	else
		snprintf(n, sizeof(n), "%llu", (unsigned long long)sum);
	return rc_err_set(
		err, EINVAL,
		"%s %d (the tokens rank %d %s): %s tokens of %zu bytes, over the %llu GiB one rank may %s in a phase",
		row ? "row" : "column", i + 1, i, row ? "sends" : "receives", n, tb,
		(unsigned long long)(RC_A2A_RANK_BYTES_MAX >> 30), row ? "send" : "receive");
}

/* Rows and columns summed in one pass in memory order (a column at a time
 * strode W * 8 bytes a step: at 4096 ranks, most of a --plan's time); the
 * rows are judged first, then the columns, each saturating at UINT64_MAX. */
int rc_a2a_counts_fit(const uint64_t *counts, int W, size_t tb, struct rc_err *err)
{
	uint64_t cap = tb ? RC_A2A_RANK_BYTES_MAX / tb : 0, *col;
	int rc = 0;

	if (!tb)
		return rc_err_set(err, EINVAL, "a token of 0 bytes");
	if (!(col = calloc((size_t)W, sizeof(*col))))
		return rc_err_set(err, ENOMEM, "out of memory");
	for (int i = 0; i < W && !rc; i++) {
		const uint64_t *r = counts + (size_t)i * (size_t)W;
		uint64_t sum = 0;

		for (int k = 0; k < W; k++) {
			sum = sat_add(sum, r[k]);
			col[k] = sat_add(col[k], r[k]);
		}
		if (sum > cap)
			rc = line_over(true, i, sum, tb, err);
	}
	for (int i = 0; i < W && !rc; i++)
		if (col[i] > cap)
			rc = line_over(false, i, col[i], tb, err);
	free(col);
	return rc;
}

/* Pick one expert: uniform, or by Zipf weights through the cumulative table. */
static uint32_t pick(const struct rc_a2a_route *r, const double *cdf, uint64_t *st)
{
	uint64_t x = splitmix(st);

	if (r->skew == RC_A2A_UNIFORM)
		return (uint32_t)(x % r->experts);
	double u = (double)(x >> 11) * 0x1.0p-53 * cdf[r->experts - 1];
	uint32_t lo = 0, hi = r->experts - 1;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int rc_a2a_counts(const struct rc_a2a_route *r, uint64_t *counts, struct rc_err *err)
{
	int W = r->world;
	double *cdf = NULL;
	uint32_t *chosen;

	memset(counts, 0, (size_t)W * (size_t)W * sizeof(*counts));
	if (r->skew == RC_A2A_MATRIX)
		return rc_a2a_matrix_load(r->matrix, W, counts, err);
	if (!r->experts || r->experts % (uint32_t)W)
		return rc_err_set(err, EINVAL, "%u experts do not spread evenly over %d ranks",
				  r->experts, W);
	if (!r->topk || r->topk > r->experts)
		return rc_err_set(err, EINVAL, "top-k %u must be 1..%u (the experts)", r->topk,
				  r->experts);
	chosen = calloc(r->topk, sizeof(*chosen));
	if (r->skew == RC_A2A_ZIPF)
		cdf = malloc(r->experts * sizeof(*cdf));
	if (!chosen || (r->skew == RC_A2A_ZIPF && !cdf)) {
		free(chosen);
		free(cdf);
		return rc_err_set(err, ENOMEM, "out of memory");
	}
	for (uint32_t e = 0; cdf && e < r->experts; e++)
		cdf[e] = (e ? cdf[e - 1] : 0) + 1.0 / pow((double)e + 1, r->zipf_s);
	uint32_t per_rank = r->experts / (uint32_t)W;
	uint64_t seed_st = r->seed, seed = splitmix(&seed_st);

	for (int src = 0; src < W; src++) {
		for (uint32_t t = 0; t < r->tokens; t++) {
			uint64_t st = seed ^ ((uint64_t)src << 40) ^ t;

			/* top-k distinct experts: draw again on a repeat; a token goes
			 * once to each rank that holds one of them (any world size) */
			for (uint32_t k = 0; k < r->topk; k++) {
				uint32_t e;
				bool dup, seen = false;

				do {
					e = pick(r, cdf, &st);
					dup = false;
					for (uint32_t q = 0; q < k; q++)
						dup |= chosen[q] == e;
				} while (dup);
				chosen[k] = e;
				for (uint32_t q = 0; q < k; q++)
					seen |= chosen[q] / per_rank == e / per_rank;
				if (!seen)
					counts[(size_t)src * (size_t)W + e / per_rank]++;
			}
		}
	}
	free(chosen);
	free(cdf);
	return 0;
}

void rc_a2a_stats(const uint64_t *counts, int W, int rank, size_t tb, struct rc_a2a_stats *st)
{
	double sent = 0, recv_max = 0, pairs = 0, pair_sum = 0;

	memset(st, 0, sizeof(*st));
	for (int d = 0; d < W; d++) {
		double recv = 0;

		for (int s = 0; s < W; s++) {
			uint64_t b = counts[s * W + d] * tb;

			recv += (double)b;
			sent += (double)b;
			if (s != d) {
				pairs++;
				pair_sum += (double)b;
				if (b > st->peer_max)
					st->peer_max = b;
			}
			if (s == rank && d != rank)
				st->my_send += b;
			if (d == rank && s != rank)
				st->my_recv += b;
		}
		if (recv > recv_max)
			recv_max = recv;
	}
	st->size = 2 * sent / W;
	st->peer_mean = pairs ? (uint64_t)(pair_sum / pairs) : 0;
	st->imbalance = sent > 0 ? recv_max / (sent / W) : 1;
}

void rc_a2a_need(enum rc_a2a_algo a, int W, int rpn, uint8_t *need)
{
	memset(need, 0, (size_t)W * (size_t)W);
	for (int i = 0; i < W; i++)
		for (int j = 0; j < W; j++) {
			bool on = false;

			if (i == j)
				continue;
			if (a == RC_A2A_FLAT)
				on = true;
			else if (a == RC_A2A_RING)
				on = j == (i + 1) % W || i == (j + 1) % W;
			else if (rpn > 0)
				on = i % rpn == j % rpn || i / rpn == j / rpn;
			need[i * W + j] = on;
		}
}

void rc_a2a_token_fill(void *buf, size_t len, int src, int dst, uint64_t idx, uint32_t iter,
		       int phase)
{
	uint64_t st = ((uint64_t)src << 56) ^ ((uint64_t)dst << 48) ^ ((uint64_t)phase << 44) ^
		      ((uint64_t)iter << 24) ^ idx;
	uint8_t *p = buf;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t v = splitmix(&st);

		memcpy(p + i, &v, 8);
	}
	if (i < len) {
		uint64_t v = splitmix(&st);

		memcpy(p + i, &v, len - i);
	}
}
