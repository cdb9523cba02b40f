/* SPDX-License-Identifier: MIT */
/* probe-topology's report: the topology through the output layer. */
#ifndef RDMACTL_TOPO_SHOW_H
#define RDMACTL_TOPO_SHOW_H

#include <rdmactl/topo.h>

#include "cmds.h"

/* The report of t, read from source ("/sys" or the --sysfs tree): the host,
 * the RDMA devices (only ctx->dev_name's when one is named), the GPUs and
 * their paths, the rail plan, the doctor's findings and a summary. 0. */
int topo_show(struct ctx *ctx, const struct rc_topo *t, const char *source);

#endif
