/* SPDX-License-Identifier: MIT */
/*
 * The fabric as an operator sees it: RDMA devices, their ports and GIDs,
 * NVIDIA GPUs found on PCI, the GPU x NIC path classes of the PCIe tree
 * (as nvidia-smi topo -m names them), a rail plan and doctor findings.
 *
 * Every sysfs read goes through a root: "/sys" on the running host, or a
 * tree captured by rc_topo_capture() elsewhere. Facts that sysfs does not
 * hold (active MTU, IP addresses, the memlock limit, the NVIDIA driver's
 * version) come from the live host, or from the capture's rdmactl/facts.
 */
#ifndef RDMACTL_TOPO_H
#define RDMACTL_TOPO_H

#include <rdmactl/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmactl/err.h>
#include <rdmactl/export.h>

#define RC_TOPO_MAX_DEVS 64
#define RC_TOPO_MAX_PORTS 8
#define RC_TOPO_MAX_GIDS 4096 /* per port; rxe has 1024 */
#define RC_TOPO_MAX_ADDRS 16  /* IP addresses per netdev */
#define RC_TOPO_MAX_GPUS 64
#define RC_TOPO_MAX_NUMA 64
#define RC_TOPO_MAX_HUGE 8 /* hugepage sizes */
#define RC_TOPO_MAX_FINDINGS 128
#define RC_TOPO_PATH_MAX 1024
#define RC_TOPO_NAME_MAX 64

/* Path classes between two PCI devices, best first (nvidia-smi topo -m). */
enum rc_topo_path {
	RC_PATH_PIX,  /* at most one PCIe switch (bridge) between them */
	RC_PATH_PXB,  /* several bridges, no host bridge crossing */
	RC_PATH_PHB,  /* through a PCIe host bridge (the root complex) */
	RC_PATH_NODE, /* different root complexes of one NUMA node */
	RC_PATH_SYS,  /* across NUMA nodes (the inter-socket link) */
	RC_PATH_NA,   /* one of them has no PCI parent (rxe, siw) */
};

RC_EXPORT const char *rc_topo_path_name(enum rc_topo_path p);

/* A PCI function as sysfs shows it. Empty strings and -1 mean unknown. */
struct rc_topo_pci {
	char addr[32];                 /* 0000:03:00.0 */
	char path[RC_TOPO_PATH_MAX];   /* resolved, relative to the root:
					* devices/pci0000:00/0000:00:01.0/... */
	char vendor[8], device[8];     /* 0x10de */
	char class_code[10];           /* 0x030200 */
	char driver[RC_TOPO_NAME_MAX]; /* bound kernel driver */
	int numa_node;
	char cpulist[512];
	char cur_speed[32], max_speed[32]; /* "32.0 GT/s PCIe" */
	int cur_width, max_width;          /* lanes */
	/* The IOMMU: the function's group (iommu_group link, "" none) and its
	 * kind (kernel/iommu_groups/N/type: "identity", "DMA", "DMA-FQ"; ""
	 * unknown). acs_ctrl: its ACS control register (PCIe extended capability
	 * 0x0d in config), -1 no ACS capability, -2 config not readable (an
	 * unprivileged read stops at 64 bytes; a capture without it). */
	char iommu_group[16], iommu_type[16];
	int acs_ctrl;
};

struct rc_topo_gid {
	int index;
	char type[12];   /* "IB", "RoCE v1", "RoCE v2" or "" */
	char gid[48];    /* textual IPv6 */
	char netdev[32]; /* "" when none */
	unsigned char raw[16];
};

struct rc_topo_verify {
	bool done;
	bool ok;
	int gid_index;    /* -1 on InfiniBand (LID routed) */
	uint64_t bytes;   /* checked byte for byte after the writes */
	uint64_t written; /* RDMA WRITE payload moved (the rate's) */
	double seconds;
	double gbit_per_s;
	char error[256];
};

struct rc_topo_port {
	int num;
	char state[24];      /* ACTIVE, DOWN, INIT, ARMED... */
	char phys_state[24]; /* LinkUp, Disabled, Polling... */
	char link_layer[16]; /* InfiniBand, Ethernet */
	char rate[64];       /* the rate file: "400 Gb/sec (4X NDR)" */
	double rate_gbps;    /* 0 unknown */
	char width[8];       /* 4X */
	char speed[16];      /* NDR */
	int active_mtu;      /* bytes; 0 unknown (not in sysfs) */
	int lid, sm_lid;     /* -1 unknown */
	char netdev[32];
	int netdev_mtu;        /* -1 unknown */
	char netdev_state[16]; /* operstate */
	int naddrs;
	char addrs[RC_TOPO_MAX_ADDRS][64]; /* "198.18.0.1/24" */
	bool addrs_known;                  /* live, or the capture listed them */
	int ngids;                         /* valid (non-zero) entries */
	struct rc_topo_gid *gids;
	int rec_gid; /* recommended GID index, -1 none */
	/* rdma_cm's defaults for the port (configfs kernel/config/rdma_cm/DEV/
	 * ports/N, present once someone made the device's folder there):
	 * "RoCE v2", "IB/RoCE v1" ("" not set: the kernel's, RoCE v2), ToS -1 */
	char roce_mode[16];
	int roce_tos;
	/* pkeys/0: the partition key the port uses by default, -1 unknown;
	 * tc/N/traffic_class (mlx5): the RoCE traffic class, -1 not exposed;
	 * the netdev's RoCE ECN knobs (ecn/roce_np and roce_rp, enable/PRIO):
	 * a bit per priority enabled, -1 when the driver has none */
	int pkey0, tclass;
	int ecn_np, ecn_rp;
	struct rc_topo_verify verify;
};

