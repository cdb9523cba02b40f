// SPDX-License-Identifier: MIT
/*
 * Topology: the host's facts (NUMA nodes, hugepages, modules, limits) and
 * the loader that puts the parts together. The parts read through
 * topo_sysfs.c; only this file calls them.
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
	f->peermem_loaded =
		tp_is_dir(t, "module/nvidia_peermem") || tp_is_dir(t, "module/nv_peer_mem");
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
	tp_copy(t->root, sizeof(t->root), opts->name ? opts->name : root);
	char *real = realpath(root, NULL);

	if (!real) {
		rc = rc_err_set(err, errno, "cannot read the sysfs tree %s: %s", t->root,
				strerror(errno));
		goto fail;
	}
	if (strlen(real) >= sizeof(t->real_root)) {
		free(real);
		rc = rc_err_set(err, ENAMETOOLONG, "the sysfs tree %s has too long a path", t->root);
		goto fail;
	}
	tp_copy(t->real_root, sizeof(t->real_root), real);
	free(real);
	if (stat(t->real_root, &st) || !S_ISDIR(st.st_mode)) {
		rc = rc_err_set(err, ENOTDIR, "the sysfs tree %s is not a directory", t->root);
		goto fail;
	}
	if (!t->live && !tp_is_dir(t, "class/infiniband") && !tp_is_dir(t, "bus/pci/devices")) {
		rc = rc_err_opt(
			err, ENOENT,
			"%s is not a sysfs tree: it has neither class/infiniband nor bus/pci/devices (make one with {capture})",
			t->root);
		goto fail;
	}
	tp_load_facts(t);
	if ((rc = tp_load_devs(t, err)) || (rc = tp_load_gpus(t, err)))
		goto fail;
	tp_load_host(t);
	tp_load_nvml(t); /* live, or where $RDMACTL_NVML_LIB names one */
	tp_compute_paths(t);
	tp_load_qos(t);
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
