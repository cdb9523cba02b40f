/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/config.h: what the layers read the
 * configuration with (libcore/README.md). */
#ifndef RDMACTL_CONFIG_CORE_H
#define RDMACTL_CONFIG_CORE_H

#include <rdmactl/config.h>

/* The configuration rc_config_set passed in (all defaults before). */
const struct rc_config *rc_config(void);

#endif