struct rc_topo_dev {
	char name[RC_TOPO_NAME_MAX];
	char provider[32];             /* mlx5, efa, rxe, siw... */
	char driver[RC_TOPO_NAME_MAX]; /* kernel driver of the PCI function */
	char node_type[16];            /* CA, RNIC, switch */
	char node_guid[24];
	char fw_ver[64];
	char hca_type[32];      /* the NIC's model as its driver names it: MT4129 */
	char parent_netdev[32]; /* rxe: the netdev it sits on */
	bool has_pci;
	struct rc_topo_pci pci;
	int verbs; /* live: 1 listed by libibverbs, 0 not; -1 unknown */
	int nports;
	struct rc_topo_port ports[RC_TOPO_MAX_PORTS];
};

struct rc_topo_gpu {
	struct rc_topo_pci pci;
	char name[96]; /* NVML or the capture; "" unknown */
	char uuid[96];
	int nvml_index;     /* NVML's index (nvidia-smi's); -1 unknown */
	int nvswitch_links; /* active NVLinks to NVSwitches; 0 none */
};

struct rc_topo_numa {
	int node;
	char cpulist[512];
};

struct rc_topo_huge {
	unsigned long size_kb;
	long total, free;
};

/* One GPU's rail: its best NIC. */
struct rc_topo_rail {
	int gpu; /* index into gpus */
	int dev; /* index into devs, -1 when no NIC has a PCI path */
	enum rc_topo_path path;
	int shared; /* GPUs on this NIC, this one included */
	bool cross_socket;
	bool shared_by_design; /* more GPUs than usable NICs: someone must share */
	int best_dev;          /* the GPU's closest usable NIC on its own, -1 none */
	enum rc_topo_path best_path;
	/* ACS on the PCIe path between the GPU and its NIC: 1 a bridge on it
	 * redirects peer-to-peer (request or completion redirect: the traffic
	 * goes up to the root complex), at acs_at; 0 none does; -1 unknown (a
	 * bridge's config not readable); -2 no such path (no NIC, or the path
	 * crosses a root complex anyway) */
	int acs;
	char acs_at[32];
};

enum rc_topo_sev { RC_SEV_INFO, RC_SEV_WARNING, RC_SEV_ERROR };
RC_EXPORT const char *rc_topo_sev_name(enum rc_topo_sev s);

struct rc_topo_finding {
	enum rc_topo_sev severity;
	char check[32];
	char message[320];
	char fix[320];
};

/* What the host says about itself beyond the device files. */
struct rc_topo_facts {
	char hostname[128];
	char kernel[128];
	char nvidia_version[256]; /* /proc/driver/nvidia/version, first line */
	int memlock_known;        /* 1 when memlock is set */
	bool memlock_unlimited;
	uint64_t memlock; /* soft limit, bytes */
	int cap_ipc_lock; /* 1 yes, 0 no, -1 unknown */
	bool nvidia_loaded, peermem_loaded;
	int nhuge;
	struct rc_topo_huge huge[RC_TOPO_MAX_HUGE];
	int rdma_ucm;       /* user-space rdma_cm's module: 1 loaded, 0 not, -1 unknown */
	char rdma_core[32]; /* rdma-core's release ("44.0"), "" unknown */
	int iommu;          /* kernel/iommu_groups: 1 groups there, 0 none (no IOMMU), -1 unknown */
};

