// SPDX-License-Identifier: MIT
/*
 * --capture: copy what the probe reads from this host's /sys into a folder
 * (or a tarball of one) that --sysfs reads back elsewhere.
 *
 * sysfs is a tree of real directories joined by relative symlinks
 * (bus/pci/devices/X -> ../../../devices/pci0000:00/.../X). The copy keeps
 * that shape: every file goes to its resolved (symlink-free) path, and every
 * link the probe follows is recreated with its own relative target, so the
 * PCIe tree walks the same way under the copy as under /sys. What sysfs does
 * not hold (addresses, active MTUs, limits, GPU names) goes to rdmactl/facts.
 */
#define _GNU_SOURCE /* pipe2, nftw */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdmactl/config_core.h>

#include "topo_capture.h"

extern char **environ;

static const char *const pci_files[] = {
	"vendor",
	"device",
	"class",
	"subsystem_vendor",
	"subsystem_device",
	"revision",
	"numa_node",
	"local_cpulist",
	"current_link_speed",
	"current_link_width",
	"max_link_speed",
	"max_link_width",
	NULL,
};
static const char *const ibdev_files[] = {
	"node_guid",          "sys_image_guid",     "fw_ver",   "node_type",
	"node_desc",          "hca_type",           "board_id", "parent",
	"tc/1/traffic_class", "tc/2/traffic_class", NULL,
};
static const char *const port_files[] = {
	"state",  "phys_state",     "link_layer", "rate",    "lid",
	"sm_lid", "lid_mask_count", "cap_mask",   "pkeys/0", NULL,
};
static const char *const net_files[] = {
	"mtu", "operstate", "address", "dev_port", "type", "ifindex", TP_ECN_FILES, NULL,
};
static const char *const cm_files[] = { "default_roce_mode", "default_roce_tos", NULL };
static const char *const modules[] = {
	"nvidia",      "nvidia_peermem",
	"nv_peer_mem", "nvidia_uvm",
	"ib_core",     "ib_uverbs",
	"rdma_ucm",    "mlx5_core",
	"mlx5_ib",     "rdma_rxe",
	"siw",         "efa",
	"irdma",       NULL,
};

static int cap_files(struct cap *c, const char *dir, const char *const *names)
{
	char rel[PATH_MAX];
	int rc = 0;

	for (int i = 0; names[i] && !rc; i++)
		if (!tp_fmt(rel, sizeof(rel), "%s/%s", dir, names[i]))
			rc = cap_file(c, rel);
	return rc;
}

static int cap_numbered(struct cap *c, const char *dir)
{
	char rel[PATH_MAX];
	struct tp_names n;
	int rc = 0;

	if (tp_list(c->t, dir, &n))
		return 0;
	for (int i = 0; i < n.n && !rc; i++)
		if (!tp_fmt(rel, sizeof(rel), "%s/%s", dir, n.v[i]))
			rc = cap_file(c, rel);
	tp_names_free(&n);
	return rc;
}

static int cap_netdev(struct cap *c, const char *ifname)
{
	char rel[PATH_MAX], real[PATH_MAX];
	int rc;

	if (!ifname[0] || tp_fmt(rel, sizeof(rel), "class/net/%s", ifname) ||
	    tp_resolve_rel(c->t, rel, real, sizeof(real)))
		return 0;
	if ((rc = cap_link(c, rel)) || (rc = cap_files(c, real, net_files)))
		return rc;
	if (tp_fmt(rel, sizeof(rel), "%s/device", real))
		return 0;
	return cap_link(c, rel);
}

/* A PCI function and every bridge above it, up to the host bridge. */
static int cap_pci(struct cap *c, const char *path, bool endpoint)
{
	char dir[PATH_MAX], rel[PATH_MAX], drv[RC_TOPO_NAME_MAX];
	struct tp_names n;
	char *slash;
	int rc;

	if (tp_fmt(dir, sizeof(dir), "%s", path))
		return 0;
	if (endpoint) {
		const char *bdf = strrchr(path, '/');

		if (bdf && !tp_fmt(rel, sizeof(rel), "bus/pci/devices/%s", bdf + 1) &&
		    (rc = cap_link(c, rel)))
			return rc;
		/* The function's netdevs (IPoIB, Ethernet) live below it. */
		if (!tp_fmt(rel, sizeof(rel), "%s/net", path) && !tp_list(c->t, rel, &n)) {
			for (int i = 0; i < n.n; i++)
				cap_netdev(c, n.v[i]);
			tp_names_free(&n);
		}
	}
	/* Up the chain: devices/pci0000:00/0000:00:01.0/0000:01:00.0 */
	while ((slash = strrchr(dir, '/')) && strncmp(slash + 1, "pci", 3)) {
		if ((rc = cap_files(c, dir, pci_files)) || (rc = cap_pci_qos(c, dir)))
			return rc;
		if (!tp_fmt(rel, sizeof(rel), "%s/driver", dir) &&
		    !tp_link_base(c->t, rel, drv, sizeof(drv))) {
			if ((rc = cap_link(c, rel)) ||
			    (!tp_fmt(rel, sizeof(rel), "bus/pci/drivers/%s", drv) &&
			     (rc = cap_mkdir(c, rel))))
				return rc;
		}
		*slash = '\0';
	}
	return cap_mkdir(c, dir);
}

