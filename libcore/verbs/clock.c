// SPDX-License-Identifier: MIT
/* The one clock of the data path: deadlines, rates and latencies. */
#include <time.h>

#include <rdmactl/ops.h>
#include <rdmactl/ops_core.h>

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