struct rc_topo {
	char root[RC_TOPO_PATH_MAX];      /* as given */
	char real_root[RC_TOPO_PATH_MAX]; /* resolved: reads stay below it */
	bool live;
	int ndevs;
	struct rc_topo_dev devs[RC_TOPO_MAX_DEVS];
	int devs_left_out; /* beyond RC_TOPO_MAX_DEVS */
	int ngpus;
	struct rc_topo_gpu gpus[RC_TOPO_MAX_GPUS];
	int nnuma;
	struct rc_topo_numa numa[RC_TOPO_MAX_NUMA];
	struct rc_topo_facts facts;
	/* matrix[g][d]: path class between gpus[g] and devs[d] */
	enum rc_topo_path matrix[RC_TOPO_MAX_GPUS][RC_TOPO_MAX_DEVS];
	/* gpu_matrix[g][h]: PCIe path class between gpus[g] and gpus[h];
	 * nvlinks[g][h]: NVLinks between them (direct, or through NVSwitches:
	 * the fewer of the two GPUs' switch links), 0 none (nvidia-smi's NV#) */
	enum rc_topo_path gpu_matrix[RC_TOPO_MAX_GPUS][RC_TOPO_MAX_GPUS];
	int nvlinks[RC_TOPO_MAX_GPUS][RC_TOPO_MAX_GPUS];
	bool nvml;      /* NVML answered for the GPUs */
	int nvswitches; /* NVSwitch bridges on PCI (class 0x0680) */
	/* The NICs in PCI bus order (indices into devs; those with PCI only):
	 * devs themselves stay in name order, as rdma and ibv_devices list them. */
	int nnic_pci;
	int nic_pci_order[RC_TOPO_MAX_DEVS];
	struct rc_topo_rail rails[RC_TOPO_MAX_GPUS];
	int nfindings;
	int findings_left_out;
	struct rc_topo_finding findings[RC_TOPO_MAX_FINDINGS];
};

struct rc_topo_opts {
	const char *root; /* NULL or "/sys": the running host (live) */
	bool hugepages;   /* doctor: hugepages are required */
	/* How messages and findings name the tree, NULL: root itself. A capture
	 * tarball extracted to a temporary folder is named by the tarball, so no
	 * temporary path reaches an operator: "cap.tar.gz:/PATH-INSIDE". */
	const char *name;
};

/* Read the devices, GPUs, facts; compute the matrix, the rail plan and the
 * doctor findings. *out is freed with rc_topo_free(). A tree that is not a
 * sysfs tree, or a captured device missing its ports, fails with err set;
 * on the live host an odd device becomes a finding instead. */
RC_EXPORT int rc_topo_load(const struct rc_topo_opts *opts, struct rc_topo **out,
			   struct rc_err *err);
RC_EXPORT void rc_topo_free(struct rc_topo *t);

/* Loopback RDMA WRITE of `bytes` on every ACTIVE port (of device `only`
 * when not NULL; live only): fills
 * each port's verify and adds a finding per failure. Returns the number of
 * ports that failed, or -ENODEV (and a finding that says so) when there was
 * no ACTIVE port to verify: nothing proven is not a pass. */
RC_EXPORT int rc_topo_verify(struct rc_topo *t, const char *only, uint64_t bytes, int timeout_ms);

/* Copy what rc_topo_load reads into dest: a directory, or a .tar.gz / .tgz
 * (built with tar). The source is this host (src NULL) or a tree to
 * re-capture (a folder into a tarball). *nfiles counts the files written. */
RC_EXPORT int rc_topo_capture(const char *src, const char *dest, int *nfiles, struct rc_err *err);
/* Make a --sysfs argument readable: a directory is used as it is; a
 * .tar.gz/.tgz is extracted into a new temporary directory, whose path is
 * put in tmpdir (to remove with rc_topo_rmtree). root gets the tree to read. */
RC_EXPORT int rc_topo_open_tree(const char *arg, char *root, size_t rootlen, char *tmpdir,
				size_t tmplen, struct rc_err *err);
RC_EXPORT int rc_topo_rmtree(const char *dir);

/* GPUDirect RDMA between a GPU and a NIC, from the host's facts. */
struct rc_topo_gpudirect {
	bool dmabuf;  /* the kernel, the NVIDIA module and the NIC's driver allow dma-buf */
	bool peermem; /* nvidia-peermem (or nv_peer_mem) is loaded */
	bool ready;   /* one of the two */
	enum rc_topo_path path;
	char dmabuf_why[160]; /* why not, when !dmabuf */
	char advice[240];
};
RC_EXPORT void rc_topo_gpudirect(const struct rc_topo *t, int gpu, int dev,
				 struct rc_topo_gpudirect *out);

/* The rails of one process (--rails auto): the rail plan's NIC of GPU gpu
 * (NVML's number, else PCI bus order, as probe-topology numbers them), or,
 * gpu < 0, those of NUMA node numa: the plan's NICs of the node's GPUs, or,
 * on a node without GPUs, its NICs with an active port (numa < 0: every
 * node's). A NIC or GPU whose node is not known counts on a host of one
 * node. devs gets up to cap indices into t->devs, in the plan's order; *n
 * how many there are (more than cap: the first cap were given). Returns 0,
 * or -ENODEV with err naming what is missing and its fix. */
RC_EXPORT int rc_topo_rails_of(const struct rc_topo *t, int gpu, int numa, int *devs, int cap,
			       int *n, struct rc_err *err);
/* The NUMA node whose CPUs hold every CPU this process may run on, or -1
 * (not known, or several nodes). */
RC_EXPORT int rc_topo_my_node(const struct rc_topo *t);

#endif