static int cap_ibdev(struct cap *c, const struct rc_topo_dev *d)
{
	char rel[PATH_MAX], real[PATH_MAX], pdir[PATH_MAX];
	int rc;

	if (tp_fmt(rel, sizeof(rel), "class/infiniband/%s", d->name) ||
	    tp_resolve_rel(c->t, rel, real, sizeof(real)))
		return 0;
	if ((rc = cap_link(c, rel)) || (rc = cap_files(c, real, ibdev_files)))
		return rc;
	if (!tp_fmt(rel, sizeof(rel), "%s/device", real) && (rc = cap_link(c, rel)))
		return rc;
	if (d->has_pci && (rc = cap_pci(c, d->pci.path, true)))
		return rc;
	cap_netdev(c, d->parent_netdev);
	for (int p = 0; p < d->nports; p++) {
		const struct rc_topo_port *port = &d->ports[p];
		static const char *const tables[] = { "gids", "gid_attrs/types", "gid_attrs/ndevs" };

		if (tp_fmt(pdir, sizeof(pdir), "%s/ports/%d", real, port->num))
			continue;
		if ((rc = cap_files(c, pdir, port_files)))
			return rc;
		for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
			if (!tp_fmt(rel, sizeof(rel), "%s/%s", pdir, tables[i]) &&
			    (rc = cap_numbered(c, rel)))
				return rc;
		cap_netdev(c, port->netdev);
		if (!tp_fmt(rel, sizeof(rel), "kernel/config/rdma_cm/%s/ports/%d", d->name,
			    port->num) &&
		    (rc = cap_files(c, rel, cm_files)))
			return rc;
		if (port->active_mtu > 0)
			fprintf(c->facts, "active_mtu %s %d %d\n", d->name, port->num,
				port->active_mtu);
		for (int a = 0; a < port->naddrs; a++)
			fprintf(c->facts, "ifaddr %s %s\n", port->netdev, port->addrs[a]);
	}
	return 0;
}

