// SPDX-License-Identifier: MIT
/* The one clock of the data path: deadlines, rates and latencies. */
#include <stdlib.h>
#include <time.h>

#include <rdmactl/ops.h>

double rc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double rc_wall(double mono)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 - (rc_now() - mono);
}

static int cmp_gap(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double rc_clock_cost(void)
{
	double gap[63], t = rc_now();

	for (int i = 0; i < 63; i++) {
		double u = rc_now();

		gap[i] = u - t;
		t = u;
	}
	qsort(gap, 63, sizeof(gap[0]), cmp_gap);
	return gap[31];
}
