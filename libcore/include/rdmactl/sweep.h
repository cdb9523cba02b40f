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

#include <rdmactl/err.h>
#include <rdmactl/export.h>
#include <rdmactl/group.h>

#define RC_SWEEP_SKIPPED 1 /* rc_sweep_cell.status of a pair not asked for */
#define RC_SWEEP_CTR_MAX 4 /* counters kept per cell: the ones that moved most */

struct rc_sweep_ctr {
	char name[40]; /* "counters/port_rcv_errors", "hw_counters/rcvd_seq_err" */
	uint64_t delta;
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
};
/* "failed", "slow", "below_line_rate", "latency", "latency_max", "asymmetric". */
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
};
/* Fill the defaults of the fields left 0 (min_fraction, max_lat_us stay
 * off; a negative slow_ratio or asym_ratio stays: not judged). */
RC_EXPORT void rc_sweep_limits_default(struct rc_sweep_limits *l);

struct rc_sweep_verdict {
	double bw_median, bw_mad;     /* over every measured direction, Gbit/s, of the rates
				       * judged (rc_sweep_flow_gbit) */
	double wlat_median, wlat_mad; /* p50 WRITE latency, us */
	double rlat_median, rlat_mad;
	double bw_floor; /* below it: slow (NAN: not judged) */
	double wlat_ceiling, rlat_ceiling;
	unsigned *why;      /* caller's world * world: why[i * world + j] */
	bool *node_bad;     /* caller's world: most of its pairs are outliers */
	int *node_outliers; /* caller's world: its pairs with an outlier direction */
	int *node_pairs;    /* caller's world: its pairs asked for (NULL: not wanted) */
	int measured;       /* directions measured */
	int outliers;       /* directions with a reason */
	int bad_pairs;      /* unordered pairs with an outlier direction */
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
};

struct rc_sweep_result {
	int world;
	int rounds;
	double seconds;
	struct rc_sweep_cell *m;     /* world * world: whole on root, own row elsewhere */
	struct rc_sweep_node *nodes; /* world: on root */
};

/* Run the sweep over g (connected to every peer, or partial: a pair that
 * could not connect is not measured, its cells say why, status -ENOTCONN;
 * one of rank 0 fails the sweep, naming it); the matrix and the nodes are
 * gathered to rank 0. Release with rc_sweep_result_free. */
RC_EXPORT int rc_sweep_run(struct rc_group *g, const struct rc_sweep_opts *o,
			   struct rc_sweep_result *res, struct rc_err *err);
RC_EXPORT void rc_sweep_result_free(struct rc_sweep_result *res);

/* The same from a file (at most 1 MiB). */
RC_EXPORT int rc_sweep_pairs_load(const char *path, int world, uint8_t *want, struct rc_err *err);

#endif
