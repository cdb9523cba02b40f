/* SPDX-License-Identifier: MIT */
/* What the client commands (write, read, atomic) share. */
#ifndef RDMACTL_CLIENT_CMDS_H
#define RDMACTL_CLIENT_CMDS_H

#include <rdmactl/client.h>
#include <rdmactl/ops.h>

#include "cmd.h"

#define CLIENT_OPTS                                                                      \
	{ "token", 'T', "TOKEN", "token the server requires (default: $RDMACTL_TOKEN)" }, \
	{ "bind", 'B', "ADDR", "local address to connect from (it picks the device)" },   \
	{ "offset", 'o', "SIZE", "offset in the region (default 0)" }

#define BENCH_OPTS                                                                         \
	{ "bench", 0, NULL, "benchmark: bandwidth and message rate" },                     \
	{ "lat", 0, NULL, "benchmark: latency percentiles, one operation in flight" },     \
	{ "msg-size", 's', "SIZE", "benchmark message size (default 64K; 8 for atomics)" }, \
	{ "iters", 'n', "N", "benchmark work requests (default 1000)" },                   \
	{ "depth", 0, "N", "work requests outstanding per queue pair (default 128)" },     \
	{ "qps", 0, "N", "queue pairs (default 1)" },                                      \
	{ "post-list", 0, "N", "work requests chained per post (default 1)" },             \
	{ "signal-every", 0, "N", "one signalled completion per N work requests (default 16)" }, \
	{ "busy-poll", 0, NULL, "spin on the completion queue instead of sleeping" }

/* Parse TARGET and connect as the global and client options say. In the
 * shell, a connection kept from an earlier command with the same options is
 * reused. Release it with client_close(), passing the command's result. */
int client_open(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int nconns,
		bool busy_poll, int sq_depth, struct rc_client **out);
/* Close, or in the shell keep for the next command when rc is 0. */
void client_close(struct ctx *ctx, struct rc_client *cl, int rc);
/* The positional TARGET, exactly one. */
int client_target(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		  struct rc_target *t);
/* Report a transfer's figures. */
void report_transfer(struct ctx *ctx, const struct rc_stream_result *r);
/* Write (io->fill) or read (io->drain) len bytes at off of the selected
 * region, with a progress line and the global timeout. Reports its own
 * failure. Open the client with an sq_depth of STREAM_SQ_DEPTH. */
#define STREAM_SQ_DEPTH (RC_CLIENT_DEPTH + 4)
int stream_transfer(struct ctx *ctx, struct rc_client *cl, enum rc_op op, uint64_t off,
		    uint64_t len, struct rc_client_io *io, struct rc_stream_result *res);
/* A progress line on stderr when it is a terminal and output is text. */
void progress_line(void *arg, uint64_t done, uint64_t total);
struct progress {
	struct ctx *ctx;
	double start;
	double last;
	bool on;
};
void progress_init(struct progress *p, struct ctx *ctx);
void progress_end(struct progress *p);

/* --bench / --lat for write, read and atomic. */
bool bench_wanted(const struct cmd *c, const struct opt_vals *v);
int bench_run(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, enum rc_op op,
	      uint64_t compare_add, uint64_t swap);

#endif
