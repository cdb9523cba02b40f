/* SPDX-License-Identifier: MIT */
/* preflight --svg: the node x setting grid. */
#ifndef RDMACTL_PREFLIGHT_SVG_H
#define RDMACTL_PREFLIGHT_SVG_H

#include <stdint.h>

#include <rdmactl/preflight.h>

/* One row a node, one column a setting, each cell its value; a cell whose
 * differs[node * RC_PF_NSETTINGS + setting] is set drawn red. 0 or -errno. */
int pf_svg_write(const char *path, const struct rc_pf_node *nodes, int n, const uint8_t *differs);

#endif
