// SPDX-License-Identifier: MIT
#include <rdmactl/version.h>

const char *rc_version(void)
{
	return RDMACORE_VERSION;
}
