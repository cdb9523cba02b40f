// SPDX-License-Identifier: MIT
/*
 * The judgement of a sweep: each direction against the fleet (median and a
 * robust spread, the median absolute deviation, so that a few bad links do
 * not move the yardstick; bandwidth as the rate while data flowed, so that
 * a stall on the retransmit timer does not make a healthy link slow, and
 * only where the direction crosses a link: between two ranks on one port
 * it loops back inside the NIC, and on SoftRoCE's one device such
 * directions ran at 0.1 or 1 Gb/s by chance), against the slower port's link rate and the
 * hard bounds; then the nodes most of whose pairs are outliers, and the
 * pairs one of whose directions is much slower than the other.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/sweep.h>
#include <rdmactl/sweep_core.h>

#define MAD_SIGMA 1.4826 /* MAD to a normal distribution's standard deviation */

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

double rc_sweep_median(const double *v, int n)
{
	double *s, med;

	if (n <= 0 || !(s = malloc((size_t)n * sizeof(*s))))
		return NAN;
	memcpy(s, v, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return med;
}

double rc_sweep_mad(const double *v, int n, double med)
{
	double *d, mad;

	if (n <= 0 || !(d = malloc((size_t)n * sizeof(*d))))
		return NAN;
	for (int i = 0; i < n; i++)
		d[i] = fabs(v[i] - med);
	mad = rc_sweep_median(d, n);
	free(d);
	return mad;
}

const char *rc_sweep_why_name(unsigned bit)
{
	switch (bit) {
	case RC_SWEEP_FAILED:
		return "failed";
	case RC_SWEEP_SLOW:
		return "slow";
	case RC_SWEEP_BELOW_LINE:
		return "below_line_rate";
	case RC_SWEEP_LAT:
		return "latency";
	case RC_SWEEP_LAT_MAX:
		return "latency_max";
	case RC_SWEEP_ASYM:
		return "asymmetric";
	case RC_SWEEP_LEAK:
		return "leakage";
	default:
		return "?";
	}
}

void rc_sweep_limits_default(struct rc_sweep_limits *l)
{
	if (l->mad_k <= 0)
		l->mad_k = 3;
	if (l->slow_ratio == 0)
		l->slow_ratio = 0.5;
	if (l->lat_ratio <= 0)
		l->lat_ratio = 3;
	if (l->asym_ratio == 0)
		l->asym_ratio = 0.5;
	if (l->leak_ratio <= 0)
		l->leak_ratio = 3;
}

double rc_sweep_leak(const struct rc_sweep_cell *c, bool read)
{
	const struct rc_sweep_tail *t = read ? &c->rload : &c->wload;
	double idle = read ? c->rlat_p50_us : c->wlat_p50_us;

	if (c->status || t->n < 1 || !(idle > 0))
		return NAN;
	return t->p50_us / idle;
}

double rc_sweep_flow_gbit(const struct rc_sweep_cell *c)
{
	return c->bw_flow_gbit > 0 ? c->bw_flow_gbit : c->bw_gbit;
}

static double wlat(const struct rc_sweep_cell *c)
{
	return c->wlat_p50_us;
}

static double rlat(const struct rc_sweep_cell *c)
{
	return c->rlat_p50_us;
}

/* Median and MAD of one figure over the measured directions (links_only:
 * those that cross a link); how many. */
static int spread(int world, const struct rc_sweep_cell *m,
		  double (*figure)(const struct rc_sweep_cell *), bool links_only, double *vals,
		  double *med, double *mad)
{
	int n = 0;

	for (int i = 0; i < world; i++)
		for (int j = 0; j < world; j++) {
			const struct rc_sweep_cell *c = &m[(size_t)i * (size_t)world + (size_t)j];

			if (i == j || c->status || (links_only && c->shared_port))
				continue;
			vals[n++] = figure(c);
		}
	*med = rc_sweep_median(vals, n);
	*mad = rc_sweep_mad(vals, n, *med);
	return n;
}

static unsigned judge_cell(const struct rc_sweep_cell *c, double rate,
			   const struct rc_sweep_limits *l, const struct rc_sweep_verdict *v)
{
	double bw = rc_sweep_flow_gbit(c);
	unsigned why = 0;

	if (c->status == RC_SWEEP_SKIPPED)
		return 0;
	if (c->status)
		return RC_SWEEP_FAILED;
	if (!c->shared_port && bw < v->bw_floor)
		why |= RC_SWEEP_SLOW;
	if (!c->shared_port && l->min_fraction > 0 && rate > 0 && bw < l->min_fraction * rate)
		why |= RC_SWEEP_BELOW_LINE;
	if (c->wlat_p50_us > v->wlat_ceiling || c->rlat_p50_us > v->rlat_ceiling)
		why |= RC_SWEEP_LAT;
	if (l->max_lat_us > 0 && (c->wlat_p50_us > l->max_lat_us || c->rlat_p50_us > l->max_lat_us))
		why |= RC_SWEEP_LAT_MAX;
	return why;
}

/* Above the median by k robust deviations and by the ratio, both. */
static double ceiling(double med, double mad, const struct rc_sweep_limits *l)
{
	double a = med + l->mad_k * MAD_SIGMA * mad, b = med * l->lat_ratio;

	return a > b ? a : b;
}

/* Median and MAD of the leakage over the directions measured under load. */
static void leak_spread(int world, const struct rc_sweep_cell *m, bool read, double *vals,
			double *med, double *mad)
{
	int n = 0;

	for (int k = 0; k < world * world; k++) {
		double x = k / world == k % world ? NAN : rc_sweep_leak(&m[k], read);

		if (!isnan(x))
			vals[n++] = x;
	}
	*med = rc_sweep_median(vals, n);
	*mad = rc_sweep_mad(vals, n, *med);
}

/* The port to blame for leakage: a rank 2 or more of whose directions in
 * one role (into it, or out of it) leak, and more than half of them; the
 * other end of those directions only shares them, and is not blamed. */
static void blame(int world, const struct rc_sweep_cell *m, struct rc_sweep_verdict *v)
{
	size_t N = (size_t)world;

	for (int r = 0; r < world; r++) {
		int in = 0, in_bad = 0, out = 0, out_bad = 0;

		for (int x = 0; x < world; x++) {
			if (x == r)
				continue;
			in += !isnan(rc_sweep_leak(&m[(size_t)x * N + (size_t)r], false));
			in_bad += (v->why[(size_t)x * N + (size_t)r] & RC_SWEEP_LEAK) != 0;
			out += !isnan(rc_sweep_leak(&m[(size_t)r * N + (size_t)x], false));
			out_bad += (v->why[(size_t)r * N + (size_t)x] & RC_SWEEP_LEAK) != 0;
		}
		v->blamed[r] = (in_bad >= 2 && 2 * in_bad > in ? RC_SWEEP_BLAME_RECV : 0) |
			       (out_bad >= 2 && 2 * out_bad > out ? RC_SWEEP_BLAME_SEND : 0);
	}
}

/* --load: each loaded direction's leakage against the fleet's. */
static void judge_leak(int world, const struct rc_sweep_cell *m, const struct rc_sweep_limits *l,
		       double *vals, struct rc_sweep_verdict *v)
{
	struct rc_sweep_limits lk = *l;

	lk.lat_ratio = l->leak_ratio;
	leak_spread(world, m, false, vals, &v->wleak_median, &v->wleak_mad);
	leak_spread(world, m, true, vals, &v->rleak_median, &v->rleak_mad);
	v->wleak_ceiling = ceiling(v->wleak_median, v->wleak_mad, &lk);
	v->rleak_ceiling = ceiling(v->rleak_median, v->rleak_mad, &lk);
	v->loaded = 0;
	for (int k = 0; k < world * world; k++) {
		double w = rc_sweep_leak(&m[k], false), r = rc_sweep_leak(&m[k], true);

		if (k / world == k % world || isnan(w))
			continue;
		v->loaded++;
		if (w > v->wleak_ceiling || (!isnan(r) && r > v->rleak_ceiling))
			v->why[k] |= RC_SWEEP_LEAK;
	}
}

int rc_sweep_judge(int world, const struct rc_sweep_cell *m, const double *rate_gbit,
		   const struct rc_sweep_limits *lim, struct rc_sweep_verdict *v)
{
	struct rc_sweep_limits l = *lim;
	size_t N = (size_t)world;
	double *vals, a, b;
	int *pairs;

	if (world < 2 || world > RC_GROUP_MAX || !m || !v->why || !v->node_bad || !v->node_outliers)
		return -EINVAL;
	vals = malloc(N * N * sizeof(*vals));
	pairs = calloc(N, sizeof(*pairs));
	if (!vals || !pairs) {
		free(vals);
		free(pairs);
		return -ENOMEM;
	}
	rc_sweep_limits_default(&l);
	v->bw_judged = spread(world, m, rc_sweep_flow_gbit, true, vals, &v->bw_median, &v->bw_mad);
	if (!v->bw_judged)
		spread(world, m, rc_sweep_flow_gbit, false, vals, &v->bw_median, &v->bw_mad);
	spread(world, m, wlat, false, vals, &v->wlat_median, &v->wlat_mad);
	spread(world, m, rlat, false, vals, &v->rlat_median, &v->rlat_mad);
	a = v->bw_median - l.mad_k * MAD_SIGMA * v->bw_mad;
	b = v->bw_median * l.slow_ratio;
	v->bw_floor = l.slow_ratio < 0 || !v->bw_judged ? NAN : a < b ? a : b;
	v->wlat_ceiling = ceiling(v->wlat_median, v->wlat_mad, &l);
	v->rlat_ceiling = ceiling(v->rlat_median, v->rlat_mad, &l);
	v->measured = v->outliers = v->bad_pairs = v->bad_nodes = 0;
	memset(v->why, 0, N * N * sizeof(*v->why));
	for (int i = 0; i < world; i++)
		for (int j = 0; j < world; j++) {
			double ri = rate_gbit ? rate_gbit[i] : 0, rj = rate_gbit ? rate_gbit[j] : 0;
			double rate = ri > 0 && rj > 0 ? (ri < rj ? ri : rj) : (ri > 0 ? ri : rj);

			if (i == j)
				continue;
			v->why[i * N + j] = judge_cell(&m[i * N + j], rate, &l, v);
			v->measured += !m[i * N + j].status;
		}
	judge_leak(world, m, &l, vals, v);
	free(vals);
	/* asymmetric: the slower direction of a pair measured both ways */
	for (int i = 0; i < world; i++)
		for (int j = i + 1; j < world; j++) {
			const struct rc_sweep_cell *x = &m[i * N + j], *y = &m[j * N + i];

			if (x->status || y->status || x->shared_port || l.asym_ratio < 0)
				continue;
			if (rc_sweep_flow_gbit(x) < l.asym_ratio * rc_sweep_flow_gbit(y))
				v->why[i * N + j] |= RC_SWEEP_ASYM;
			else if (rc_sweep_flow_gbit(y) < l.asym_ratio * rc_sweep_flow_gbit(x))
				v->why[j * N + i] |= RC_SWEEP_ASYM;
		}
	for (int i = 0; i < world; i++)
		v->node_outliers[i] = 0;
	for (int i = 0; i < world; i++)
		for (int j = 0; j < world; j++) {
			if (i == j)
				continue;
			v->outliers += v->why[i * N + j] != 0;
			if (j > i && (v->why[i * N + j] || v->why[j * N + i])) {
				v->bad_pairs++;
				v->node_outliers[i]++;
				v->node_outliers[j]++;
			}
		}
	/* a node's pairs: those asked for */
	for (int i = 0; i < world; i++)
		for (int j = 0; j < world; j++)
			pairs[i] += i != j && (m[i * N + j].status != RC_SWEEP_SKIPPED ||
					       m[j * N + i].status != RC_SWEEP_SKIPPED);
	for (int i = 0; i < world; i++) {
		if (v->node_pairs)
			v->node_pairs[i] = pairs[i];
		v->node_bad[i] = world >= 3 && pairs[i] >= 2 && 2 * v->node_outliers[i] > pairs[i];
		v->bad_nodes += v->node_bad[i];
	}
	if (v->blamed)
		blame(world, m, v);
	v->healthy = v->outliers == 0;
	free(pairs);
	return 0;
}

int rc_sweep_retime_pick(int world, const struct rc_sweep_cell *m, uint8_t *mask)
{
	size_t N = (size_t)world * (size_t)world;
	double *vals = calloc(N, sizeof(*vals)), wmed, rmed, mad;
	int n = 0;

	if (!vals)
		return -ENOMEM;
	memset(mask, 0, N);
	spread(world, m, wlat, false, vals, &wmed, &mad);
	spread(world, m, rlat, false, vals, &rmed, &mad);
	free(vals);
	for (size_t k = 0; k < N; k++) {
		const struct rc_sweep_cell *c = &m[k];

		if (k / (size_t)world == k % (size_t)world || c->status)
			continue;
		mask[k] = c->wlat_p50_us > RC_SWEEP_RETIME_RATIO * wmed ||
			  c->rlat_p50_us > RC_SWEEP_RETIME_RATIO * rmed;
		n += mask[k];
	}
	return n;
}
