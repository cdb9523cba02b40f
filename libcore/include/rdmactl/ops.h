/* SPDX-License-Identifier: MIT */
/* The data path as the commands see it: the operations, what a transfer
 * moved, the extents of a copy, and the clock. Posting, reaping and the
 * stream and copy engines are librdmacore's own (verbs/ops_core.h). */
#ifndef RDMACTL_OPS_H
#define RDMACTL_OPS_H

#include <rdmactl/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <rdmactl/conn.h>

enum rc_op {
	RC_OP_NONE = 0,
	RC_OP_WRITE,
	RC_OP_WRITE_IMM,
	RC_OP_READ,
	RC_OP_FAA,
	RC_OP_CAS,
	RC_OP_SEND,
	RC_OP_RECV,
};

/* The clock that times latency samples: the CPU's time-stamp counter, as
 * perftest reads it (x86-64: no system call, where the kernel's clock may
 * be one), or clock_gettime(CLOCK_MONOTONIC). */
enum rc_lat_clock {
	RC_LAT_CLOCK_AUTO,      /* the TSC where its rate checks out, else MONOTONIC */
	RC_LAT_CLOCK_TSC,       /* the TSC, or an error saying why not */
	RC_LAT_CLOCK_MONOTONIC, /* clock_gettime(CLOCK_MONOTONIC) */
};

/* What a transfer moved: bytes, work requests and the seconds it took. */
struct rc_stream_result {
	uint64_t bytes;
	uint64_t ops;
	double seconds;
	/* With latencies: what a clock read costs (the median gap between
	 * back-to-back reads), taken off each of them. */
	double clock_us;
	enum rc_lat_clock lat_clock; /* the one used: TSC or MONOTONIC (AUTO: none) */
	double lat_hz;               /* its ticks a second (the TSC's as measured) */
	/* TSC: samples whose thread changed CPU between the post and the
	 * completion, whose two counters need not agree: NaN in lat_us. */
	uint64_t lat_moved;
};

/* One extent of a copy between two regions: len bytes from offset src of
 * the source to offset dst of the destination. */
struct rc_extent {
	uint64_t src; /* offset in the source region */
	uint64_t dst; /* offset in the destination region */
	uint64_t len;
};

/* Monotonic time in seconds. */
RC_EXPORT double rc_now(void);
/* What a clock read costs a sample timed by two of them, in seconds: the
 * median gap between back-to-back rc_now reads. The end of the first read
 * and the start of the second fall inside any interval they time: about
 * 20 ns where the clock is read in user space (the TSC), a microsecond
 * where each read is a system call (an emulated guest's HPET). */
RC_EXPORT double rc_clock_cost(void);
/* A time of rc_now's as Unix time (seconds since the epoch, wall clock):
 * for reports that other processes, or hosts, line up. */
RC_EXPORT double rc_wall(double mono);
/* perftest's peak: the least time per operation over any run of consecutive
 * operations i..j, (completed[j] - posted[i]) / (j - i + 1), where posted[k]
 * and completed[k] are the times operation k was posted and the completion
 * that covered it came (selective signalling: the next signalled one). Runs
 * of up to 4096 operations (shorter past 24,000, 10^8 runs in all) and the
 * whole run are looked at. 0 when n is 0.
 * A message size over it is the peak bandwidth. */
RC_EXPORT double rc_peak_op_seconds(const double *posted, const double *completed, uint64_t n);

#endif
