/* SPDX-License-Identifier: MIT */
/* rdmactl multicast, between its two files: the options and what they ask
 * (multicast_args.c parses and checks them, multicast.c runs and reports). */
#ifndef RDMACTL_CMDS_MULTICAST_H
#define RDMACTL_CMDS_MULTICAST_H

#include <stdbool.h>
#include <stdint.h>

#include <rdmactl/mcast.h>

#include "client_cmds.h"
#include "cmds.h"
#include "group_cmds.h"

#define MULTICAST_OPTS(X) \
	GROUP_OPTS(X, MC) \
	GROUP_RAILS_OPT(X, MC, struct mc_cli) \
	X(MC_ROOT, "root", 0, "R", "the rank that sends", \
	  OPT_INT(struct mc_cli, num.root, 0, 1 << 20, "0")) \
	X(MC_FILE, "file", 'f', "FILE", "root: the blob to send", COMP_FILE, \
	  OPT_STR(struct mc_cli, file, NULL)) \
	X(MC_PATTERN, "pattern", 'P', "PATTERN", "root: zero, seq or random:SEED", \
	  OPT_STR(struct mc_cli, pattern, NULL)) \
	X(MC_SIZE, "size", 'S', "SIZE", "root: bytes of the pattern (K, M, G suffixes)", \
	  OPT_SIZE(struct mc_cli, num.size, NULL), OPT_GIVEN(struct mc_cli, size_given)) \
	X(MC_CHUNK, "chunk", 0, "SIZE", "bytes a write, or auto", COMP_WORDS, "auto|256K|1M|2M", \
	  OPT_STR(struct mc_cli, chunk, "auto")) \
	X(MC_RING, "ring", 0, "N", "chunks in a receiver's ring", \
	  OPT_INT(struct mc_cli, num.ring, 1, 256, "16")) \
	X(MC_MAX_RING, "max-ring", 0, "SIZE", "most memory a root's ring takes", \
	  OPT_SIZE(struct mc_cli, num.max_ring, "256M")) \
	X(MC_OUT, "out", 'O', "FILE", "receivers: write the blob to FILE", COMP_FILE, \
	  OPT_STR(struct mc_cli, out, NULL)) \
	X(MC_MEM, "mem", 'm', "KIND", "ring: host, hugepage or cuda:N", COMP_WORDS, \
	  "host|hugepage|cuda", OPT_STR(struct mc_cli, mem, "host")) \
	X(MC_BLOCK_SIZES, "block-sizes", 0, "LIST", "the blob's blocks in order (1M,4M,4M)", \
	  OPT_STR(struct mc_cli, blocks, NULL)) \
	X(MC_ALGO, "algo", 'a', "ALGO", \
	  "flat (the root writes to every rank), chain (each rank to the " \
	  "next) or tree (each relay to --fanout children); each rank connects to its " \
	  "parent and its children, and the root to every rank (the reports)", \
	  COMP_WORDS, "flat|chain|tree", OPT_WORD(struct mc_cli, num.algo, "tree")) \
	X(MC_FANOUT, "fanout", 0, "K", "tree: children per relay", \
	  OPT_INT(struct mc_cli, num.fanout, 1, RC_GROUP_MAX, "2"), \
	  OPT_GIVEN(struct mc_cli, fanout_given)) \
	X(MC_LINK_BW, "link-bw", 0, "RATE", "link rate: 100Gbit, 12.5GB (default: measured)", \
	  OPT_RATE(struct mc_cli, num.bw, 1, NULL)) \
	X(MC_DIGEST, "digest", 0, "ALGO", "copy hash: xxh64 or sha256", COMP_WORDS, \
	  "xxh64|sha256", OPT_WORD(struct mc_cli, num.digest, "xxh64")) \
	X(MC_SVG, "svg", 0, "FILE", "root: draw the chunks' timeline (SVG)", COMP_FILE, \
	  OPT_STR(struct mc_cli, svg, NULL)) \
	X(MC_BUSY_POLL, "busy-poll", 0, NULL, "busy-poll the completion queues", \
	  OPT_FLAG(struct mc_cli, busy_poll)) \
	X(MC_RANKS_PER_NODE, "ranks-per-node", 0, "N", \
	  "--plan: ranks per node, for figures per node", \
	  OPT_INT(struct mc_cli, ranks_per_node, 1, RC_GROUP_MAX, NULL), \
	  OPT_GIVEN(struct mc_cli, rpn_given)) \
	X(MC_PLAN, "plan", 0, NULL, "size the job and exit (needs --world)", \
	  OPT_FLAG(struct mc_cli, plan))

