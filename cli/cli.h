/* SPDX-License-Identifier: MIT */
#ifndef RDMACTL_CLI_H
#define RDMACTL_CLI_H

#include <stdbool.h>

#include "cmd.h"

struct cli_opts {
	bool version;
	bool help;
	bool force;
	const char *batch;
	const char *bad;
	char bad_buf[160]; /* bad, when it names the option */
};

/* rdmactl -b FILE: returns the exit code. */
int batch_run(struct ctx *ctx, const char *path, bool force);
/* rdmactl shell: installed as ctx->shell, run by the "shell" table entry. */
int shell_run(struct ctx *ctx, int argc, char **argv);

#endif
