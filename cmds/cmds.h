/* SPDX-License-Identifier: MIT */
/* Every subcommand's table entry; one file per command under cmds/. */
#ifndef RDMACTL_CMDS_H
#define RDMACTL_CMDS_H

#include "cmd.h"

extern const struct cmd cmd_register;
extern const struct cmd cmd_write;
extern const struct cmd cmd_read;
extern const struct cmd cmd_atomic;
extern const struct cmd cmd_probe_topology;
extern const struct cmd cmd_help;
extern const struct cmd cmd_version;

#endif
