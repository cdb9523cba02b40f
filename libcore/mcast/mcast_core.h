/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/mcast.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_MCAST_CORE_H
#define RDMACTL_MCAST_CORE_H

#include <rdmactl/mcast.h>

/* -1 for the root. */
int rc_mcast_parent(const struct rc_mcast_shape *s, int rank);
/* The children of rank into kids (world entries at most); their count. */
int rc_mcast_children(const struct rc_mcast_shape *s, int rank, int *kids);

#endif
