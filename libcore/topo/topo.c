// SPDX-License-Identifier: MIT
/*
 * Topology: reads below a sysfs root, the host's facts, and the loader that
 * puts the parts together. Every read is bounded, refuses anything but a
 * regular file (a FIFO in a captured tree must not hang us) and stays below
 * the root (a captured tree's links must not lead out of it).
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
	case RC_SEV_INFO: return "info";
	case RC_SEV_WARNING: return "warning";
	case RC_SEV_ERROR: return "error";
	}
	return "unknown";
}

/* --- facts: NUMA nodes, hugepages, modules, limits --- */

static void load_numa(struct rc_topo *t)
{
	struct tp_names n;
	char rel[256];

	if (tp_list(t, "devices/system/node", &n))
		return;
	for (int i = 0; i < n.n && t->nnuma < RC_TOPO_MAX_NUMA; i++) {
		struct rc_topo_numa *m = &t->numa[t->nnuma];
		char *end;
		long id;

		if (strncmp(n.v[i], "node", 4) || !isdigit((unsigned char)n.v[i][4]))
			continue;
		id = strtol(n.v[i] + 4, &end, 10);
		if (*end || id < 0 || id > 4096)
			continue;
		m->node = (int)id;
		if (tp_fmt(rel, sizeof(rel), "devices/system/node/%s/cpulist", n.v[i]) ||
		    tp_read(t, rel, m->cpulist, sizeof(m->cpulist)))
			m->cpulist[0] = '\0';
		t->nnuma++;
	}
	tp_names_free(&n);
}

static void load_huge(struct rc_topo *t)
{
	struct rc_topo_facts *f = &t->facts;
	struct tp_names n;
	char rel[256];

	if (tp_list(t, "kernel/mm/hugepages", &n))
		return;
	for (int i = 0; i < n.n && f->nhuge < RC_TOPO_MAX_HUGE; i++) {
		struct rc_topo_huge *h = &f->huge[f->nhuge];
		unsigned long kb;
		char unit[8];

		if (sscanf(n.v[i], "hugepages-%lu%7s", &kb, unit) != 2 || strcmp(unit, "kB"))
			continue;
		h->size_kb = kb;
		h->total = h->free = -1;
		if (!tp_fmt(rel, sizeof(rel), "kernel/mm/hugepages/%s/nr_hugepages", n.v[i]))
			tp_read_int(t, rel, &h->total);
		if (!tp_fmt(rel, sizeof(rel), "kernel/mm/hugepages/%s/free_hugepages", n.v[i]))
			tp_read_int(t, rel, &h->free);
		f->nhuge++;
	}
	tp_names_free(&n);
}

/* CAP_IPC_LOCK (bit 14) lets a process lock memory past RLIMIT_MEMLOCK. */
static int has_cap_ipc_lock(void)
{
	char line[256];
	FILE *fp = fopen("/proc/self/status", "re");
	int rc = -1;

	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp)) {
		unsigned long long caps;

		if (sscanf(line, "CapEff: %llx", &caps) == 1) {
			rc = (caps >> 14) & 1;
			break;
		}
	}
	fclose(fp);
	return rc;
}

static void first_line_of(const char *path, char *buf, size_t len)
{
	FILE *fp = fopen(path, "re");

	buf[0] = '\0';
	if (!fp)
		return;
	if (fgets(buf, (int)len, fp))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(fp);
}

static void live_facts(struct rc_topo_facts *f)
{
	struct utsname u;
	struct rlimit rl;

	if (gethostname(f->hostname, sizeof(f->hostname)))
		f->hostname[0] = '\0';
	f->hostname[sizeof(f->hostname) - 1] = '\0';
	if (!uname(&u))
		tp_copy(f->kernel, sizeof(f->kernel), u.release);
	if (!getrlimit(RLIMIT_MEMLOCK, &rl)) {
		f->memlock_known = 1;
		f->memlock_unlimited = rl.rlim_cur == RLIM_INFINITY;
		f->memlock = f->memlock_unlimited ? 0 : (uint64_t)rl.rlim_cur;
	}
	f->cap_ipc_lock = has_cap_ipc_lock();
	first_line_of("/proc/driver/nvidia/version", f->nvidia_version, sizeof(f->nvidia_version));
}

static void captured_fact(void *arg, const char *key, const char *val)
{
	struct rc_topo_facts *f = arg;
	char *end;

	if (!strcmp(key, "hostname"))
		tp_copy(f->hostname, sizeof(f->hostname), val);
	else if (!strcmp(key, "kernel"))
		tp_copy(f->kernel, sizeof(f->kernel), val);
	else if (!strcmp(key, "nvidia_version"))
		tp_copy(f->nvidia_version, sizeof(f->nvidia_version), val);
	else if (!strcmp(key, "cap_ipc_lock"))
		f->cap_ipc_lock = !strcmp(val, "1");
	else if (!strcmp(key, "memlock") && !strcmp(val, "unlimited")) {
		f->memlock_known = 1;
		f->memlock_unlimited = true;
	} else if (!strcmp(key, "memlock")) {
		unsigned long long v;

		errno = 0;
		v = strtoull(val, &end, 10);
		if (!errno && end != val && !*end) {
			f->memlock_known = 1;
			f->memlock = v;
		}
	}
}

void tp_load_facts(struct rc_topo *t)
{
	struct rc_topo_facts *f = &t->facts;

	f->cap_ipc_lock = -1;
	load_numa(t);
	load_huge(t);
	f->nvidia_loaded = tp_is_dir(t, "module/nvidia");
	f->peermem_loaded = tp_is_dir(t, "module/nvidia_peermem") ||
			    tp_is_dir(t, "module/nv_peer_mem");
	if (t->live)
		live_facts(f);
	else
		tp_facts_each(t, NULL, captured_fact, f);
}

/* --- the loader --- */

int rc_topo_load(const struct rc_topo_opts *opts, struct rc_topo **out, struct rc_err *err)
{
	const char *root = opts->root ? opts->root : "/sys";
	struct rc_topo *t;
	struct stat st;
	int rc;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return rc_err_set(err, ENOMEM, "out of memory for the topology");
	t->live = !opts->root;
	tp_copy(t->root, sizeof(t->root), root);
	if (!realpath(root, t->real_root)) {
		rc = rc_err_set(err, errno, "cannot read the sysfs tree %s: %s", root, strerror(errno));
		goto fail;
	}
	if (stat(t->real_root, &st) || !S_ISDIR(st.st_mode)) {
		rc = rc_err_set(err, ENOTDIR, "the sysfs tree %s is not a directory", root);
		goto fail;
	}
	if (!t->live && !tp_is_dir(t, "class/infiniband") && !tp_is_dir(t, "bus/pci/devices")) {
		rc = rc_err_set(err, ENOENT,
				"%s is not a sysfs tree: it has neither class/infiniband nor bus/pci/devices (make one with --capture)",
				root);
		goto fail;
	}
	tp_load_facts(t);
	if ((rc = tp_load_devs(t, err)) || (rc = tp_load_gpus(t, err)))
		goto fail;
	if (t->live)
		tp_load_nvml(t);
	tp_compute_paths(t);
	tp_doctor(t, opts);
	*out = t;
	return 0;
fail:
	rc_topo_free(t);
	return rc;
}

void rc_topo_free(struct rc_topo *t)
{
	if (!t)
		return;
	for (int d = 0; d < t->ndevs; d++)
		for (int p = 0; p < t->devs[d].nports; p++)
			free(t->devs[d].ports[p].gids);
	free(t);
}
