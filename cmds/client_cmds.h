/* SPDX-License-Identifier: MIT */
/* What the client commands (write, read, atomic) share. */
#ifndef RDMACTL_CLIENT_CMDS_H
#define RDMACTL_CLIENT_CMDS_H

#include <rdmactl/client.h>
#include <rdmactl/etcd.h>
#include <rdmactl/ops.h>

#include "cmd.h"
#include "fabric_cmds.h"
#include "metrics.h"
#include "progress.h"

/* The options write, read and atomic share, as X-macro lists of
 * X(ID, "name", short, "ARG", "help"): P is the command's prefix, so
 * CLIENT_OPTS(X, WR) makes WR_TOKEN, WR_BIND, WR_OFFSET. A command lists
 * each block whole, so its options stay in this order and the shared parsers
 * below find them from the first one's index (CO_* and BO_* are the offsets
 * inside a block, made from the same lists). */
#define CLIENT_OPTS(X, P) \
	X(P##_TOKEN, "token", 'T', "TOKEN", "token, visible in /proc: use --token-file", \
	  OPT_STR(struct client_args, token_arg, NULL)) \
	X(P##_TOKEN_FILE, "token-file", 0, "FILE", "the token, from FILE (mode 600)", COMP_FILE, \
	  OPT_STR(struct client_args, token_file, NULL)) \
	X(P##_BIND, "bind", 'B', "ADDR", "local address to connect from", \
	  OPT_STR(struct client_args, bind, NULL)) \
	X(P##_OFFSET, "offset", 'o', "SIZE", "offset in the region", \
	  OPT_SIZE(struct client_args, off, "0")) \
	X(P##_FABRIC, "fabric", 0, "FABRIC", FABRIC_HELP, COMP_WORDS, FABRIC_WORDS, \
	  OPT_STR(struct client_args, fabric_arg, NULL)) \
	X(P##_DESCRIPTOR, "descriptor", 0, "FILE", "--fabric ofi: the server's region line", \
	  COMP_FILE, OPT_STR(struct client_args, descriptor, NULL))

