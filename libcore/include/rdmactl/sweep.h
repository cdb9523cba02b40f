/* SPDX-License-Identifier: MIT */
/*
 * sweep: every rank of a group measured against every other, pair by pair,
 * to find the slow link or the slow node. The schedule (the round-robin
 * "circle": each rank with one peer a round, so that no port carries two
 * tests at once) and the judgement (fleet median and median absolute
 * deviation, the slower port's link rate, hard bounds, nodes named when
 * most of their pairs are outliers, asymmetric pairs) are pure functions;
 * rc_sweep_run measures over a group.
 */
#ifndef RDMACTL_SWEEP_H
#define RDMACTL_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmactl/dev.h>
#include <rdmactl/err.h>
#include <rdmactl/export.h>
#include <rdmactl/group.h>

#define RC_SWEEP_SKIPPED 1 /* rc_sweep_cell.status of a pair not asked for */
#define RC_SWEEP_CTR_MAX 4 /* counters kept per cell: the ones that moved most */

/* Background traffic while each pair's latency is timed again (--load). */
enum rc_sweep_load {
	RC_SWEEP_LOAD_NONE,
	RC_SWEEP_LOAD_SAME_PAIR, /* the peer writes back into the measuring rank */
	RC_SWEEP_LOAD_SAME_PORT, /* every other rank writes into the peer */
	RC_SWEEP_LOAD_FABRIC,    /* every other pair of the round writes both ways */
};
/* "none", "same-pair", "same-port", "fabric" (NULL out of range). */
RC_EXPORT const char *rc_sweep_load_name(int mode);

/* The congestion counters a port may expose, by kind (rc_sweep_cong_name:
 * "retransmissions", "out_of_sequence", "duplicate_requests", "rnr_naks",
 * "cnp_sent", "cnp_handled", "ecn_marked", "discards", "xmit_wait"). */
#define RC_SWEEP_CONG_N RC_CONG_N
RC_EXPORT const char *rc_sweep_cong_name(int k);

#define RC_SWEEP_BLAME_RECV 1 /* rc_sweep_verdict.blamed: as the receiver */
#define RC_SWEEP_BLAME_SEND 2 /* as the sender */

struct rc_sweep_ctr {
	char name[40]; /* "counters/port_rcv_errors", "hw_counters/rcvd_seq_err" */
	uint64_t delta;
};

/* A latency distribution: its percentiles, microseconds, over n samples. */
struct rc_sweep_tail {
	double p50_us, p99_us, p999_us, max_us;
	int32_t n;
	int32_t pad;
};
/* The percentiles of n samples (v sorted in place; p50 the lower median,
 * the others the nearest rank); n 0 leaves t zero. sweep's latencies and
 * alltoall's phases. */
RC_EXPORT void rc_sweep_tail_of(double *v, int n, struct rc_sweep_tail *t);

/* A latency distribution as its empirical CDF, bounded: k points, each a
 * sample's value and its rank among the n samples sorted (0 the least), so
 * that the CDF passes through (us[i], (rank[i] + 1) / n). Up to
 * RC_SWEEP_CDF_MAX samples, every one of them (the exact step curve);
 * beyond, the quantiles of a fixed grid: each percentile from 0 to 99,
 * then the tail at 99.1 .. 99.9, 99.91 .. 99.99, 99.991 .. 99.999 % and
 * the maximum, each at rank round((n - 1) p) as rc_sweep_tail's
 * percentiles are, so that its p99, p99.9 and max are points of it. */
#define RC_SWEEP_CDF_MAX 128
struct rc_sweep_cdf {
	int32_t n, k;
	int32_t rank[RC_SWEEP_CDF_MAX];
	float us[RC_SWEEP_CDF_MAX];
};
/* The distributions of a direction in rc_sweep_result.cdf. */
enum rc_sweep_cdf_kind {
	RC_SWEEP_CDF_WRITE,      /* 8-byte WRITE, idle */
	RC_SWEEP_CDF_READ,       /* 8-byte READ, idle */
	RC_SWEEP_CDF_WRITE_LOAD, /* the same under load (--load) */
	RC_SWEEP_CDF_READ_LOAD,
	RC_SWEEP_CDF_KINDS
};

