// SPDX-License-Identifier: MIT
/*
 * Reads below a sysfs root (live, or a captured tree) and the findings list:
 * what every part of the topology (topo_rdma.c, topo_pci.c, topo_doctor.c...)
 * builds on. Every read is bounded, refuses anything but a regular file (a
 * FIFO in a captured tree must not hang us) and stays below the root (a
 * captured tree's links must not lead out of it).
 */
#define _GNU_SOURCE /* strverscmp */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "topo_int.h"

int tp_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

const char *tp_why(int rc)
{
	if (rc == -EXDEV)
		return "a symlink leads out of the tree";
	return strerror(rc < 0 ? -rc : rc);
}

void tp_copy(char *dst, size_t len, const char *src)
{
	if (!len)
		return;
	snprintf(dst, len, "%s", src ? src : "");
}

int tp_resolve(const struct rc_topo *t, const char *rel, char *abs, size_t len)
{
	char path[PATH_MAX], real[PATH_MAX];
	size_t rl = strlen(t->real_root);

	while (*rel == '/')
		rel++;
	if (tp_fmt(path, sizeof(path), "%s/%s", t->real_root, rel))
		return -ENAMETOOLONG;
	if (!realpath(path, real))
		return -errno;
	/* "/" as the root holds everything. */
	if (rl > 1 && (strncmp(real, t->real_root, rl) || (real[rl] && real[rl] != '/')))
		return -EXDEV;
	return tp_fmt(abs, len, "%s", real);
}

int tp_resolve_rel(const struct rc_topo *t, const char *rel, char *out, size_t len)
{
	char abs[PATH_MAX];
	size_t rl = strlen(t->real_root);
	int rc = tp_resolve(t, rel, abs, sizeof(abs));

	if (rc)
		return rc;
	if (rl == 1)
		rl = 0;
	return tp_fmt(out, len, "%s", abs[rl] == '/' ? abs + rl + 1 : abs + rl);
}

static int open_regular(const struct rc_topo *t, const char *rel)
{
	char abs[PATH_MAX];
	struct stat st;
	int fd, rc = tp_resolve(t, rel, abs, sizeof(abs));

	if (rc)
		return rc;
	fd = open(abs, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int tp_read_all(const struct rc_topo *t, const char *rel, char *buf, size_t len)
{
	size_t got = 0;
	int fd = open_regular(t, rel);

	if (fd < 0)
		return fd;
	while (got + 1 < len) {
		ssize_t n = read(fd, buf + got, len - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	return 0;
}

int tp_read(const struct rc_topo *t, const char *rel, char *buf, size_t len)
{
	char tmp[4096];
	size_t n;
	int rc = tp_read_all(t, rel, tmp, sizeof(tmp));

	if (rc)
		return rc;
	tmp[strcspn(tmp, "\n")] = '\0';
	n = strlen(tmp);
	while (n && isspace((unsigned char)tmp[n - 1]))
		tmp[--n] = '\0';
	tp_copy(buf, len, tmp);
	return 0;
}

int tp_read_int(const struct rc_topo *t, const char *rel, long *out)
{
	char buf[64], *end;
	long v;
	int rc = tp_read(t, rel, buf, sizeof(buf));

	if (rc)
		return rc;
	errno = 0;
	v = strtol(buf, &end, 0);
	if (errno || end == buf || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int tp_link_base(const struct rc_topo *t, const char *rel, char *out, size_t len)
{
	char path[PATH_MAX], target[PATH_MAX];
	const char *slash;
	ssize_t n;

	while (*rel == '/')
		rel++;
	if (tp_fmt(path, sizeof(path), "%s/%s", t->real_root, rel))
		return -ENAMETOOLONG;
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	slash = strrchr(target, '/');
	tp_copy(out, len, slash ? slash + 1 : target);
	return *out ? 0 : -EINVAL;
}

bool tp_exists(const struct rc_topo *t, const char *rel)
{
	char abs[PATH_MAX];

	return !tp_resolve(t, rel, abs, sizeof(abs));
}

bool tp_is_dir(const struct rc_topo *t, const char *rel)
{
	char abs[PATH_MAX];
	struct stat st;

	return !tp_resolve(t, rel, abs, sizeof(abs)) && !stat(abs, &st) && S_ISDIR(st.st_mode);
}

static int cmp_names(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

void tp_names_free(struct tp_names *n)
{
	for (int i = 0; i < n->n; i++)
		free(n->v[i]);
	free(n->v);
	n->v = NULL;
	n->n = 0;
}

int tp_list(const struct rc_topo *t, const char *rel, struct tp_names *out)
{
	char abs[PATH_MAX];
	struct dirent *de;
	int cap = 0, rc = tp_resolve(t, rel, abs, sizeof(abs));
	DIR *d;

	out->n = 0;
	out->v = NULL;
	if (rc)
		return rc;
	d = opendir(abs);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (out->n >= 65536)
			break;
		if (out->n == cap) {
			char **v = realloc(out->v, sizeof(*v) * (size_t)(cap ? cap * 2 : 16));

			if (!v)
				goto nomem;
			out->v = v;
			cap = cap ? cap * 2 : 16;
		}
		if (!(out->v[out->n] = strdup(de->d_name)))
			goto nomem;
		out->n++;
	}
	closedir(d);
	if (out->n)
		qsort(out->v, (size_t)out->n, sizeof(*out->v), cmp_names);
	return 0;
nomem:
	closedir(d);
	tp_names_free(out);
	return -ENOMEM;
}

int tp_facts_each(const struct rc_topo *t, const char *key,
		  void (*fn)(void *arg, const char *key, const char *val), void *arg)
{
	char *buf, *line, *save = NULL;
	int rc;

	if (t->live)
		return -ENOENT;
	buf = malloc(256 << 10);
	if (!buf)
		return -ENOMEM;
	rc = tp_read_all(t, TP_FACTS, buf, 256 << 10);
	for (line = rc ? NULL : strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *val = line + strcspn(line, " \t");

		if (*val)
			*val++ = '\0';
		val += strspn(val, " \t");
		if (!*line || *line == '#' || (key && strcmp(line, key)))
			continue;
		fn(arg, line, val);
	}
	free(buf);
	return rc;
}

void tp_add_finding(struct rc_topo *t, enum rc_topo_sev sev, const char *check, const char *fix,
		    const char *fmt, ...)
{
	struct rc_topo_finding *f;
	va_list ap;

	if (t->nfindings >= RC_TOPO_MAX_FINDINGS) {
		t->findings_left_out++;
		return;
	}
	f = &t->findings[t->nfindings++];
	f->severity = sev;
	tp_copy(f->check, sizeof(f->check), check);
	tp_copy(f->fix, sizeof(f->fix), fix);
	va_start(ap, fmt);
	vsnprintf(f->message, sizeof(f->message), fmt, ap);
	va_end(ap);
}

const char *rc_topo_sev_name(enum rc_topo_sev s)
{
	switch (s) {
	case RC_SEV_INFO:
		return "info";
	case RC_SEV_WARNING:
		return "warning";
	case RC_SEV_ERROR:
		return "error";
	}
	return "unknown";
}
