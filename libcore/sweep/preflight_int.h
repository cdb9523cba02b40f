/* SPDX-License-Identifier: MIT */
/* Between preflight_judge.c (the checks of one node, the verdict) and
 * preflight_cmp.c (the settings across nodes, and the findings' list). */
#ifndef RDMACTL_PREFLIGHT_INT_H
#define RDMACTL_PREFLIGHT_INT_H

#include <rdmactl/preflight.h>

#define VAL_MAX 256

struct judge {
	const struct rc_pf_node *nodes;
	int n;
	const struct rc_pf_limits *lim;
	struct rc_pf_finding *f;
	int cap, nf;
	enum rc_topo_sev pass; /* the severity this pass keeps */
	uint8_t *differs;
};

/* What a finding says beyond its message. */
struct say {
	enum rc_topo_sev sev;
	const char *check;
	int setting; /* enum rc_pf_setting, -1 none */
	const char *value, *reference;
	const char *why;
	const char *fix;
};

/* A finding about ranks[0..nr-1], kept when its severity is this pass's. */
void pf_add(struct judge *j, const struct say *s, const int *ranks, int nr, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* Each compared setting against the majority's value. 0 or -ENOMEM. */
int pf_compare_settings(struct judge *j);

#endif
