/* SPDX-License-Identifier: MIT */
/* preflight: between its run (preflight.c) and its report (preflight_report.c). */
#ifndef RDMACTL_PREFLIGHT_CMD_H
#define RDMACTL_PREFLIGHT_CMD_H

#include <rdmactl/preflight.h>

#include "cmd.h"
#include "metrics.h"

#define PF_FINDINGS_MAX 256
/* The most bytes of rank 0's report another rank takes (-j on every rank):
 * a thousand nodes of eight rails each weigh about 20 MB. */
#define PF_REPORT_MAX ((size_t)128 << 20)

/* What rank 0 reports. */
struct pf_report {
	int world;
	const char *rank_source;        /* "flags", "slurm"... */
	const char *rendezvous;         /* "etcd", "file", or NULL: one node, no group */
	const struct rc_pf_node *nodes; /* every node's rails, in rank order */
	int nrows;
	const int *first;                    /* each rank's first record (pf_report sets it) */
	const struct rc_sweep_result *probe; /* NULL: not run */
	double probe_duration_s;
	double min_percent; /* a probed direction below it is a finding (0: not judged) */
	uint64_t buffer;
	const char *svg;
};

/* Compare, print (findings first, errors first) and draw --svg. *clean: no error or warning. 0, or what fail returned. */
int pf_report(struct ctx *ctx, const struct pf_report *r, bool *clean);
/* --metrics: the report's rows (the counts, the verdict, each probed
 * direction's bandwidth). */
extern const struct metric_table pf_metric_table;

#endif
