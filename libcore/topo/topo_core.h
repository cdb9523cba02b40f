/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/topo.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_TOPO_CORE_H
#define RDMACTL_TOPO_CORE_H

#include <rdmactl/topo.h>

/* One port: two QPs of the device connected to each other. */
int rc_topo_verify_port(const char *dev, int port, int gid_index, uint64_t bytes, int timeout_ms,
			struct rc_topo_verify *res, struct rc_err *err);

/* Path class between two resolved PCI paths (relative or absolute sysfs
 * paths such as devices/pci0000:00/0000:00:01.0/0000:01:00.0). nnuma is
 * the host's NUMA node count (to read an unknown node, -1). */
enum rc_topo_path rc_topo_classify(const char *path_a, int numa_a, const char *path_b, int numa_b,
				   int nnuma);
/* Parse "400 Gb/sec (4X NDR)". Returns 0 or -EINVAL. */
int rc_topo_parse_rate(const char *s, double *gbps, char *width, size_t wlen, char *speed,
		       size_t slen);
/* The recommended GID of a port: on Ethernet RoCE v2 with an IPv4-mapped
 * address, then another RoCE v2 (global before link-local); on InfiniBand
 * the first IB GID. -1 when none. */
int rc_topo_pick_gid(const struct rc_topo_port *p);

/* The rail plan as an optimal assignment. cost[g * nnics + n] is what GPU g
 * pays on NIC n (>= 0), or < 0 where it cannot use it. Minimises the sum of
 * the costs, then the largest number of GPUs on one NIC (exact: Hungarian
 * method on NICs repeated up to that load). assign[g] gets a NIC, or -1
 * for a GPU that can use none. Returns 0, -EINVAL or -ENOMEM. */
int rc_topo_assign(int ngpus, int nnics, const int *cost, int *assign);

#endif
