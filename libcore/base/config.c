// SPDX-License-Identifier: MIT
/* The program's configuration, passed in once (rdmactl/config.h). */
#include <rdmactl/config.h>
#include <rdmactl/config_core.h>

static struct rc_config config;

void rc_config_set(const struct rc_config *c)
{
	config = c ? *c : (struct rc_config){ 0 };
}

const struct rc_config *rc_config(void)
{
	return &config;
}
