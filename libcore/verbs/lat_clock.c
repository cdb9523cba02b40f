// SPDX-License-Identifier: MIT
/*
 * The clock of latency samples. A sample is two readings, one before the
 * post and one after the completion, and the cost of a reading falls inside
 * it. Where the kernel reads its clock in user space (the TSC through the
 * vDSO) a reading costs some 20 ns; where each reading is a system call (an
 * emulated guest whose clock source is the HPET) it costs a microsecond, as
 * much as the operation. perftest reads the CPU's time-stamp counter itself;
 * so does this, on x86-64, once two measurements of its rate against
 * CLOCK_MONOTONIC agree: a counter whose rate moves fails that. The TSCs of
 * two CPUs need not agree (a guest's often do not), so every reading carries
 * the CPU it was taken on, and a sample whose ends lie on two CPUs is left
 * out (NaN), not guessed.
 */
#define _GNU_SOURCE /* sched_getcpu */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include <rdmactl/ops.h>
#include <rdmactl/ops_core.h>

#define CAL_S 0.01          /* one rate measurement: 10 ms */
#define CAL_TOLERANCE 0.01  /* two of them within 1% of each other */
#define CAL_BRACKET_S 50e-6 /* a monotonic reading on each side of a stamp, this close */

static struct rc_stamp mono_stamp(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (struct rc_stamp){ .t = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec };
}

#if defined(__x86_64__)
static struct rc_stamp tsc_stamp(const struct rc_lat_clk *c)
{
	struct rc_stamp s;

	if (c->rdtscp) {
		unsigned int aux;

		s.t = __rdtscp(&aux);
		s.cpu = aux; /* Linux keeps the CPU's number there */
		return s;
	}
	int a = sched_getcpu();

	s.t = __rdtsc();
	int b = sched_getcpu();

	s.cpu = a == b && a >= 0 ? (uint32_t)a : RC_STAMP_NOCPU;
	return s;
}
#endif

struct rc_stamp rc_lat_stamp(const struct rc_lat_clk *c)
{
#if defined(__x86_64__)
	if (c->kind == RC_LAT_CLOCK_TSC)
		return tsc_stamp(c);
#endif
	(void)c;
	return mono_stamp();
}

double rc_lat_span(const struct rc_lat_clk *c, struct rc_stamp a, struct rc_stamp b)
{
	if (c->kind == RC_LAT_CLOCK_TSC && (a.cpu != b.cpu || a.cpu == RC_STAMP_NOCPU))
		return NAN;
	double d = (double)(int64_t)(b.t - a.t) / c->hz - c->cost;

	return d > 0 ? d : 0;
}

int rc_lat_stamp_at(const struct rc_lat_clk *c, struct rc_stamp *s, double *at)
{
#if !defined(__x86_64__)
	(void)c, (void)s, (void)at;
	return -1;
#else
	for (int tries = 0; tries < 100; tries++) {
		double m0 = rc_now();

		*s = tsc_stamp(c);
		double m1 = rc_now();

		if (s->cpu != RC_STAMP_NOCPU && m1 - m0 < CAL_BRACKET_S) {
			*at = (m0 + m1) / 2;
			return 0;
		}
	}
	return -1;
#endif
}

#if defined(__x86_64__)
/* The TSC's rate over CAL_S, its two ends on one CPU; -1 when never. */
static int tsc_rate(const struct rc_lat_clk *c, double *hz)
{
	for (int tries = 0; tries < 8; tries++) {
		struct rc_stamp a, b;
		double ma, mb;

		if (rc_lat_stamp_at(c, &a, &ma))
			return -1;
		while (rc_now() - ma < CAL_S)
			;
		if (rc_lat_stamp_at(c, &b, &mb))
			return -1;
		if (a.cpu == b.cpu && b.t > a.t) {
			*hz = (double)(b.t - a.t) / (mb - ma);
			return 0;
		}
	}
	return -1;
}

/* Make c the TSC, or say why it cannot be. */
static const char *tsc_pick(struct rc_lat_clk *c, char *why, size_t len)
{
	unsigned int eax, ebx, ecx, edx;
	double r1, r2;

	c->rdtscp = __get_cpuid(0x80000001, &eax, &ebx, &ecx, &edx) && (edx & (1u << 27));
	for (int tries = 0; tries < 3; tries++) {
		if (tsc_rate(c, &r1) || tsc_rate(c, &r2))
			return "its rate could not be measured: the thread kept changing CPU or was "
			       "held up";
		if (r1 < 1e8 || r1 > 1e11) {
			snprintf(why, len, "its rate, %.0f Hz, is not a CPU clock's", r1);
			return why;
		}
		if (fabs(r2 - r1) <= CAL_TOLERANCE * r1) {
			c->kind = RC_LAT_CLOCK_TSC;
			c->hz = (r1 + r2) / 2;
			return NULL;
		}
	}
	snprintf(why, len, "its rate moved from %.1f to %.1f MHz within %.0f ms", r1 / 1e6,
		 r2 / 1e6, CAL_S * 1e3);
	return why;
}
#else
static const char *tsc_pick(struct rc_lat_clk *c, char *why, size_t len)
{
	(void)c, (void)why, (void)len;
	return "rdmactl reads it on x86-64 only";
}
#endif

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median gap between back-to-back stamps, in seconds. */
static double stamp_cost(const struct rc_lat_clk *c)
{
	uint64_t gap[63];
	struct rc_stamp t = rc_lat_stamp(c);

	for (int i = 0; i < 63; i++) {
		struct rc_stamp u = rc_lat_stamp(c);

		gap[i] = u.t - t.t;
		t = u;
	}
	qsort(gap, 63, sizeof(gap[0]), cmp_u64);
	return (double)gap[31] / c->hz;
}

int rc_lat_clk_init(struct rc_lat_clk *c, enum rc_lat_clock want, struct rc_err *err)
{
	char why[128];

	*c = (struct rc_lat_clk){ .kind = RC_LAT_CLOCK_MONOTONIC, .hz = 1e9 };
	if (want != RC_LAT_CLOCK_MONOTONIC) {
		const char *no = tsc_pick(c, why, sizeof(why));

		if (no && want == RC_LAT_CLOCK_TSC)
			return rc_err_set(err, ENOTSUP,
					  "the time-stamp counter cannot time latencies: %s", no);
	}
	c->cost = stamp_cost(c);
	return 0;
}

/* The monotonic latency clock's own measure (rc_clock_cost, rdmactl/ops.h). */
double rc_clock_cost(void)
{
	struct rc_lat_clk c;

	rc_lat_clk_init(&c, RC_LAT_CLOCK_MONOTONIC, NULL);
	return c.cost;
}