/* One direction, i -> j, as rank i measured it. */
struct rc_sweep_cell {
	int32_t status; /* 0 measured; -errno: the pair failed (why says how;
				  * -ENOTCONN: it could not connect, link says why);
				  * RC_SWEEP_SKIPPED: not asked for (--pairs) */
	int32_t nctr;
	double bw_gbit; /* RDMA WRITE bandwidth, Gbit/s: bytes over seconds, stalls and all */
	/* its rate while it flows: the median of the rates of its chunks of
	 * writes (4 x depth or more each), so that a stall on the retransmit
	 * timer slows one chunk, not the direction; what the fleet judges
	 * (rc_sweep_flow_gbit); 0: unknown */
	double bw_flow_gbit;
	uint64_t bytes;
	double seconds;
	double wlat_p50_us, wlat_p99_us; /* 8-byte WRITE, post to completion */
	double rlat_p50_us, rlat_p99_us; /* 8-byte READ */
	double wlat_p999_us, wlat_max_us, rlat_p999_us, rlat_max_us;
	/* the same while background bulk traffic ran (--load; n 0: not measured) */
	struct rc_sweep_tail wload, rload;
	/* error and retransmission counters of rank i's port that moved while
	 * it tested with j (both directions) */
	struct rc_sweep_ctr ctr[RC_SWEEP_CTR_MAX];
	int32_t link;        /* enum rc_link: why the pair could not connect (status
				  * -ENOTCONN); RC_LINK_UP otherwise */
	int32_t shared_port; /* 1: i and j on one port (one NIC, or one device for
			      * every rank): the direction loops back inside it and
			      * crosses no link, so its bandwidth is not judged */
	char why[192];       /* status != 0 */
};

/* Why a direction is an outlier (bits of rc_sweep_verdict.why). */
enum {
	RC_SWEEP_FAILED = 1 << 0,     /* not measured: status != 0 */
	RC_SWEEP_SLOW = 1 << 1,       /* bandwidth well below the fleet's median */
	RC_SWEEP_BELOW_LINE = 1 << 2, /* below min_fraction of the slower port's link rate */
	RC_SWEEP_LAT = 1 << 3,        /* p50 latency well above the fleet's median */
	RC_SWEEP_LAT_MAX = 1 << 4,    /* p50 latency above max_lat_us */
	RC_SWEEP_ASYM = 1 << 5,       /* the slower direction of an asymmetric pair */
	RC_SWEEP_LEAK = 1 << 6,       /* --load: leakage (rc_sweep_leak) well above the fleet's */
};
/* "failed", "slow", "below_line_rate", "latency", "latency_max", "asymmetric", "leakage". */
RC_EXPORT const char *rc_sweep_why_name(unsigned bit);

struct rc_sweep_limits {
	double min_fraction; /* of the slower port's link rate; 0: not judged */
	double max_lat_us;   /* p50 WRITE or READ latency; 0: not judged */
	double mad_k;        /* robust deviations (1.4826 MAD) from the median (default 3) */
	double slow_ratio;   /* and below this fraction of the median bandwidth (default 0.5;
			       * < 0: bandwidth not judged against the fleet) */
	double lat_ratio;    /* and above this multiple of the median latency (default 3) */
	double asym_ratio;   /* one direction below this fraction of the other (default 0.5;
			       * < 0: not judged) */
	double leak_ratio;   /* leakage (rc_sweep_leak) above this multiple of the
			       * fleet's median (and 3 MADs; default 3) */
};
/* Fill the defaults of the fields left 0 (min_fraction, max_lat_us stay
 * off; a negative slow_ratio or asym_ratio stays: not judged). */
RC_EXPORT void rc_sweep_limits_default(struct rc_sweep_limits *l);

/* A direction's leakage as it is judged: its median latency under load
 * over its idle median, of the 8-byte WRITE (read false) or READ; NAN when
 * it was not measured both ways. The median, not the p99: a p99 of tens
 * of samples is their maximum, which one scheduling stall in either phase
 * moves a hundredfold, while a queue behind a bottleneck raises every
 * sample. The report gives the p99's ratio beside it. */