#define BENCH_OPTS(X, P) \
	X(P##_BENCH, "bench", 0, NULL, "benchmark: bandwidth and message rate", \
	  OPT_FLAG(struct bench_args, bench)) \
	X(P##_LAT, "lat", 0, NULL, "benchmark: latency, one in flight", \
	  OPT_FLAG(struct bench_args, lat)) \
	X(P##_MSG_SIZE, "msg-size", 's', "SIZE", "message size, or MIN:MAX (default: 64K)", \
	  OPT_STR(struct bench_args, msg_size, NULL)) \
	X(P##_ITERS, "iters", 'n', "N", "benchmark work requests", \
	  OPT_U64(struct bench_args, iters, "1000")) \
	X(P##_DEPTH, "depth", 0, "N", "work requests in flight per QP", \
	  OPT_INT(struct bench_args, depth, 1, 8192, "128"), \
	  OPT_GIVEN(struct bench_args, depth_given)) \
	X(P##_QPS, "qps", 0, "N", "queue pairs", OPT_INT(struct bench_args, qps, 1, 64, "1")) \
	X(P##_POST_LIST, "post-list", 0, "N", "work requests chained per post", \
	  OPT_INT(struct bench_args, post_list, 1, 64, "1")) \
	X(P##_SIGNAL_EVERY, "signal-every", 0, "N", "signal every Nth work request", \
	  OPT_INT(struct bench_args, signal_every, 1, 8192, "16")) \
	X(P##_BUSY_POLL, "busy-poll", 0, NULL, "busy-poll the completion queue", \
	  OPT_FLAG(struct bench_args, busy_poll)) \
	X(P##_LAT_CLOCK, "lat-clock", 0, "CLOCK", "timer: auto, tsc or monotonic", COMP_WORDS, \
	  "auto|tsc|monotonic", OPT_WORD(struct bench_args, lat_clock, "auto"), \
	  OPT_GIVEN(struct bench_args, lat_clock_given)) \
	METRICS_OPT(X, P, OPT_STR(struct bench_args, metrics, NULL))

enum { CLIENT_OPTS(OPT_INDEX, CO) CO_COUNT };
enum { BENCH_OPTS(OPT_INDEX, BO) BO_COUNT };

/* The client options, parsed (--token, --token-file, else $RDMACTL_TOKEN). */
struct client_args {
	const char *token_arg, *token_file; /* --token, --token-file as given */
	const char *token;
	char token_buf[RC_TOKEN_MAX + 1]; /* what --token-file held */
	const char *bind;
	/* -d DEV, or the devices of several rails (DEV1,DEV2: -d or --rails);
	 * NULL: as the target routes */
	const char *devs;
	uint64_t off;
	const char *fabric_arg; /* --fabric as given, or NULL */
	struct rc_fabric fab;   /* --fabric */
	const char *descriptor; /* --descriptor FILE, or NULL */
};
/* Parse the CLIENT_OPTS block whose first option (TOKEN) is at index first.
 * 0 or -EINVAL after a usage error. */
int client_args_parse(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int first,
		      struct client_args *a);

/* The benchmark options, parsed and checked (--bench / --lat). */
struct bench_args {
	bool on; /* --bench or --lat given */
	bool bench;
	bool lat;
	bool busy_poll;
	uint64_t msg;
	uint64_t msg_max; /* --msg-size MIN:MAX: the last size of the sweep; 0 none */
	uint64_t iters;
	int depth;
	const char *depth_given; /* --depth as given, or NULL */
	int qps;
	int post_list;
	int signal_every;
	int lat_clock;               /* enum rc_lat_clock: the words' order is its */
	const char *lat_clock_given; /* --lat-clock as given, or NULL */
	const char *msg_size;        /* --msg-size as given, or NULL */
	const char *metrics;         /* --metrics FILE, or NULL */
};
/* Parse the BENCH_OPTS block whose first option (BENCH) is at index first;
 * a->on says whether a benchmark was asked. Defaults depend on op. */
int bench_args_parse(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int first,
		     enum rc_op op, struct bench_args *a);

/* Parse TARGET and connect as the global and client options say. In the
 * shell, a connection kept from an earlier command with the same options is
 * reused. Release it with client_close(), passing the command's result. */
int client_open(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		const struct client_args *a, int nconns, bool busy_poll, int sq_depth,
		struct rc_client **out);
/* Close, or in the shell keep for the next command when rc is 0. */
void client_close(struct ctx *ctx, struct rc_client *cl, int rc);
/* The positional TARGET, exactly one: HOST:PORT/REGION, or
 * etcd://HOST:PORT/NS/REGION, resolved through etcd into *t. t NULL: only
 * check its form (nothing is asked of etcd). */
int client_target(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		  struct rc_target *t);
/* A region named through etcd: where to ask, and its key. */
struct etcd_name {
	char server[RC_HOST_MAX + 8];
	char ns[64];
	char region[RC_NAME_MAX];
	char key[RC_ETCD_KEY_MAX];
	const char *token; /* the data token: the record must carry its MAC (NULL: none) */
};
int etcd_name_parse(struct ctx *ctx, const char *cmd, const char *s, struct etcd_name *n);
/* Read the region's record: its server into *t (and the whole record, its
 * rails too, into *rec, may be NULL). Reports its own failure. */
int etcd_name_resolve(struct ctx *ctx, const struct etcd_name *n, struct rc_target *t,
		      struct rc_etcd_region *rec);
/* Report a transfer's figures. */
void report_transfer(struct ctx *ctx, const struct rc_stream_result *r);
/* The send queue a transfer's client is opened with (rails_open). */
#define STREAM_SQ_DEPTH (RC_CLIENT_DEPTH + 4)

/* --bench / --lat for write, read and atomic: connect, run, print. */
int bench_run(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
	      const struct client_args *ca, const struct bench_args *b, enum rc_op op,
	      uint64_t compare_add, uint64_t swap);

#endif
