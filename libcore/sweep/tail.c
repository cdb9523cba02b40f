// SPDX-License-Identifier: MIT
/*
 * The pure parts of latency under load and of incast: a distribution's
 * percentiles, who loads whom in each --load mode, Jain's fairness index,
 * the incast's steps and the step where its goodput flattens; a
 * distribution as a bounded CDF (every sample, or a grid of quantiles).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/sweep.h>
#include <rdmactl/sweep_core.h>

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

void rc_sweep_tail_of(double *v, int n, struct rc_sweep_tail *t)
{
	*t = (struct rc_sweep_tail){ .n = n > 0 ? n : 0 };
	if (n < 1)
		return;
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	t->p50_us = v[(n - 1) / 2];
	t->p99_us = v[(int)((n - 1) * 0.99 + 0.5)];
	t->p999_us = v[(int)((n - 1) * 0.999 + 0.5)];
	t->max_us = v[n - 1];
}

/* The grid's probabilities beyond RC_SWEEP_CDF_MAX samples: 0, 0.01 ..
 * 0.99, then 0.991 .. 0.999, 0.9991 .. 0.9999, 0.99991 .. 0.99999 and 1,
 * each as a quotient so that 99 / 100 is the 0.99 of rc_sweep_tail_of. */
static double cdf_grid(int j)
{
	if (j < 100)
		return j / 100.0;
	if (j < 109)
		return (990 + j - 99) / 1000.0;
	if (j < 118)
		return (9990 + j - 108) / 10000.0;
	if (j < 127)
		return (99990 + j - 117) / 100000.0;
	return 1;
}

void rc_sweep_cdf_of(const double *v, int n, struct rc_sweep_cdf *c)
{
	memset(c, 0, sizeof(*c));
	c->n = n > 0 ? n : 0;
	for (int j = 0; j < RC_SWEEP_CDF_MAX && n > 0; j++) {
		int r = n <= RC_SWEEP_CDF_MAX ? j : (int)((n - 1) * cdf_grid(j) + 0.5);

		if (r >= n)
			break;
		if (c->k && c->rank[c->k - 1] >= r)
			continue;
		c->rank[c->k] = r;
		c->us[c->k++] = (float)v[r];
	}
}

bool rc_sweep_cdf_ok(const struct rc_sweep_cdf *c)
{
	if (c->n < 0 || c->k < 0 || c->k > RC_SWEEP_CDF_MAX || c->k > c->n ||
	    (c->k == 0) != (c->n == 0))
		return false;
	for (int i = 0; i < c->k; i++)
		if (c->rank[i] < 0 || c->rank[i] >= c->n || !isfinite(c->us[i]) || c->us[i] < 0 ||
		    (i && (c->rank[i] <= c->rank[i - 1] || c->us[i] < c->us[i - 1])))
			return false;
	return !c->k || c->rank[c->k - 1] == c->n - 1;
}

const char *rc_sweep_load_name(int mode)
{
	static const char *const names[] = { "none", "same-pair", "same-port", "fabric" };

	return mode >= 0 && mode <= RC_SWEEP_LOAD_FABRIC ? names[mode] : NULL;
}

int rc_sweep_load_target(int mode, int world, int round, int me, int a, int b)
{
	int p;

	if (me == a || me < 0 || me >= world)
		return -1;
	switch (mode) {
	case RC_SWEEP_LOAD_SAME_PAIR:
		return me == b ? a : -1;
	case RC_SWEEP_LOAD_SAME_PORT:
		return me == b ? -1 : b;
	case RC_SWEEP_LOAD_FABRIC:
		p = rc_sweep_partner(world, round, me);
		return me == b || p == a || p == b ? -1 : p;
	default:
		return -1;
	}
}

const char *rc_sweep_cong_name(int k)
{
	return rc_cong_name(k);
}

double rc_jain(const double *x, int n)
{
	double sum = 0, sq = 0;

	for (int i = 0; i < n; i++) {
		sum += x[i];
		sq += x[i] * x[i];
	}
	if (n < 1 || !(sq > 0))
		return NAN;
	return sum * sum / (n * sq);
}

int rc_incast_counts(int world, int *n, int cap)
{
	int steps = 0;

	for (int k = 1; k < world - 1 && steps < cap; k *= 2)
		n[steps++] = k;
	if (world >= 2 && steps < cap)
		n[steps++] = world - 1;
	return steps;
}

int rc_incast_knee(int steps, const double *goodput, const double *jain, double growth,
		   double jain_min, unsigned *why)
{
	*why = 0;
	for (int k = 0; k < steps; k++) {
		if (k > 0 && goodput[k] < goodput[k - 1] * (1 + growth))
			*why |= RC_INCAST_FLAT;
		if (jain[k] < jain_min)
			*why |= RC_INCAST_UNFAIR;
		if (*why)
			return k;
	}
	return -1;
}