RC_EXPORT double rc_sweep_leak(const struct rc_sweep_cell *c, bool read);

struct rc_sweep_verdict {
	double bw_median, bw_mad;     /* over every measured direction, Gbit/s, of the rates
				       * judged (rc_sweep_flow_gbit) */
	double wlat_median, wlat_mad; /* p50 WRITE latency, us */
	double rlat_median, rlat_mad;
	double bw_floor; /* below it: slow (NAN: not judged) */
	double wlat_ceiling, rlat_ceiling;
	/* --load: leakage (rc_sweep_leak) over the loaded directions */
	double wleak_median, wleak_mad, rleak_median, rleak_mad;
	double wleak_ceiling, rleak_ceiling;
	int loaded;         /* directions measured under load */
	unsigned *why;      /* caller's world * world: why[i * world + j] */
	bool *node_bad;     /* caller's world: most of its pairs are outliers */
	int *node_outliers; /* caller's world: its pairs with an outlier direction */
	int *node_pairs;    /* caller's world: its pairs asked for (NULL: not wanted) */
	/* caller's world or NULL: the port of each rank to blame for leakage,
	 * RC_SWEEP_BLAME_RECV or _SEND (rc_sweep_blame) */
	int *blamed;
	int measured;  /* directions measured */
	int outliers;  /* directions with a reason */
	int bad_pairs; /* unordered pairs with an outlier direction */
	int bad_nodes;
	bool healthy;
	int bw_judged; /* directions whose bandwidth was judged: those measured
			* that cross a link (not shared_port); when none does, the
			* bandwidth's median and MAD are over them all, bw_floor NAN */
};

/* Judge the matrix m (world * world cells; the diagonal ignored) against
 * the fleet and the limits; rate_gbit[i]: rank i's port link rate (0
 * unknown: not judged against it). A node (rank) is named when it has 2
 * pairs or more (asked for: a cell of status RC_SWEEP_SKIPPED is not) and
 * more than half of them have an outlier direction. -EINVAL for
 * bad arguments. */
RC_EXPORT int rc_sweep_judge(int world, const struct rc_sweep_cell *m, const double *rate_gbit,
			     const struct rc_sweep_limits *lim, struct rc_sweep_verdict *v);

/* The rate a direction is judged on: bw_flow_gbit where known, else bw_gbit. */
RC_EXPORT double rc_sweep_flow_gbit(const struct rc_sweep_cell *c);

/* A rank as the report names it. */
struct rc_sweep_node {
	char host[RC_HOST_MAX]; /* the address it listened on */
	char hostname[64];
	char dev[64];
	int port;
	double rate_gbit; /* its port's link rate; 0 unknown */
	/* its port's congestion counters' moves over the loaded phases
	 * (--load, --incast): rc_cong_moved's, present the kinds it has */
	struct rc_cong cong;
};

struct rc_sweep_opts {
	uint64_t msg_size; /* bytes per WRITE of the bandwidth test */
	double duration_s; /* > 0: the bandwidth test lasts this long */
	uint64_t iters;    /* else: this many writes */
	int depth;         /* writes outstanding (default 16) */
	int lat_iters;     /* 8-byte WRITE and READ round trips (default 200) */
	/* rank, round and peer in progress, what ("write", "latency"): called
	 * by every rank, at each step */
	void (*progress)(void *arg, int round, int rounds, int peer, const char *what);
	void *progress_arg;
	/* sysfs root for the counters and link rates (NULL: /sys) */
	const char *sysfs;
	/* the pairs to measure: want[i * world + j], symmetric (NULL: all) */
	const uint8_t *want;
	/* enum rc_sweep_load: after the idle sweep, each direction's latency
	 * again under this background traffic, for duration_s a direction */
	int load;
	/* 1: each direction's latency distributions gathered to rank 0 too
	 * (rc_sweep_result.cdf: RC_SWEEP_CDF_KINDS bounded CDFs a direction,
	 * 4 KiB; every rank sends world of them, for --svg) */
	int cdf;
};

