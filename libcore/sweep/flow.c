// SPDX-License-Identifier: MIT
/*
 * A direction's rate while it flows (rc_sweep_flow): perftest reports the
 * peak beside the average for the same reason. On SoftRoCE a lost packet
 * waits out the retransmit timer (268 ms), longer than a sweep's whole
 * bandwidth test, and which direction it hits is chance: the average of
 * the direction it hit falls tenfold, and a healthy device's pairs were
 * named outliers. The median over chunks of the test leaves such a stall
 * in one chunk; a link slowed all along (a lower rate, a longer round
 * trip) is slow in every chunk, and a chunk of 4 x depth writes or more
 * spans several round trips, so its rate is the link's.
 */
#include <stdlib.h>
#include <string.h>

#include <rdmactl/sweep_core.h>

void rc_sweep_flow_start(struct rc_sweep_flow *f, uint64_t min_chunk, double now)
{
	memset(f, 0, sizeof(*f));
	f->min_chunk = min_chunk ? min_chunk : 1;
	f->t0 = now;
}

/* A full table: each pair of chunks becomes one, and chunks are twice as long. */
static void merge(struct rc_sweep_flow *f)
{
	for (int k = 0; k < f->n / 2; k++) {
		f->writes[k] = f->writes[2 * k] + f->writes[2 * k + 1];
		f->seconds[k] = f->seconds[2 * k] + f->seconds[2 * k + 1];
	}
	f->n /= 2;
	f->min_chunk *= 2;
}

void rc_sweep_flow_note(struct rc_sweep_flow *f, uint64_t done, double now)
{
	if (done < f->done0 + f->min_chunk || now <= f->t0)
		return;
	if (f->n == RC_SWEEP_FLOW_CHUNKS)
		merge(f);
	f->writes[f->n] = done - f->done0;
	f->seconds[f->n] = now - f->t0;
	f->n++;
	f->done0 = done;
	f->t0 = now;
}

double rc_sweep_flow_rate(const struct rc_sweep_flow *f, uint64_t msg_size)
{
	double rate[RC_SWEEP_FLOW_CHUNKS];

	for (int k = 0; k < f->n; k++)
		rate[k] = (double)f->writes[k] * (double)msg_size * 8 / f->seconds[k] / 1e9;
	return f->n ? rc_sweep_median(rate, f->n) : 0;
}
