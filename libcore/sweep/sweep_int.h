/* SPDX-License-Identifier: MIT */
/* sweep's own: the state of a sweep shared by its passes (sweep.c, load.c,
 * incast.c), a port's counters read from sysfs. */
#ifndef RDMACTL_SWEEP_INT_H
#define RDMACTL_SWEEP_INT_H

#include <rdmactl/sweep.h>
#include <rdmactl/mem.h>
#include <rdmactl/ops.h>
#include <rdmactl/ops_core.h>

#define CTR_SNAP_MAX 96

/* The counters of one port whose names say error, retry, sequence,
 * duplicate, discard, drop, timeout, NAK, RNR, link down or congestion. */
struct ctr_snap {
	int n;
	char name[CTR_SNAP_MAX][40];
	uint64_t val[CTR_SNAP_MAX];
};

/* Read them below sysfs (NULL: /sys); a device without counters gives none. */
void ctr_read(const char *sysfs, const char *dev, int port, struct ctr_snap *s);
/* The counters that moved from a to b, the largest moves first, at most
 * max of them, added to what out already holds (n of them); the new n. */
int ctr_moved(const struct ctr_snap *a, const struct ctr_snap *b, struct rc_sweep_ctr *out, int n,
	      int max);

#define LAT_BYTES 8
#define LAT_WARMUP 5

struct remote_buf {
	uint64_t addr;
	uint32_t rkey;
	uint32_t pad;
};

struct sweep {
	struct rc_group *g;
	const struct rc_sweep_opts *o;
	int me, world, rounds, round, timeout_ms;
	struct rc_mem mem;
	struct ibv_mr *mr;
	struct remote_buf *theirs;
	double *lat;
	struct rc_lat_clk clk; /* the monotonic latency clock: a reading's cost off each */
	struct rc_sweep_cell *row;
	struct ctr_snap before, after;
	int *port; /* each rank's port, as rc_sweep_port_ids numbers them */
	int nports;
	int *turn;                /* this round's turns (rc_sweep_turns) */
	struct rc_cong cong;      /* the loaded phases' moves of its port's congestion counters */
	struct rc_sweep_cdf *cdf; /* o->cdf: world * RC_SWEEP_CDF_KINDS, this rank's row */
};

/* This rank's CDF of kind (enum rc_sweep_cdf_kind) towards peer. */
static inline struct rc_sweep_cdf *sweep_cdf(struct sweep *s, int peer, int kind)
{
	return &s->cdf[(size_t)peer * RC_SWEEP_CDF_KINDS + (size_t)kind];
}

/* direction.c: what every pass does to one peer. The progress callback
 * with this round and what is done to peer. */
void sweep_say(struct sweep *s, int peer, const char *what);
/* Until the one-sided operations done to peer reach target; the deadline
 * moves with every completion. */
int sweep_wait_done(struct sweep *s, int peer, uint64_t target, struct rc_err *err);
/* The buffers, the latency clock, the exchange of the buffers' keys, the
 * ports; sweep_free releases what it made. */
int sweep_setup(struct sweep *s, struct rc_err *err);
void sweep_free(struct sweep *s);
/* One 8-byte WRITE or READ to peer, post to completion, in *us. */
int sweep_lat_one(struct sweep *s, int peer, bool read, double *us, struct rc_err *err);
/* n of them (up to lat_iters) to peer, after LAT_WARMUP, their tail in *t and, with
 * cdf, their distribution. */
int sweep_time_lat(struct sweep *s, int peer, bool read, int n, struct rc_sweep_tail *t,
		   struct rc_sweep_cdf *cdf, struct rc_err *err);
/* retime.c: rank 0 picks the directions whose latency stands out, every
 * rank times them again, rank 0 keeps the lower median of each (res on
 * rank 0: the gathered matrix; res->lat_retimed counts them). */
int sweep_retime(struct sweep *s, struct rc_sweep_result *res, struct rc_err *err);

/* The nodes (with this rank's counters' moves) to rank 0. */
int sweep_gather_nodes(struct sweep *s, struct rc_sweep_node *nodes, struct rc_err *err);
/* A string a peer sent in a field of cap bytes: false when it does not end
 * in a NUL there; its control characters become '?'. */
bool sweep_peer_string(char *str, size_t cap);
/* The completion timeout: the first live connection's, else 10 s. */
int sweep_timeout_ms(struct rc_group *g, int me, int world);

/* --load after the idle rounds: each direction's latency again under the
 * background traffic of o->load (load.c). */
int sweep_load_pass(struct sweep *s, struct rc_err *err);
/* WRITEs of msg_size to peer, depth outstanding, for seconds; each one's
 * post to completion into lat (up to cap samples, *nlat of them) when lat
 * is not NULL; the bytes written. Through the engine's pipeline
 * (rc_group_write_burst), as the bandwidth rounds post. */
int sweep_bulk(struct sweep *s, int peer, double seconds, double *lat, int cap, int *nlat,
	       uint64_t *bytes, struct rc_err *err);

#endif
