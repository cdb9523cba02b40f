/* SPDX-License-Identifier: MIT */
/* What the topology files share: reads below the root, facts, findings. */
#ifndef RDMACTL_TOPO_INT_H
#define RDMACTL_TOPO_INT_H

#include <stddef.h>

#include <rdmactl/topo.h>

#define TP_FACTS "rdmactl/facts"

/* root + "/" + rel, resolved; fails (-ENOENT, -EXDEV when it leaves the
 * root, -ENAMETOOLONG) unless it exists below the root. */
int tp_resolve(const struct rc_topo *t, const char *rel, char *abs, size_t len);
/* The resolved path of rel relative to the root ("devices/pci0000:00/..."). */
int tp_resolve_rel(const struct rc_topo *t, const char *rel, char *out, size_t len);
/* The first line of a file, trailing white space removed. */
int tp_read(const struct rc_topo *t, const char *rel, char *buf, size_t len);
/* The whole file (bounded), NUL-terminated. */
int tp_read_all(const struct rc_topo *t, const char *rel, char *buf, size_t len);
int tp_read_int(const struct rc_topo *t, const char *rel, long *out);
/* The last component of a symlink's target (a driver's name). */
int tp_link_base(const struct rc_topo *t, const char *rel, char *out, size_t len);
bool tp_exists(const struct rc_topo *t, const char *rel);
bool tp_is_dir(const struct rc_topo *t, const char *rel);

/* The entries of a directory, sorted in version order ("mlx5_2" before
 * "mlx5_10"), "." and ".." left out. Free with tp_names_free(). */
struct tp_names {
	int n;
	char **v;
};
int tp_list(const struct rc_topo *t, const char *rel, struct tp_names *out);
void tp_names_free(struct tp_names *n);

/* snprintf that reports truncation as -ENAMETOOLONG. */
int tp_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* strerror, with EXDEV (tp_resolve: a link leading out of the tree) spelled out. */
const char *tp_why(int rc);
/* Bounded copy, always NUL-terminated. */
void tp_copy(char *dst, size_t len, const char *src);

/* Facts of the capture (rdmactl/facts): each line "KEY VALUE...". Calls fn
 * for every line whose key matches (all lines when key is NULL). */
int tp_facts_each(const struct rc_topo *t, const char *key,
		  void (*fn)(void *arg, const char *key, const char *val), void *arg);

void tp_add_finding(struct rc_topo *t, enum rc_topo_sev sev, const char *check, const char *fix,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The parts, in the order rc_topo_load calls them. */
int tp_load_pci(const struct rc_topo *t, const char *rel, struct rc_topo_pci *p);
int tp_load_devs(struct rc_topo *t, struct rc_err *err);
int tp_load_gpus(struct rc_topo *t, struct rc_err *err);
void tp_load_nvml(struct rc_topo *t);
void tp_load_facts(struct rc_topo *t);
void tp_compute_paths(struct rc_topo *t);
/* After the devices: rdma_cm's configfs defaults, rdma_ucm, rdma-core (topo_host.c). */
void tp_load_host(struct rc_topo *t);
/* After the rail plan: NIC models, pkeys, RoCE QoS, IOMMU, ACS (topo_qos.c). */
void tp_load_qos(struct rc_topo *t);
/* The rail plan (topo_rail.c): rails[] from matrix[] and the ports. */
void tp_plan_rails(struct rc_topo *t);
/* dma-buf for GPU memory on this host (kernel, NVIDIA module); why not. */
bool tp_dmabuf_host(const struct rc_topo *t, const char **why);
void tp_doctor(struct rc_topo *t, const struct rc_topo_opts *o);

#endif
