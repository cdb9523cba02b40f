/* SPDX-License-Identifier: MIT */
/* rdmactl register, between its two files: the options (register_args.c
 * parses and checks them, register.c serves). */
#ifndef RDMACTL_CMDS_REGISTER_H
#define RDMACTL_CMDS_REGISTER_H

#include <stdbool.h>
#include <stdint.h>

#include <rdmactl/client.h>
#include <rdmactl/mem.h>
#include <rdmactl/server.h>

#include "cmds.h"
#include "fabric_cmds.h"
#include "metrics.h"
#include "rails_cmds.h"

#define REGISTER_OPTS(X) \
	X(RG_LISTEN, "listen", 'l', "ADDR[:PORT]", \
	  "address (and port, default " RC_DEFAULT_PORT ") to serve on", \
	  OPT_STR(struct register_args, listen, NULL)) \
	X(RG_RAILS, "rails", 0, "PLAN", "rail plan's rails: auto, gpu:N or numa:N", COMP_WORDS, \
	  "auto|gpu:0|numa:0", OPT_STR(struct register_args, rails_plan, NULL)) \
	X(RG_NAME, "name", 'N', "NAME", "region name; each starts a region", .repeat = true) \
	X(RG_SIZE, "size", 'S', "SIZE", "region size (4K, 1M, 1G...)", .repeat = true) \
	X(RG_FILE, "file", 'f', "FILE", "back the region with FILE (saved on exit)", COMP_FILE, \
	  .repeat = true) \
	X(RG_MEM, "mem", 'm', "KIND", "host, hugepage, file or cuda[:N]", COMP_WORDS, \
	  "host|hugepage|file|cuda|cuda:0", .repeat = true) \
	X(RG_GPU_REG, "gpu-reg", 0, "PATH", "auto, dmabuf, peermem or bounce", COMP_WORDS, \
	  "auto|dmabuf|peermem|bounce", OPT_STR(struct register_args, gpu_reg_name, "auto")) \
	X(RG_ACCESS, "access", 0, "ACCESS", "what peers may do: ro, rw, atomic", COMP_WORDS, \
	  "ro|rw|atomic", .repeat = true, OPT_DEFAULT("rw")) \
	X(RG_TOKEN, "token", 'T', "TOKEN", "token, visible in /proc: use --token-file", \
	  OPT_STR(struct register_args, token_arg, NULL)) \
	X(RG_TOKEN_FILE, "token-file", 0, "FILE", "the token, from FILE (mode 600)", COMP_FILE, \
	  OPT_STR(struct register_args, token_file, NULL)) \
	X(RG_ADMIN_TOKEN_FILE, "admin-token-file", 0, "FILE", \
	  "admin token from FILE (or $RDMACTL_ADMIN_TOKEN)", COMP_FILE, \
	  OPT_STR(struct register_args, admin_token_file, NULL)) \
	X(RG_ALLOW_UNAUTH_MIG, "allow-unauthenticated-migration", 0, NULL, \
	  "no admin token: any client may migrate", \
	  OPT_FLAG(struct register_args, allow_unauth_mig)) \
	X(RG_MAX_CONNS, "max-conns", 0, "N", "connections at once, 1 to 1024", \
	  OPT_INT(struct register_args, max_conns, 1, 1024, "64")) \
	X(RG_KEEPALIVE_MS, "keepalive-ms", 0, "MS", "keepalive every MS (0: off)", \
	  OPT_INT(struct register_args, keepalive_ms, 0, 3600000, "5000")) \
	X(RG_FLUSH_EVERY, "flush-every", 0, "TIME", \
	  "also save --file regions every TIME (30s, 5m)", \
	  OPT_DUR(struct register_args, flush_every_ms, 100, 86400000, NULL)) \
	X(RG_PUBLISH, "publish", 0, "URL", "publish in etcd: etcd://HOST:PORT/NS", \
	  OPT_STR(struct register_args, publish, NULL)) \
	X(RG_LEASE_TTL, "lease-ttl", 0, "SECONDS", "--publish: the lease's TTL", \
	  OPT_INT(struct register_args, lease_ttl, 2, 3600, "10"), \
	  OPT_GIVEN(struct register_args, lease_ttl_given)) \
	METRICS_OPT(X, RG, OPT_STR(struct register_args, metrics, NULL)) \
	X(RG_METRICS_INTERVAL, "metrics-interval", 0, "SECONDS", \
	  "--metrics: rewrite it this often", \
	  OPT_INT(struct register_args, metrics_every_s, 1, 86400, "15"), \
	  OPT_GIVEN(struct register_args, metrics_every_given)) \
	X(RG_FABRIC, "fabric", 0, "FABRIC", FABRIC_HELP, COMP_WORDS, FABRIC_WORDS, \
	  OPT_STR(struct register_args, fabric_arg, NULL))

