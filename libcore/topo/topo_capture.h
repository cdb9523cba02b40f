/* SPDX-License-Identifier: MIT */
/* Between the capture (topo_capture.c), its copy primitives
 * (topo_capture_fs.c) and the parts of it kept apart
 * (topo_capture_qos.c). */
#ifndef RDMACTL_TOPO_CAPTURE_H
#define RDMACTL_TOPO_CAPTURE_H

#include <limits.h>
#include <stdio.h>

#include "topo_int.h"

struct cap {
	const struct rc_topo *t; /* the source: /sys, or a tree being re-captured */
	char dst[PATH_MAX];
	int nfiles;
	FILE *facts;
};

/* The netdev's RoCE ECN knobs (mlx5), one a priority. */
#define TP_ECN_FILES \
	"ecn/roce_np/enable/0", "ecn/roce_np/enable/1", "ecn/roce_np/enable/2", \
		"ecn/roce_np/enable/3", "ecn/roce_np/enable/4", "ecn/roce_np/enable/5", \
		"ecn/roce_np/enable/6", "ecn/roce_np/enable/7", "ecn/roce_rp/enable/0", \
		"ecn/roce_rp/enable/1", "ecn/roce_rp/enable/2", "ecn/roce_rp/enable/3", \
		"ecn/roce_rp/enable/4", "ecn/roce_rp/enable/5", "ecn/roce_rp/enable/6", \
		"ecn/roce_rp/enable/7"

int mkdirs(char *path);
/* rel with its directory resolved: the place of the entry itself in the
 * symlink-free tree. */
int real_rel(const struct cap *c, const char *rel, char *out, size_t len);
/* dst gets the copy's path of rrel, its folders made. */
int dst_parent(const struct cap *c, const char *rrel, char *dst, size_t len);
/* A text file, a link (its relative target kept), a folder of the copy. */
int cap_file(struct cap *c, const char *rel);
int cap_link(struct cap *c, const char *rel);
int cap_mkdir(struct cap *c, const char *rel);
/* A PCI function's IOMMU group (its link, the group's type) and its config
 * space, as many bytes as this host lets the capture read. */
int cap_pci_qos(struct cap *c, const char *dir);

#endif
