/* SPDX-License-Identifier: MIT */
/* rdmactl alltoall: the command's state (alltoall.c reads the options and
 * runs; alltoall_report.c reports). */
#ifndef RDMACTL_ALLTOALL_H
#define RDMACTL_ALLTOALL_H

#include <rdmactl/a2a.h>
#include <rdmactl/fabric.h>
#include <rdmactl/group.h>

#include "group_cmds.h"
#include "metrics.h"

struct a2a_cli {
	struct group_args grp;
	/* Rail i's figures (several rails): the bytes of its slice this rank
	 * sent to other ranks over the timed iterations, its time, its QPs. */
	struct group_rail_fig rail[RC_RAILS_MAX];
	int rail_qps[RC_RAILS_MAX];
	const char *svg;
	struct rc_a2a_route route;
	struct rc_a2a_opts run;
	bool all_ranks;
	bool busy_poll;
	bool plan;
	int algo, dtype;        /* --algo, --dtype: their words' index */
	const char *skew;       /* --skew MODEL */
	const char *mem;        /* --mem KIND */
	const char *fabric_arg; /* --fabric as given, or NULL */
	struct rc_fabric fab;   /* --fabric: verbs, or libfabric's provider */
	bool no_check;
	int bg_mode;                                /* --background: enum rc_a2a_bg_mode */
	uint64_t bg_size;                           /* --background-size */
	const char *bg_size_given, *bg_depth_given; /* as given, or NULL */
	uint64_t *counts;
};

/* The rails' results into rail 0's (res[0]): per iteration the slowest
 * rail, the time of the slowest, the checks of all; each rail's bytes and
 * time into a->rail. */
void a2a_merge_rails(struct a2a_cli *a, int n, struct rc_a2a_result *res, struct rc_group *const *g);
/* rank 0's figures (every rank's with --all-ranks), over nr rails. */
void a2a_report(struct ctx *ctx, const struct a2a_cli *a, const struct rc_a2a_result *r,
		uint64_t wrong, struct rc_group *const *gs, int nr);
/* --metrics: the rows of the report (a2a_report), the group's after them. */
extern const struct metric_table a2a_metric_table;
/* --background (alltoall_bg.c): its options from row first on (MODE,
 * SIZE, DEPTH) into a->run; the background's group joined over the
 * rendezvous "JOB.bg", res's phase times into us (4 * iters); the
 * report's background (null without one). */
int a2a_bg_parse(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int first,
		 struct a2a_cli *a);
int a2a_bg_join(struct ctx *ctx, struct a2a_cli *a, struct rc_a2a_result *res, double *us,
		struct rc_group **bg);
void a2a_bg_report(struct out *o, const struct a2a_cli *a, const struct rc_a2a_result *r);
/* --svg: the dispatch bytes from each rank to each as a heatmap. */
int a2a_draw(const struct a2a_cli *a);

#endif
