// SPDX-License-Identifier: MIT
/* The one command table and the global options: framework/dispatch.c runs
 * what is listed here. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "cmds.h"

const struct cmd *const rdmactl_cmds[] = {
	&cmd_register, &cmd_write,    &cmd_read,      &cmd_atomic,     &cmd_probe_topology,
	&cmd_kvxfer,   &cmd_alltoall, &cmd_multicast, &cmd_sweep,      &cmd_preflight,
	&cmd_migrate,  &cmd_shell,    &cmd_regions,   &cmd_unregister, &cmd_help,
	&cmd_version,  &cmd_complete, NULL,
};

const struct cmd_opt rdmactl_global_opts[] = {
	{ "json", 'j', NULL, "JSON output, one document per command", .anywhere = true },
	{ "pretty", 'p', NULL, "pretty-printed JSON output", .anywhere = true },
	{ "device", 'd', "NAME", "RDMA device (default: the address's)", COMP_DEVICE,
	  .anywhere = true },
	{ "gid-index", 'g', "N", "GID index (default: RoCE v2, IPv4 first)", .anywhere = true },
	{ "timeout", 't', "MS", "connect/completion timeout (ms)", .anywhere = true,
	  OPT_DEFAULT("10000") },
	{ "verbose", 'v', NULL, "more logs on stderr", .anywhere = true },
	{ "version", 'V', NULL, "print the version" },
	{ "batch", 'b', "FILE", "run the commands of FILE ('-': stdin)", COMP_FILE },
	{ "force", 0, NULL, "with --batch: go on after a failing command" },
	OPT_END,
};
OPTS_FIT(rdmactl_global_opts);