static int cap_host(struct cap *c)
{
	const struct rc_topo_facts *f = &c->t->facts;
	char rel[PATH_MAX];
	struct tp_names n;
	time_t now = time(NULL);
	struct tm tm;
	int rc = 0;

	fprintf(c->facts, "# rdmactl probe-topology capture: what sysfs does not hold\nformat 1\n");
	if (gmtime_r(&now, &tm))
		fprintf(c->facts, "date %04d-%02d-%02dT%02d:%02d:%02dZ\n", tm.tm_year + 1900,
			tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	if (f->hostname[0])
		fprintf(c->facts, "hostname %s\n", f->hostname);
	if (f->kernel[0])
		fprintf(c->facts, "kernel %s\n", f->kernel);
	if (f->memlock_known && f->memlock_unlimited)
		fprintf(c->facts, "memlock unlimited\n");
	else if (f->memlock_known)
		fprintf(c->facts, "memlock %llu\n", (unsigned long long)f->memlock);
	if (f->cap_ipc_lock >= 0)
		fprintf(c->facts, "cap_ipc_lock %d\n", f->cap_ipc_lock);
	if (f->nvidia_version[0])
		fprintf(c->facts, "nvidia_version %s\n", f->nvidia_version);
	if (f->rdma_core[0])
		fprintf(c->facts, "rdma_core %s\n", f->rdma_core);
	if (f->rdma_ucm >= 0) /* built in, it has no module/ folder */
		fprintf(c->facts, "rdma_ucm %d\n", f->rdma_ucm);
	if (!tp_list(c->t, "devices/system/node", &n)) {
		cap_file(c, "devices/system/node/online");
		cap_file(c, "devices/system/node/possible");
		for (int i = 0; i < n.n && !rc; i++)
			if (!strncmp(n.v[i], "node", 4) &&
			    !tp_fmt(rel, sizeof(rel), "devices/system/node/%s/cpulist", n.v[i]))
				rc = cap_file(c, rel);
		tp_names_free(&n);
	}
	if (!rc && !tp_list(c->t, "kernel/mm/hugepages", &n)) {
		for (int i = 0; i < n.n && !rc; i++) {
			if (!tp_fmt(rel, sizeof(rel), "kernel/mm/hugepages/%s/nr_hugepages", n.v[i]))
				rc = cap_file(c, rel);
			if (!rc && !tp_fmt(rel, sizeof(rel),
					   "kernel/mm/hugepages/%s/free_hugepages", n.v[i]))
				rc = cap_file(c, rel);
		}
		tp_names_free(&n);
	}
	if (!rc && tp_is_dir(c->t, "kernel/iommu_groups"))
		rc = cap_mkdir(c, "kernel/iommu_groups");
	for (int i = 0; modules[i] && !rc; i++)
		if (!tp_fmt(rel, sizeof(rel), "module/%s", modules[i]) && tp_is_dir(c->t, rel))
			rc = cap_mkdir(c, rel);
	return rc;
}

static int capture_into(const char *src, const char *dir, int *nfiles, struct rc_err *err)
{
	struct rc_topo_opts o = { .root = src };
	struct rc_topo *t;
	struct cap c = { 0 };
	char path[PATH_MAX];
	int rc = rc_topo_load(&o, &t, err);

	if (rc)
		return rc;
	c.t = t;
	tp_copy(c.dst, sizeof(c.dst), dir);
	if (tp_fmt(path, sizeof(path), "%s/rdmactl", dir) || (rc = mkdirs(path)) ||
	    tp_fmt(path, sizeof(path), "%s/" TP_FACTS, dir)) {
		rc = rc_err_set(err, rc ? -rc : ENAMETOOLONG, "cannot create %s/rdmactl", dir);
		goto out;
	}
	if (!(c.facts = fopen(path, "we"))) {
		rc = rc_err_set(err, errno, "cannot create %s: %s", path, strerror(errno));
		goto out;
	}
	/* The tree's top folders exist even on a host without RDMA. */
	if ((rc = cap_mkdir(&c, "class/infiniband")) || (rc = cap_mkdir(&c, "bus/pci/devices")) ||
	    (rc = cap_host(&c)))
		goto werr;
	for (int d = 0; d < t->ndevs && !rc; d++)
		rc = cap_ibdev(&c, &t->devs[d]);
	for (int g = 0; g < t->ngpus && !rc; g++) {
		const struct rc_topo_gpu *gpu = &t->gpus[g];

		rc = cap_pci(&c, gpu->pci.path, true);
		if (gpu->uuid[0] || gpu->name[0])
			fprintf(c.facts, "gpu %s %s %s\n", gpu->pci.addr,
				gpu->uuid[0] ? gpu->uuid : "-", gpu->name);
	}
	/* What NVML said, for a tree read where there is no NVML. */
	for (int g = 0; g < t->ngpus && !rc && t->nvml; g++) {
		if (t->gpus[g].nvml_index >= 0)
			fprintf(c.facts, "nvml %s %d %d\n", t->gpus[g].pci.addr,
				t->gpus[g].nvml_index, t->gpus[g].nvswitch_links);
		for (int h = 0; h < t->ngpus; h++)
			if (t->nvlinks[g][h] > 0)
				fprintf(c.facts, "nvlink %s %s %d\n", t->gpus[g].pci.addr,
					t->gpus[h].pci.addr, t->nvlinks[g][h]);
	}
werr:
	if (rc)
		rc = rc_err_set(err, -rc, "cannot write the capture into %s: %s", dir,
				strerror(-rc));
	if (fclose(c.facts) && !rc)
		rc = rc_err_set(err, EIO, "cannot write %s", path);
	*nfiles = c.nfiles + 1;
out:
	rc_topo_free(t);
	return rc;
}

static bool is_tarball(const char *p)
{
	size_t n = strlen(p);

	return (n > 7 && !strcmp(p + n - 7, ".tar.gz")) || (n > 4 && !strcmp(p + n - 4, ".tgz"));
}

/* Run tar; its complaints land in err, never on our stderr. */
static int run_tar(char *const argv[], struct rc_err *err)
{
	posix_spawn_file_actions_t fa;
	char msg[256] = "";
	size_t got = 0;
	int p[2], status, rc;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return rc_err_set(err, errno, "pipe: %s", strerror(errno));
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	rc = posix_spawnp(&pid, "tar", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (rc) {
		close(p[0]);
		return rc_err_set(err, rc, "cannot run tar: %s", strerror(rc));
	}
	for (;;) {
		char buf[512];
		ssize_t n = read(p[0], buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (got + 1 < sizeof(msg)) {
			size_t k = (size_t)n < sizeof(msg) - 1 - got ? (size_t)n
								     : sizeof(msg) - 1 - got;

			memcpy(msg + got, buf, k);
			got += k;
			msg[got] = '\0';
		}
	}
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return rc_err_set(err, errno, "waitpid: %s", strerror(errno));
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	{
		char *m = msg + strspn(msg, " \n");

		m[strcspn(m, "\n")] = '\0';
		return rc_err_set(err, EIO, "tar failed: %s", *m ? m : "no message");
	}
}

static int make_tmpdir(char *out, size_t len, struct rc_err *err)
{
	const char *tmp = rc_config()->tmpdir;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	if (tp_fmt(out, len, "%s/rdmactl-topo.XXXXXX", tmp))
		return rc_err_set(err, ENAMETOOLONG, "TMPDIR is too long");
	if (!mkdtemp(out))
		return rc_err_set(err, errno, "cannot create a temporary directory in %s: %s", tmp,
				  strerror(errno));
	return 0;
}

int rc_topo_capture(const char *src, const char *dest, int *nfiles, struct rc_err *err)
{
	char tmp[PATH_MAX];
	struct stat st;
	int rc;

	*nfiles = 0;
	if (!is_tarball(dest)) {
		if (!stat(dest, &st) && (!S_ISDIR(st.st_mode) || rmdir(dest)))
			return rc_err_set(err, EEXIST,
					  "%s exists and is not an empty directory: not overwriting it",
					  dest);
		if (mkdir(dest, 0755))
			return rc_err_set(err, errno, "cannot create %s: %s", dest, strerror(errno));
		return capture_into(src, dest, nfiles, err);
	}
	if (!stat(dest, &st))
		return rc_err_set(err, EEXIST, "%s exists: not overwriting it", dest);
	if ((rc = make_tmpdir(tmp, sizeof(tmp), err)))
		return rc;
	rc = capture_into(src, tmp, nfiles, err);
	if (!rc) {
		char *argv[] = { "tar", "-czf", (char *)dest, "-C", tmp, ".", NULL };

		rc = run_tar(argv, err);
	}
	rc_topo_rmtree(tmp);
	return rc;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) ? -1 : 0;
	return unlink(path) ? -1 : 0;
}

int rc_topo_rmtree(const char *dir)
{
	if (!dir || !dir[0] || !strcmp(dir, "/"))
		return -EINVAL;
	return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) ? -errno : 0;
}

static bool has_tree(const char *dir)
{
	char p[PATH_MAX];
	struct stat st;

	return (!tp_fmt(p, sizeof(p), "%s/class", dir) && !stat(p, &st)) ||
	       (!tp_fmt(p, sizeof(p), "%s/bus", dir) && !stat(p, &st));
}

int rc_topo_open_tree(const char *arg, char *root, size_t rootlen, char *tmpdir, size_t tmplen,
		      struct rc_err *err)
{
	struct stat st;
	struct rc_err e;
	char *argv[] = { "tar",
			 "-xzf",
			 (char *)arg,
			 "-C",
			 tmpdir,
			 "--no-same-owner",
			 "--no-same-permissions",
			 NULL };
	int rc;

	tmpdir[0] = '\0';
	if (stat(arg, &st))
		return rc_err_set(err, errno, "cannot read the sysfs tree %s: %s", arg,
				  strerror(errno));
	if (S_ISDIR(st.st_mode))
		return tp_fmt(root, rootlen, "%s", arg)
			       ? rc_err_set(err, ENAMETOOLONG, "path too long")
			       : 0;
	if (!S_ISREG(st.st_mode) || !is_tarball(arg))
		return rc_err_set(err, EINVAL,
				  "%s is neither a directory nor a .tar.gz/.tgz capture", arg);
	if ((rc = make_tmpdir(tmpdir, tmplen, err)))
		return rc;
	argv[4] = tmpdir;
	if ((rc = run_tar(argv, &e))) {
		rc = rc_err_set(err, -rc, "cannot extract %s: %s", arg, e.msg);
		rc_topo_rmtree(tmpdir);
		tmpdir[0] = '\0';
		return rc;
	}
	if (tp_fmt(root, rootlen, "%s", tmpdir))
		return rc_err_set(err, ENAMETOOLONG, "path too long");
	if (!has_tree(tmpdir)) {
		/* A tarball of the folder itself: one directory at the top. */
		DIR *d = opendir(tmpdir);
		struct dirent *de;
		int dirs = 0;
		char one[PATH_MAX] = "";

		while (d && (de = readdir(d))) {
			if (de->d_name[0] == '.' && (!de->d_name[1] || !strcmp(de->d_name, "..")))
				continue;
			dirs++;
			tp_fmt(one, sizeof(one), "%s/%s", tmpdir, de->d_name);
		}
		if (d)
			closedir(d);
		if (dirs == 1 && has_tree(one))
			tp_copy(root, rootlen, one);
	}
	return 0;
}
