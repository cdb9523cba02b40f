// SPDX-License-Identifier: MIT
/*
 * The capture's copy primitives (topo_capture.h): a file, a link with its
 * own relative target, a folder, each at its resolved (symlink-free) path
 * under the copy. The capture (topo_capture.c) and its PCI QoS part
 * (topo_capture_qos.c) stand on them; they call neither.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "topo_capture.h"

int mkdirs(char *path)
{
	for (char *s = path + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(path, 0755) && errno != EEXIST) {
			int e = errno;

			*s = '/';
			return -e;
		}
		*s = '/';
	}
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/* rel with its directory resolved: the place of the entry itself in the
 * symlink-free tree. */
int real_rel(const struct cap *c, const char *rel, char *out, size_t len)
{
	char dir[PATH_MAX], rdir[PATH_MAX];
	const char *base = strrchr(rel, '/');

	if (!base)
		return tp_fmt(out, len, "%s", rel);
	if (tp_fmt(dir, sizeof(dir), "%.*s", (int)(base - rel), rel) ||
	    tp_resolve_rel(c->t, dir, rdir, sizeof(rdir)))
		return -ENOENT;
	return tp_fmt(out, len, "%s/%s", rdir, base + 1);
}

int dst_parent(const struct cap *c, const char *rrel, char *dst, size_t len)
{
	char dir[PATH_MAX];
	const char *slash;

	if (tp_fmt(dst, len, "%s/%s", c->dst, rrel))
		return -ENAMETOOLONG;
	slash = strrchr(dst, '/');
	if (tp_fmt(dir, sizeof(dir), "%.*s", (int)(slash - dst), dst))
		return -ENAMETOOLONG;
	return mkdirs(dir);
}

/* Files the host cannot read (write-only, empty GID attributes) are left
 * out: the reader treats a missing file as unknown. */
int cap_file(struct cap *c, const char *rel)
{
	char rrel[PATH_MAX], dst[PATH_MAX], buf[4096];
	FILE *fp;
	int rc;

	if (real_rel(c, rel, rrel, sizeof(rrel)) || tp_read_all(c->t, rrel, buf, sizeof(buf)))
		return 0;
	if ((rc = dst_parent(c, rrel, dst, sizeof(dst))))
		return rc;
	fp = fopen(dst, "we");
	if (!fp)
		return -errno;
	fputs(buf, fp);
	if (fclose(fp))
		return -EIO;
	c->nfiles++;
	return 0;
}

int cap_link(struct cap *c, const char *rel)
{
	char rrel[PATH_MAX], src[PATH_MAX], dst[PATH_MAX], target[PATH_MAX];
	ssize_t n;
	int rc;

	if (real_rel(c, rel, rrel, sizeof(rrel)) ||
	    tp_fmt(src, sizeof(src), "%s/%s", c->t->real_root, rrel))
		return 0;
	n = readlink(src, target, sizeof(target) - 1);
	if (n < 0)
		return 0;
	target[n] = '\0';
	if (target[0] == '/')
		return 0; /* sysfs links are relative; an absolute one would leave the copy */
	if ((rc = dst_parent(c, rrel, dst, sizeof(dst))))
		return rc;
	if (symlink(target, dst) && errno != EEXIST)
		return -errno;
	return 0;
}

int cap_mkdir(struct cap *c, const char *rel)
{
	char dst[PATH_MAX];

	if (tp_fmt(dst, sizeof(dst), "%s/%s", c->dst, rel))
		return -ENAMETOOLONG;
	return mkdirs(dst);
}
