// SPDX-License-Identifier: MIT
/*
 * The capture of what topo_qos.c reads beside a PCI function's text files:
 * its IOMMU group (the iommu_group link and the group's type) and its
 * config space, a binary file copied byte for byte (64 bytes where the
 * capture runs unprivileged: ACS then reads as unknown, as it would live).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "topo_capture.h"

static int copy_bytes(struct cap *c, const char *rel)
{
	char rrel[PATH_MAX], src[PATH_MAX], dst[PATH_MAX];
	unsigned char buf[4096];
	ssize_t n, got = 0;
	int in, out, rc = 0;

	if (real_rel(c, rel, rrel, sizeof(rrel)) || tp_resolve(c->t, rrel, src, sizeof(src)) ||
	    (in = open(src, O_RDONLY | O_CLOEXEC)) < 0)
		return 0; /* not there, or not readable: unknown */
	while (got < (ssize_t)sizeof(buf) &&
	       ((n = read(in, buf + got, sizeof(buf) - (size_t)got)) > 0 ||
		(n < 0 && errno == EINTR)))
		got += n > 0 ? n : 0;
	close(in);
	if (got <= 0)
		return 0;
	if ((rc = dst_parent(c, rrel, dst, sizeof(dst))))
		return rc;
	if ((out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		return -errno;
	if (write(out, buf, (size_t)got) != got)
		rc = -EIO;
	if (close(out) && !rc)
		rc = -EIO;
	c->nfiles += !rc;
	return rc;
}

int cap_pci_qos(struct cap *c, const char *dir)
{
	char rel[PATH_MAX], group[32];
	int rc;

	if (!tp_fmt(rel, sizeof(rel), "%s/iommu_group", dir) &&
	    !tp_link_base(c->t, rel, group, sizeof(group))) {
		if ((rc = cap_link(c, rel)))
			return rc;
		if (!tp_fmt(rel, sizeof(rel), "kernel/iommu_groups/%s/type", group) &&
		    (rc = cap_file(c, rel)))
			return rc;
	}
	if (tp_fmt(rel, sizeof(rel), "%s/config", dir))
		return 0;
	return copy_bytes(c, rel);
}
