/* SPDX-License-Identifier: MIT */
/* What the group commands (alltoall, multicast) share: who this rank is and
 * where the group meets. */
#ifndef RDMACTL_GROUP_CMDS_H
#define RDMACTL_GROUP_CMDS_H

#include <rdmactl/group.h>

#include "cmd.h"
#include "metrics.h"

/* The group options, as an X-macro list like CLIENT_OPTS (client_cmds.h):
 * GROUP_OPTS(X, A2A) makes A2A_RANK ... A2A_LISTEN. A command lists the
 * block whole, so group_args_parse finds it from the first one's index. */
#define GROUP_OPTS(X, P)                                                                          \
	X(P##_RANK, "rank", 'r', "R", "this rank (default: from the launcher's environment)")     \
	X(P##_WORLD, "world", 'w', "N", "ranks in the group (default: from the launcher)")        \
	X(P##_LOCAL_RANK, "local-rank", 0, "L", "rank inside the node (default: from the launcher)") \
	X(P##_RENDEZVOUS, "rendezvous", 'R', "URL", "etcd://HOST:PORT/JOB or file:PATH (peers file)", \
	  COMP_FILE)                                                                              \
	X(P##_LISTEN, "listen", 'l', "ADDR[:PORT]", "address to accept peers on (default: the peers file's)") \
	X(P##_TOKEN, "token", 'T', "TOKEN", "the group's token, proven in every connect request (visible in /proc: prefer --token-file or $RDMACTL_TOKEN)") \
	X(P##_TOKEN_FILE, "token-file", 0, "FILE", "the group's token, from the first line of FILE (mode 600)", COMP_FILE) \
	X(P##_METRICS, "metrics", 0, "FILE", "write the figures to FILE in Prometheus' text format, replaced whole (%r: the rank; without it only the reporting rank writes)", COMP_FILE)

enum { GROUP_OPTS(OPT_INDEX, GO) GO_COUNT };

/* The group options, parsed: the rank resolved from the flags or the
 * launcher's environment; rendezvous and listen as given (NULL if not). */
struct group_args {
	struct rc_rank_info who;
	const char *rendezvous;
	const char *listen;
	const char *token;                /* NULL: none */
	char token_buf[RC_TOKEN_MAX + 1]; /* what --token-file held */
	char metrics[4096];                 /* --metrics, %r replaced by the rank ("": none) */
	bool metrics_per_rank;             /* it held %r: every rank writes its own */
};
/* Parse the GROUP_OPTS block whose first option (RANK) is at index first.
 * 0 or -EINVAL after a usage error. */
int group_args_parse(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int first,
		     struct group_args *a);
/* After every usage check: --rendezvous is given, a file: one can be read
 * (what names the command in the message), --metrics can be written. */
int group_rendezvous_ready(struct ctx *ctx, const char *what, const struct group_args *a);
/* The "group" object of a report: how long the rendezvous, the connections
 * and the first barrier took, what this rank holds (QPs, CQs, message
 * rings) and its peak resident memory; a text line beginning "# group:". */
void group_report(struct out *o, const struct rc_group *g);
/* --metrics: the group's figures (rendezvous and connect time, QPs). */
void group_metrics(struct metrics *m, const struct rc_group *g);
/* Whether this rank writes --metrics: every rank with %r in the path, else
 * the one that reports (rank 0, multicast's root). */
static inline bool group_metrics_on(const struct group_args *a, int reporter)
{
	return a->metrics[0] && (a->metrics_per_rank || a->who.rank == reporter);
}

#endif
