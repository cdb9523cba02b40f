/* SPDX-License-Identifier: MIT */
#ifndef RDMACTL_CLI_H
#define RDMACTL_CLI_H

#include <stdbool.h>

#include "cmd.h"

struct cli_opts {
	enum out_mode mode;
	bool version;
	bool help;
	const char *bad;
};

#endif
