/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/sweep.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_SWEEP_CORE_H
#define RDMACTL_SWEEP_CORE_H

#include <rdmactl/sweep.h>

/* Rounds for world ranks: world - 1, or world when it is odd (each rank
 * then sits one round out). 0 for fewer than 2 ranks. */
int rc_sweep_rounds(int world);
/* The peer of rank in round (0 .. rounds - 1): -1 for its bye, or for a
 * rank or round out of range. Over the rounds every unordered pair meets
 * exactly once and no rank meets two peers in one round. */
int rc_sweep_partner(int world, int round, int rank);

/* Ranks that share a port (one NIC for several ranks, or every rank on one
 * device) share its time: two pairs of a round on one port would measure
 * each other. port[r] (0 .. nports - 1) names rank r's port; each pair of
 * round gets the first turn in which neither of its ports is busy yet,
 * into turn[] (both ranks; -1 for a rank that sits out). Returns the turns
 * the round takes, 1 when no two of its pairs share a port, or -ENOMEM. */
int rc_sweep_turns(int world, int round, const int *port, int nports, int *turn);
/* Each rank's port from its key (world of them, equal for one port), as
 * numbers from 0 in the order the ranks first name them, into port[];
 * returns how many ports. */
int rc_sweep_port_ids(int world, const uint64_t *key, int *port);

/* The median of n values (NAN for none); v is left as it was. */
double rc_sweep_median(const double *v, int n);
/* The median absolute deviation from med (NAN for none). */
double rc_sweep_mad(const double *v, int n, double med);

/* The pairs to measure, from text: one "A B" a line (ranks below world,
 * A != B; either order names the pair), '#' starts a comment. want gets
 * world * world bytes, symmetric. -EINVAL naming the line when it is
 * wrong, or when it names no pair. */
int rc_sweep_pairs_parse(const char *text, int world, uint8_t *want, struct rc_err *err);

/* The bounded CDF (struct rc_sweep_cdf) of n samples v sorted ascending. */
void rc_sweep_cdf_of(const double *v, int n, struct rc_sweep_cdf *c);
/* Whether a CDF a peer sent holds together: k within the bound, 0 only for
 * no samples, ranks rising within n and the last the maximum's, values
 * finite, not negative and not falling. */
bool rc_sweep_cdf_ok(const struct rc_sweep_cdf *c);

/* --load: whom rank me loads with bulk WRITEs while rank a times its
 * latency towards b in round (a and b partners there): a rank, or -1 when
 * me stays quiet (a itself, b outside same-pair, a rank with a bye). */
int rc_sweep_load_target(int mode, int world, int round, int me, int a, int b);

/* A port's link rate from sysfs (root/class/infiniband/DEV/ports/PORT/rate),
 * Gbit/s; 0 when unknown. */
double rc_sweep_link_rate(const char *sysfs, const char *dev, int port);

/* A direction's rate while it flows: its writes' completions noted in
 * chunks of min_chunk or more (a full table of chunks merges pairs, so the
 * chunks grow), each chunk's rate its writes over its time; the median of
 * those rates, so that a stall (a lost packet waiting out the retransmit
 * timer) slows the chunk it falls in, not the direction, while a link
 * slowed all along is slow in every chunk. */
#define RC_SWEEP_FLOW_CHUNKS 64
struct rc_sweep_flow {
	uint64_t min_chunk, done0; /* completions at the current chunk's start */
	double t0;                 /* and its time */
	int n;
	uint64_t writes[RC_SWEEP_FLOW_CHUNKS];
	double seconds[RC_SWEEP_FLOW_CHUNKS];
};
void rc_sweep_flow_start(struct rc_sweep_flow *f, uint64_t min_chunk, double now);
/* done writes completed since the start, at time now */
void rc_sweep_flow_note(struct rc_sweep_flow *f, uint64_t done, double now);
/* Gbit/s for writes of msg_size bytes; 0 when no chunk was completed. */
double rc_sweep_flow_rate(const struct rc_sweep_flow *f, uint64_t msg_size);

/* A second look before a direction is named for its latency: the directions
 * measured (status 0) whose WRITE or READ median is above
 * RC_SWEEP_RETIME_RATIO times the median of its kind over them all get
 * mask[i * world + j] = 1, the others 0; how many, or -ENOMEM. */
int rc_sweep_retime_pick(int world, const struct rc_sweep_cell *m, uint8_t *mask);
/* A direction's medians, timed again. */
struct rc_sweep_retime {
	double wlat_p50_us, rlat_p50_us;
};
/* The second medians, got[i * world + j] from rank i, into m where mask
 * says: each keeps the lower of its two. A masked direction whose second
 * medians are not positive finite numbers: -(i + 1), i the rank that sent
 * them, and m untouched; else how many directions were merged. */
int rc_sweep_retime_merge(int world, struct rc_sweep_cell *m, const uint8_t *mask,
			  const struct rc_sweep_retime *got);

#endif
