/* SPDX-License-Identifier: MIT */
#ifndef RDMACTL_VERSION_H
#define RDMACTL_VERSION_H

#include <rdmactl/export.h>

/* The library's version, "MAJOR.MINOR.PATCH" (the .pc file's Version). */
RC_EXPORT const char *rc_version(void);

#endif