struct rc_sweep_result {
	int world;
	int rounds;
	double seconds;
	struct rc_sweep_cell *m;     /* world * world: whole on root, own row elsewhere */
	struct rc_sweep_node *nodes; /* world: on root */
	/* with rc_sweep_opts.cdf, on root: direction i -> j's kind k (enum
	 * rc_sweep_cdf_kind) at (i * world + j) * RC_SWEEP_CDF_KINDS + k, each
	 * checked as it came (n 0: not measured); NULL otherwise */
	struct rc_sweep_cdf *cdf;
	/* on root: how many directions had their latency timed a second time
	 * (their medians stood out), each keeping the lower median */
	int lat_retimed;
};
/* A direction whose WRITE or READ median is above this many times the
 * fleet's is timed again before it is judged (lat_retimed). */
#define RC_SWEEP_RETIME_RATIO 1.5

/* Run the sweep over g (connected to every peer, or partial: a pair that
 * could not connect is not measured, its cells say why, status -ENOTCONN;
 * one of rank 0 fails the sweep, naming it); the matrix and the nodes are
 * gathered to rank 0. Release with rc_sweep_result_free. */
RC_EXPORT int rc_sweep_run(struct rc_group *g, const struct rc_sweep_opts *o,
			   struct rc_sweep_result *res, struct rc_err *err);
RC_EXPORT void rc_sweep_result_free(struct rc_sweep_result *res);

/* Jain's fairness index of n shares, (sum x)^2 / (n sum x^2): 1 when all
 * are equal, 1/n when one takes everything; NAN for none, or all zero. */
RC_EXPORT double rc_jain(const double *x, int n);

#define RC_INCAST_FLAT 1   /* the goodput stopped growing */
#define RC_INCAST_UNFAIR 2 /* the senders' shares stopped being fair */
#define RC_INCAST_STEPS_MAX 16

/* One sender of an incast step, as it measured itself. */
struct rc_incast_sender {
	uint64_t bytes;
	double seconds;           /* from the step's start to its last completion */
	struct rc_sweep_tail lat; /* each WRITE's post to completion */
	struct rc_sweep_cdf cdf;  /* the same as a CDF (checked on root) */
	int32_t status;           /* 0, or -ENOTCONN: not connected to the receiver */
	int32_t pad;
};

/* N senders writing into the receiver at once. */
struct rc_incast_step {
	int senders;
	double goodput_gbit;          /* all the bytes over the longest sender's time */
	double jain;                  /* over the senders' bytes */
	double spread_s;              /* the latest sender's completion less the earliest's */
	struct rc_sweep_tail lat;     /* the slowest sender's (the highest p99) */
	int slowest;                  /* that sender's rank (-1: none), its CDF in who */
	struct rc_incast_sender *who; /* world: the senders of the step (root) */
};

struct rc_incast_result {
	int world, receiver, steps;
	double seconds;
	struct rc_incast_step step[RC_INCAST_STEPS_MAX];
	struct rc_sweep_node *nodes; /* world, on root: with the counters that moved */
};

/* The first step of an incast whose goodput grew by less than growth (0.1:
 * 10 %) over the step before, or whose Jain index fell below jain_min:
 * its index, with *why RC_INCAST_FLAT or RC_INCAST_UNFAIR (both bits when
 * both); -1 when every step grew and stayed fair. */
RC_EXPORT int rc_incast_knee(int steps, const double *goodput, const double *jain, double growth,
			     double jain_min, unsigned *why);

/* The senders of each step: N = 1, 2, 4, ... and then every rank but the
 * receiver; the first N of the others in rank order. Returns the steps. */
RC_EXPORT int rc_incast_counts(int world, int *n, int cap);
/* Run the incast over g (o: msg_size, depth, duration_s, sysfs, progress):
 * the figures gathered to rank 0. Release with rc_incast_result_free. */
RC_EXPORT int rc_incast_run(struct rc_group *g, const struct rc_sweep_opts *o, int receiver,
			    struct rc_incast_result *res, struct rc_err *err);
RC_EXPORT void rc_incast_result_free(struct rc_incast_result *res);

/* The same from a file (at most 1 MiB). */
RC_EXPORT int rc_sweep_pairs_load(const char *path, int world, uint8_t *want, struct rc_err *err);

#endif