enum { MULTICAST_OPTS(OPT_INDEX) MC_NOPTS };

/* The shape and the sizes, as given (the defaults when not). */
struct mc_nums {
	int root, algo, fanout, ring;
	int digest;           /* --digest: the word's index, 0 xxh64, 1 sha256 */
	uint64_t size, chunk; /* chunk 0: auto */
	uint64_t max_ring;    /* --max-ring: bytes */
	double bw;
};

/* What multicast was asked, parsed and checked, and what its run holds. */
struct mc_cli {
	struct group_args grp;
	const char *svg;
	struct rc_mcast_opts run;
	const char *file;
	const char *pattern;
	const char *out;    /* --out as given (%r not replaced) */
	const char *blocks; /* --block-sizes LIST, or NULL */
	const char *chunk;  /* --chunk as given: auto or a size (num.chunk; 0 for auto) */
	const char *size_given, *fanout_given, *rpn_given; /* as given, or NULL */
	const char *mem;                                   /* --mem KIND */
	struct mc_nums num;
	char out_path[4096];
	bool busy_poll;
	bool plan;
	int ranks_per_node;   /* --plan: 0 or ranks per node */
	int fd;               /* root: the file; receivers: --out */
	struct progress prog; /* the line on a terminal: bytes sent (root) or received */
	uint64_t block_ends[RC_MCAST_BLOCKS_MAX];
	/* Several rails: each one's result (the root: recv of world entries
	 * each), merged into the report's by mc_rails_merge. */
	int nrails;
	struct rc_mcast_result rail[RC_RAILS_MAX];
};

/* Parse: every option checked, the rendezvous too, before any device. */
int multicast_parse(struct ctx *ctx, const struct opt_vals *v, struct mc_cli *m);

/* multicast_report.c: several rails a rank. The rails' results merged into
 * res (res->recv: world entries): the blob's size, the slowest rail's
 * time, each receiver whole and ok when every rail's slice was, its bytes
 * the slices' sum, its first chunk the earliest and last the latest; no
 * digest of the whole (each rail's is of its slice: mc_rails_report). */
void mc_rails_merge(struct mc_cli *m, struct rc_mcast_result *res, struct rc_group *const *g);
/* The root's "rails" array: each rail's device, slice bytes, share, time,
 * rate, digest of its slice, receivers ok, and a finding for a rail below
 * half the fastest rail's rate. */
void mc_rails_report(struct out *o, const struct mc_cli *m, struct rc_group *const *g);

/* multicast_report.c: the root's report of every receiver (and the rails'
 * on several), the --svg timeline, --metrics. */
void mc_report(struct ctx *ctx, const struct mc_cli *m, const struct rc_mcast_result *r,
	       struct rc_group *const *gs);
int mc_draw(const struct mc_cli *m, const struct rc_mcast_result *r);
/* A receiver's own figures, in the document only (for its --metrics). */
void mc_self_report(struct out *o, const struct mc_cli *m, const struct rc_mcast_result *r,
		    struct rc_group *const *gs);
/* --metrics: the rows of the root's report and of a receiver's own. */
extern const struct metric_table mc_metric_table;
extern const struct metric_table mc_self_metric_table;

#endif
