/* SPDX-License-Identifier: MIT */
/* A client of a region server: connect, learn the region, move data. */
#ifndef RDMACTL_CLIENT_H
#define RDMACTL_CLIENT_H

#include <rdmactl/export.h>

#include <rdmactl/conn.h>
#include <rdmactl/ctrl.h>
#include <rdmactl/ops.h>
#include <rdmactl/parse.h>

/* A client of one server: its connections and the region it selected
 * (opaque: read it through the rc_client_* calls below). */
struct rc_client;
/* Several clients of one region, one per rail (opaque: rc_rails_*). */
struct rc_rails;

struct rc_client_opts {
	struct rc_conn_opts conn;
	const char *token;
	/* Migration's: connect in the admin role, proving this token (the
	 * server proves it first); a server that holds no admin token is then
	 * connected in the data role, with token. NULL: the data role. */
	const char *admin_token;
	int nconns; /* QPs to open (default 1) */
	/* A test's hook: called after a write or atomic completed, before its
	 * DONE notice goes (NULL: none). */
	void (*before_done)(void *arg);
	void *before_done_arg;
};

/* Connect (nconns QPs), fetch the region table and select t->region (or the
 * server's only region when t->region is empty). */
RC_EXPORT int rc_client_open(const struct rc_target *t, const struct rc_client_opts *opts,
			     struct rc_client **out, struct rc_err *err);
RC_EXPORT int rc_client_close(struct rc_client *cl);
/* Select the region t names among those the server listed (its only one when
 * t->region is empty): lets one connection serve several regions in turn. */
RC_EXPORT int rc_client_select(struct rc_client *cl, const struct rc_target *t, struct rc_err *err);
/* False once a connection saw a CM event (a disconnect, an error): an idle
 * established connection has none pending. Does not wait. */
RC_EXPORT bool rc_client_alive(const struct rc_client *cl);
/* Check that [off, off + len) lies in the region and the access allows op. */
RC_EXPORT int rc_client_check(const struct rc_client *cl, uint64_t off, uint64_t len, bool write,
			      bool atomic, struct rc_err *err);

/* Where a client is connected: "addr:port" of its server, the local device. */
RC_EXPORT const char *rc_client_peer(const struct rc_client *cl);
RC_EXPORT const char *rc_client_device(const struct rc_client *cl);
/* The region selected (by rc_client_open or rc_client_select). */
RC_EXPORT const struct rc_region_desc *rc_client_region(const struct rc_client *cl);
/* Every region the server listed: *n of them. */
RC_EXPORT const struct rc_region_desc *rc_client_regions(const struct rc_client *cl, int *n);

/* Moving data. Each call owns its staging buffer: allocated and registered
 * for the call, released before it returns, so that callers never touch
 * verbs. Offsets are in the selected region (check them first with
 * rc_client_check). A timeout_ms <= 0 is the connection's own. */

/* write and read stream through RC_CLIENT_DEPTH slots of RC_CLIENT_CHUNK
 * bytes on the first connection (open it with an sq_depth above the depth). */
#define RC_CLIENT_CHUNK (256u << 10)
#define RC_CLIENT_DEPTH 16

struct rc_client_io {
	/* write: fill the slot (len bytes at buf, offset off of the write)
	 * before it is posted; return bytes (< len only at the end of the
	 * input) or -errno */
	ssize_t (*fill)(void *arg, uint64_t off, void *buf, size_t len);
	/* read: consume a landed slot, in offset order; 0 or -errno */
	int (*drain)(void *arg, uint64_t off, const void *buf, size_t len);
	void *arg;
	void (*progress)(void *arg, uint64_t done, uint64_t total);
	void *progress_arg;
	int timeout_ms;
	/* write: restart the input from its first byte (0), so that a write cut
	 * by a migration's fence is retried whole at the new home; NULL: not
	 * retried. */
	int (*rewind)(void *arg);
};

/* The migration contract of rdmactl's clients (rdmactl-migrate(8)): a write
 * and an atomic are announced to the server before they are posted and once
 * they completed (RC_MIG_INTENT, RC_MIG_DONE, on the same QP), so a server
 * moving the region knows every block written. When the server revoked the
 * region (a remote access error: the operation did not happen), the client
 * asks it where the region went and follows it, then retries: a write when
 * io->rewind can restart its input, a read when nothing was delivered yet,
 * an atomic always. An atomic that failed in any other way has an unknown
 * outcome and is never retried. */
RC_EXPORT int rc_client_write(struct rc_client *cl, uint64_t off, uint64_t len,
			      const struct rc_client_io *io, struct rc_stream_result *res,
			      struct rc_err *err);
RC_EXPORT int rc_client_read(struct rc_client *cl, uint64_t off, uint64_t len,
			     const struct rc_client_io *io, struct rc_stream_result *res,
			     struct rc_err *err);
/* An RDMA WRITE_WITH_IMM of no bytes at off: the immediate alone. */
RC_EXPORT int rc_client_write_imm(struct rc_client *cl, uint64_t off, uint32_t imm, int timeout_ms,
				  struct rc_err *err);
/* FAA (compare_add is the delta) or CAS on the 8 bytes at off; *old gets
 * what they held before. */
