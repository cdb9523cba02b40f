/* SPDX-License-Identifier: MIT */
/* probe-topology's report: the topology through the output layer. */
#ifndef RDMACTL_TOPO_SHOW_H
#define RDMACTL_TOPO_SHOW_H

#include <rdmactl/topo.h>

#include "cmds.h"

/* The report of t, read from source ("/sys" or the --sysfs tree): the host,
 * the RDMA devices (only ctx->dev_name's when one is named), the GPUs and
 * their paths, the rail plan, with fabrics what libfabric offers
 * (topo_fabrics), the doctor's findings and a summary. 0, or the failure
 * of topo_fabrics. */
int topo_show(struct ctx *ctx, const struct rc_topo *t, const char *source, bool fabrics);
/* probe-topology --fabrics (topo_fabrics.c): libfabric's providers and
 * domains, the NIC of each, the --fabric that opens it, what auto picks.
 * 0, or the failure (libfabric cannot be opened) through fail(). */
int topo_fabrics(struct ctx *ctx, const struct rc_topo *t);

#endif