enum { REGISTER_OPTS(OPT_INDEX) REGISTER_NOPTS };

struct region_spec {
	const char *name, *size, *file, *mem, *access; /* as given */
	enum rc_mem_kind kind;                         /* as checked */
	int gpu;                                       /* cuda:N */
	enum rc_access acc;
	uint64_t bytes;
};

#define MAX_SPECS 16

/* What `register` was asked, parsed and checked. */
struct register_args {
	const char *listen;     /* --listen as given */
	const char *fabric_arg; /* --fabric as given, or NULL */
	const char *publish;    /* --publish URL, or NULL */
	char host[RC_HOST_MAX];
	char port[8];
	int max_conns;
	int keepalive_ms;   /* -1: off */
	int flush_every_ms; /* 0: only on exit */
	struct region_spec specs[MAX_SPECS];
	int nspecs;
	enum rc_mem_reg gpu_reg;
	const char *gpu_reg_name;           /* --gpu-reg as given, else its row's default */
	const char *token_arg, *token_file; /* --token, --token-file as given */
	const char *admin_token_file;       /* --admin-token-file as given */
	const char *token;
	char token_buf[RC_TOKEN_MAX + 1]; /* what --token-file held */
	char admin[RC_TOKEN_MAX + 1];     /* "": none */
	bool allow_unauth_mig;
	char etcd[RC_HOST_MAX + 8]; /* --publish: the etcd's HOST:PORT, or "" */
	char ns[64];
	int lease_ttl;
	const char *lease_ttl_given;
	const char *metrics; /* --metrics FILE, or NULL */
	int metrics_every_s;
	const char *metrics_every_given;
	/* --listen ADDR1,ADDR2 (-d DEV1,DEV2): one region on several rails, a
	 * server per rail; [0] is host, port and -d above. */
	struct listen_rails lr;
	const char *rails_plan;                             /* --rails PLAN, or NULL */
	struct rails_auto ra;                               /* its rails */
	char auto_listen[RC_RAILS_MAX * (RC_HOST_MAX + 8)]; /* its --listen */
	struct rc_server_rails *rails;                      /* the server's: register.c opens it */
};

/* Parse: every region is checked before any device is touched. */
int register_parse(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		   struct register_args *a);

/* The report of the server's rails (register_rails.c; the rails are
 * libcore's rc_server_rails): region i's rails in its descriptor. */
void register_rails_print(struct ctx *ctx, const struct register_args *a, struct rc_server *s,
			  int i);
/* Serve over libfabric (register_ofi.c): the regions, their descriptor
 * lines, the loop until a signal in sfd. */
int register_ofi(struct ctx *ctx, const struct opt_vals *v, const struct register_args *a,
		 const struct rc_fabric *f, int sfd);

/* --metrics (register_metrics.c): the server's figures as a document of
 * values (its counters, its regions, each rail's counters, labelled rail and
 * device); up says whether it still serves (0 in the file written at exit).
 * NULL when out of memory. */
json_t *register_figures(const struct register_args *a, const struct rc_server *s, double started,
			 bool up);
/* Their samples in m, through the tables of rows. */
void register_figures_render(struct metrics *m, const json_t *doc);

#endif