RC_EXPORT int rc_client_atomic(struct rc_client *cl, enum rc_op op, uint64_t off,
			       uint64_t compare_add, uint64_t swap, int timeout_ms, uint64_t *old,
			       struct rc_err *err);

/* A benchmark as perftest runs one: iters work requests of msg bytes from
 * one local buffer to the same remote span, over qps connections. */
struct rc_client_bench {
	enum rc_op op; /* WRITE, READ, FAA or CAS */
	uint64_t off;
	size_t msg;
	uint64_t iters;
	int depth;
	int qps; /* at most the client's connections */
	int post_list;
	int signal_every;
	uint64_t compare_add;
	uint64_t swap;
	int timeout_ms;
	/* iters latencies (needs signal_every 1), or NULL; NaN for one left
	 * out (rc_stream_result's lat_moved) */
	double *lat_us;
	enum rc_lat_clock lat_clock; /* what times them */
	/* iters entries each, or NULL: when each work request was posted and when
	 * the completion that covered it came (rc_peak_op_seconds) */
	double *posted_s;
	double *completed_s;
};

RC_EXPORT int rc_client_bench(struct rc_client *cl, const struct rc_client_bench *b,
			      struct rc_stream_result *res, struct rc_err *err);

/* A set of one or more rails to one region (rdmactl-write(8)): one client
 * per rail, each on its own device and its own server address. One rail is
 * the ordinary case, a transfer on it the stream of rc_client_write and
 * rc_client_read; on several, a transfer is striped over them in chunks.
 * See region/rails.c. RC_RAILS_MAX: parse.h. */

struct rc_rail_spec {
	const char *host; /* the server's address on this rail */
	const char *port;
	const char *bind; /* local address; NULL: the device's IPv4 address */
	const char *dev;  /* local device; NULL: the one bind routes through */
};

/* Open one client per rail (o as rc_client_open takes it, but for the
 * rail's bind and device) and select region on each (the server's only one
 * when empty); every rail must see it with the same length and access. */
RC_EXPORT int rc_rails_open(const struct rc_rail_spec *spec, int n, const char *region,
			    const struct rc_client_opts *o, struct rc_rails **out,
			    struct rc_err *err);
/* The set of one rail of a client opened otherwise (rc_client_open, a
 * shell's kept connection): rc_rails_close frees the set, not cl. */
RC_EXPORT int rc_rails_of(struct rc_client *cl, struct rc_rails **out, struct rc_err *err);
/* Close every rail's client (but one rc_rails_of borrowed) and free r. */
RC_EXPORT int rc_rails_close(struct rc_rails *r);
/* How many rails r has. */
RC_EXPORT int rc_rails_count(const struct rc_rails *r);
/* Rail i's client (0 <= i < rc_rails_count): its peer, device and region. */
RC_EXPORT struct rc_client *rc_rails_client(const struct rc_rails *r, int i);

/* What one rail carried in a transfer. */
struct rc_rail_result {
	uint64_t bytes;     /* of chunks it completed */
	uint64_t chunks;    /* chunks it completed */
	uint64_t ops;       /* their RDMA WRITEs or READs (work requests) */
	uint64_t errors;    /* chunks that failed on it (then sent again on another) */
	double busy_s;      /* time it spent moving chunks (its rate: bytes / busy_s) */
	bool failed;        /* it failed and carried nothing more */
	double failed_at_s; /* when, from the transfer's start */
	char error[256];    /* why */
};

struct rc_rails_result {
	struct rc_stream_result total;
	uint64_t stripe;
	int n;
	struct rc_rail_result rail[RC_RAILS_MAX];
	int failed_rail; /* the first rail that failed, -1: none */
	double failed_at_s;
	uint64_t bytes_after_failure; /* completed by the others after it */
	uint64_t resent;              /* chunks sent again after a rail failed under them */
};

/* The data, as struct rc_client_io's. On several rails fill and drain are
 * called for any chunk, in any order, from one thread per rail at once (off
 * counts from the transfer's first byte), progress from one at a time, and
 * rewind never; on one rail, as rc_client_write and rc_client_read call
 * them: in order, from the caller's thread. */
struct rc_rails_io {
	ssize_t (*fill)(void *arg, uint64_t off, void *buf, size_t len);
	int (*drain)(void *arg, uint64_t off, const void *buf, size_t len);
	void *arg;
	void (*progress)(void *arg, uint64_t done, uint64_t total);
	void *progress_arg;
	int timeout_ms;
	int (*rewind)(void *arg); /* one rail: as rc_client_io's; NULL: none */
};

/* Write or read len bytes at off of the region. One rail: the stream of
 * rc_client_write or rc_client_read (stripe is kept in res, and rail 0
 * carried the whole as one chunk). Several: in chunks of stripe bytes:
 * chunk k is rail k % n's, and a rail done with its own takes the last
 * ones of the rail with the most left. A rail that fails
 * (its QP in error, a completion timed out) stops and its unfinished chunk
 * goes to the others; the transfer fails when every rail did, or at once
 * when fill or drain failed. */
RC_EXPORT int rc_rails_transfer(struct rc_rails *r, enum rc_op op, uint64_t off, uint64_t len,
				uint64_t stripe, const struct rc_rails_io *io,
				struct rc_rails_result *res, struct rc_err *err);

#endif
