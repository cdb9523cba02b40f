/* SPDX-License-Identifier: MIT */
/* probe-topology --export: the rail plan as other tools' settings. */
#ifndef RDMACTL_TOPO_EXPORT_H
#define RDMACTL_TOPO_EXPORT_H

#include <rdmactl/topo.h>

#include "cmds.h"

enum topo_export { TOPO_EXPORT_NCCL, TOPO_EXPORT_UCX, TOPO_EXPORT_MOONCAKE };

/* The kind named NAME ("nccl", "ucx", "mooncake"), or -1. */
int topo_export_kind(const char *name);

/* Print the plan for every GPU, or for GPU number gpu (NVML's) when >= 0.
 * Fails (exit 1) when there is no GPU, no such GPU, or that GPU has no NIC. */
int topo_export(struct ctx *ctx, const struct rc_topo *t, enum topo_export kind, int gpu);

#endif
