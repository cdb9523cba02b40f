/* SPDX-License-Identifier: MIT */
/* write and read over a set of rails (rdmactl-write(8), RAILS): one, the
 * ordinary case, or several (a target of several addresses, -d DEV1,DEV2 or
 * --bind ADDR1,ADDR2, one rail each). */
#ifndef RDMACTL_RAILS_CMDS_H
#define RDMACTL_RAILS_CMDS_H

#include <rdmactl/client.h>

#include "client_cmds.h"

/* Whether the target, a's devices or --bind name several rails. */
bool rails_asked(const struct opt_vals *v, const struct client_args *a);
/* Connect every rail and select the region on each: one rail as
 * client_open connects (the shell keeps it), several each on its device
 * and address. Reports its own failure. */
int rails_open(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
	       const struct client_args *a, struct rc_rails **out);
/* Close (one rail: client_close, with the command's rc). r NULL: nothing. */
void rails_close(struct ctx *ctx, struct rc_rails *r, int rc);
/* The transfer, with the progress line and the global timeout. Reports its
 * own failure. */
int rails_transfer(struct ctx *ctx, struct rc_rails *r, enum rc_op op, uint64_t off, uint64_t len,
		   uint64_t stripe, struct rc_rails_io *io, struct rc_rails_result *res);
/* --stripe as given (NULL: absent, the row's default) and its value: refused
 * without rails, checked to 4K to 1G. */
int rails_stripe(struct ctx *ctx, const struct cmd *c, const char *given, bool rails,
		 uint64_t stripe);
/* "PEER1,PEER2" and "DEV1,DEV2" of the rails. */
void rails_names(const struct rc_rails *r, char *peers, size_t pcap, char *devs, size_t dcap);
/* Rail i's finding, into msg: a rate while busy far below its peers', or
 * nothing moved while every rail had chunks; false: none. dev: its device. */
bool rails_finding(const struct rc_rails_result *res, int i, const char *dev, char *msg, size_t cap);
/* The totals, then (several rails) each rail, the failover and the
 * findings. */
void rails_report(struct ctx *ctx, const struct rc_rails *r, const struct rc_rails_result *res,
		  enum rc_op op);

/* --metrics FILE (path; NULL: none) of a transfer over the rails r (NULL: it
 * never opened), written whole with the outcome rc; returns rc, or the
 * write's failure (metrics_commit). One rail is one chunk of the whole
 * transfer, failed when rc is. */
int rails_metrics_commit(struct ctx *ctx, const char *path, enum rc_op op, const struct rc_rails *r,
			 const struct rc_rails_result *res, int rc);

/* --listen ADDR1[:PORT],ADDR2[:PORT] and -d DEV1,DEV2 of a server (register,
 * kvxfer serve): one rail each, in the same order; -d may be left out. */
struct listen_rails {
	int n;
	char host[RC_RAILS_MAX][RC_HOST_MAX];
	char port[RC_RAILS_MAX][8];
	char dev[RC_RAILS_MAX][64]; /* "": as the address routes */
};
/* who: the command, in the messages; devs: DEV1,DEV2 (-d, or a --rails
 * plan's), NULL: none. */
int listen_rails(struct ctx *ctx, const char *who, const char *listen, const char *devs,
		 struct listen_rails *lr);

/* -d DEV1,DEV2 and --bind ADDR1,ADDR2 of a side that sends from several
 * rails to peers named otherwise (kvxfer send): one rail each, in the same
 * order; either may be left out, or be one for all. n 1: one rail. */
struct from_rails {
	int n;
	char dev[RC_RAILS_MAX][64];           /* "": the device of its address */
	char bind[RC_RAILS_MAX][RC_HOST_MAX]; /* "": as the peer's address routes */
};
int from_rails(struct ctx *ctx, const char *who, const char *devs, const char *binds,
	       struct from_rails *fr);

/* --rails PLAN (register, write, read, kvxfer; rdmactl-write(8), RAILS): the
 * devices the rail plan of probe-topology gives this process. PLAN: auto
 * (the GPU of RDMACTL_GPU, else of LOCAL_RANK, where the host has GPUs;
 * else this process's NUMA node), gpu:N or numa:N. Refused beside -d
 * (usage error); says the plan on stderr. */
struct rails_auto {
	int n;
	char dev[RC_RAILS_MAX][64];
	char addr[RC_RAILS_MAX][RC_HOST_MAX]; /* its first IPv4 address, "": none */
	char devs[RC_RAILS_MAX * 65];         /* "DEV1,DEV2", as -d takes them */
};
int rails_auto(struct ctx *ctx, const char *who, const char *plan, struct rails_auto *ra);
/* A client's (write, read): refused beside --bind; the plan's devices
 * become a's (ra's), as -d DEV1,DEV2 would. */
int rails_auto_client(struct ctx *ctx, const struct cmd *c, const char *plan, struct client_args *a,
		      struct rails_auto *ra);
/* Whether listen names every address (0.0.0.0, [::] or ::), alone or with
 * :PORT; port gets the port ("" none). */
bool rails_listen_any(const char *listen, char *port, size_t cap);
/* A server's (register, kvxfer serve): --listen LISTEN is 0.0.0.0[:PORT] or
 * [::][:PORT] (no port, or NULL: port_default; none: a usage error); out
 * gets "ADDR1:PORT,ADDR2:PORT", each rail at its device's first IPv4
 * address, and ra the plan's devices. */
int rails_auto_listen(struct ctx *ctx, const char *who, const char *plan, const char *listen,
		      const char *port_default, struct rails_auto *ra, char *out, size_t cap);

#endif
