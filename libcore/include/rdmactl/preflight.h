/* SPDX-License-Identifier: MIT */
/*
 * preflight: before a job, the settings of every node side by side. Each
 * rank turns its host's topology (rdmactl/topo.h, the code probe-topology
 * reads with) into one fixed-size record about its rail; the records meet
 * on rank 0, which compares them: a value that most nodes share is the
 * reference, and each node that differs, or holds a value that is wrong on
 * its own (a port down, a GID with no netdev, rdma_ucm missing, a locked-
 * memory limit below the job's buffers, a PCIe link trained below its
 * maximum), becomes a finding that names the node, why it matters and the
 * fix. The figure a rail should reach (link rate less protocol overhead,
 * capped by its PCIe slot) reads the short probe's results.
 */
#ifndef RDMACTL_PREFLIGHT_H
#define RDMACTL_PREFLIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmactl/err.h>
#include <rdmactl/export.h>
#include <rdmactl/group.h>
#include <rdmactl/sweep.h>
#include <rdmactl/topo.h>

/* A PCIe link: current and maximum. Empty strings and 0 mean unknown. */
struct rc_pf_link {
	char addr[32];
	char cur_speed[32], max_speed[32]; /* "16.0 GT/s PCIe" */
	int32_t cur_width, max_width;
};

/* One rank's facts, as sent to rank 0: plain bytes of a fixed size. A
 * record that came from a peer is used only after rc_pf_node_bound. */
struct rc_pf_node {
	int32_t rank;
	/* the node's rails: rail 0 is the device the rank runs on, and carries
	 * the node's own facts (host, limits, versions, the rail plan, ACS and
	 * IOMMU); rails 1.. are the other NICs of the rail plan, each compared
	 * with the same rail of the other nodes. rails: how many it has. */
	int32_t rail, rails;
	int32_t loaded; /* 1: the topology was read (else error says why) */
	char error[160];
	char host[RC_HOST_MAX]; /* the address it met the group on */
	char hostname[64];      /* its name */
	char kernel[64], rdma_core[32], rdmactl[32];
	int32_t memlock_known, memlock_unlimited, cap_ipc_lock;
	uint64_t memlock;
	int32_t rdma_ucm; /* 1, 0, -1 unknown */
	int32_t peermem, ngpus;
	int64_t huge_total, huge_free; /* pages of every size; -1 unknown */
	/* the rail: the device the rank runs on, its port */
	char dev[64], provider[32], driver[64], fw_ver[64];
	int32_t port;
	char link_layer[16], state[24], rate[64];
	double rate_gbps;
	int32_t active_mtu, netdev_mtu; /* 0 / -1 unknown */
	char netdev[32], netdev_state[16];
	int32_t gid_index; /* the one the job would use; -1 none */
	int32_t gid_found; /* a valid GID sits at that index */
	char gid_type[12], gid[48], gid_netdev[32];
	char roce_mode[16]; /* "" not set */
	int32_t roce_tos;   /* -1 not set */
	int32_t has_pci;
	struct rc_pf_link nic_link;
	int32_t gpus_slow;          /* GPUs whose PCIe link is narrower than its maximum */
	struct rc_pf_link gpu_link; /* the first of them */
	/* the NIC: "15b3:1021 MT4129" (PCI vendor:device, the driver's model
	 * name where sysfs has one); the port's pkey table entry 0 (-1
	 * unknown), its RoCE traffic class (-1 not exposed) and ECN knobs (a bit
	 * per priority, -1 the driver has none) */
	char nic_model[48];
	int32_t pkey, tclass, ecn_np, ecn_rp;
	/* the GPU-NIC paths of the rail plan: how many a bridge redirects with
	 * ACS (the first at acs_at), how many could not be read; the IOMMU
	 * on them ("off", "identity", "DMA"... "" unknown) */
	int32_t nrails, acs_redirect, acs_unknown;
	char acs_at[64], iommu[16];
	/* the rail plan: "GPU0 mlx5_0 PIX, GPU1 mlx5_1 PIX..." ("" no GPU) */
	char rail_plan[256];
};

/* Fill n from t for device dev (NULL: the first with an ACTIVE port, else
 * the first), port (0: its first ACTIVE port, else its first) and
 * gid_index (< 0: the port's recommended one). rdmactl is the program's
 * version. -ENODEV with err set when t has no such device (n is filled
 * with what is known, loaded stays 1). */
RC_EXPORT int rc_pf_node_fill(const struct rc_topo *t, const char *dev, int port, int gid_index,
			      const char *rdmactl, struct rc_pf_node *n, struct rc_err *err);
/* A record whose host could not be read: every fact unknown (-1). */
RC_EXPORT void rc_pf_node_unknown(struct rc_pf_node *n);
#define RC_PF_RAILS_MAX 8

/* Every rail of the node into n[0..cap-1] (cap at most RC_PF_RAILS_MAX):
 * n[0] as rc_pf_node_fill makes it, then a record for each other NIC of
 * t's rail plan, in GPU order (with each GPU's closest NIC, where the plan
 * passed over it: its ports down), each on its first ACTIVE port and
 * recommended GID. *nrails: how many (1 when the node has no GPU: no plan).
 * Returns what rc_pf_node_fill returned for n[0]. */
RC_EXPORT int rc_pf_node_fill_rails(const struct rc_topo *t, const char *dev, int port,
				    int gid_index, const char *rdmactl, struct rc_pf_node *n,
				    int cap, int *nrails, struct rc_err *err);
/* Terminate every string of a record that came from a peer and bring its
 * numbers into range (a negative width, an MTU of a billion): what rank 0
 * compares and prints is then bounded whatever was sent. */
RC_EXPORT void rc_pf_node_bound(struct rc_pf_node *n);

/* The settings compared across nodes, in the grid's order. */
enum rc_pf_setting {
	RC_PF_KERNEL,
	RC_PF_RDMA_CORE,
	RC_PF_RDMACTL,
	RC_PF_PROVIDER,
	RC_PF_NIC_MODEL,
	RC_PF_DRIVER,
	RC_PF_FW,
	RC_PF_LINK_LAYER,
	RC_PF_STATE,
	RC_PF_RATE,
	RC_PF_ACTIVE_MTU,
	RC_PF_NETDEV_MTU,
	RC_PF_GID_TYPE,
	RC_PF_PKEY,
	RC_PF_ROCE_MODE,
	RC_PF_ROCE_TOS,
	RC_PF_TCLASS,
	RC_PF_ECN,
	RC_PF_MEMLOCK,
	RC_PF_HUGEPAGES,
	RC_PF_RDMA_UCM,
	RC_PF_NIC_PCIE,
	RC_PF_GPU_PCIE,
	RC_PF_IOMMU,
	RC_PF_ACS,
	RC_PF_RAIL_PLAN,
	RC_PF_NSETTINGS
};
/* Its JSON and metrics name: "kernel", "netdev_mtu", "roce_mode"... */
RC_EXPORT const char *rc_pf_setting_name(int s);
/* Node n's value of setting s as text ("" when not known). */
RC_EXPORT void rc_pf_value(const struct rc_pf_node *n, int s, char *buf, size_t len);

#define RC_PF_NODES_MAX 4096

struct rc_pf_finding {
	enum rc_topo_sev severity;
	char check[24]; /* "differs", "port_down", "gid_netdev", "rdma_ucm", "memlock", "pcie_link"... */
	char setting[24]; /* rc_pf_setting_name, or "" */
	int32_t nranks;   /* the ranks it names (their first 64 in ranks) */
	int32_t ranks[64];
	char nodes[256];     /* "rank 2 (node2, rxe_b)", "and 3 more" */
	char value[256];     /* theirs, when a setting differs or is wrong */
	char reference[256]; /* the majority's, when it differs */
	char message[640];
	char why[256];
	char fix[320];
};

struct rc_pf_limits {
	uint64_t buffer; /* bytes a rank will register; a locked-memory limit below is a finding */
};

/* Compare the n records (each bounded; in rank order, a node's rails in
 * rail order, as rc_pf_gather_rails leaves them). A finding's ranks are
 * the nodes' ranks; differs is by record. Rail k of each node is compared
 * with rail k of the others; the node's own settings on rail 0 only.
 * The records: the per-node checks, then each
 * setting against the majority. Up to cap findings into f, errors first,
 * then warnings, then infos; *nf how many there were in all (more than cap:
 * the first cap kept). differs, when not NULL, gets n * RC_PF_NSETTINGS
 * flags: node i's setting s is a finding. 0 or -EINVAL. */
RC_EXPORT int rc_pf_compare(const struct rc_pf_node *nodes, int n, const struct rc_pf_limits *lim,
			    struct rc_pf_finding *f, int cap, int *nf, uint8_t *differs);

/* What a rail between a and b should carry, Gbit/s: the slower port's
 * rate times the payload share of a packet at the smaller active MTU (RoCE
 * v2 or InfiniBand headers), capped by either NIC's PCIe link (current speed
 * and width, its encoding and a 256-byte TLP's headers). 0 when the rates
 * are not known. */
RC_EXPORT double rc_pf_expected_gbit(const struct rc_pf_node *a, const struct rc_pf_node *b);
/* The PCIe link's payload rate, Gbit/s (0 unknown). */
RC_EXPORT double rc_pf_pcie_gbit(const struct rc_pf_link *l);

/* Over a group: fill mine's rank and address (the group's) and its node's
 * name (the rendezvous's, when it gave one), and gather every rank's record
 * to rank 0 into all[world], each bounded (rc_pf_node_bound) and its rank
 * set to where it came from. Every rank calls it. */
RC_EXPORT int rc_pf_gather(struct rc_group *g, struct rc_pf_node *mine, struct rc_pf_node *all,
			   struct rc_err *err);

/* As rc_pf_gather, each rank sending its nmine (1..RC_PF_RAILS_MAX) rails:
 * on rank 0, all (room for world * RC_PF_RAILS_MAX records) gets every
 * rank's rails in rank order, each bounded, its rank, rail and rails set
 * from where it came; *n how many records. */
RC_EXPORT int rc_pf_gather_rails(struct rc_group *g, struct rc_pf_node *mine, int nmine,
				 struct rc_pf_node *all, int *n, struct rc_err *err);

/* Rank 0's report (*len bytes at *buf) to every rank, down the group's tree
 * in pieces of one control message: its length first, then its bytes. On
 * the other ranks *buf becomes a malloc'd copy (NUL-terminated beyond *len)
 * and *len its length, checked before anything is allocated: a length of
 * 0 or above max is -EMSGSIZE on every rank and nothing more is sent.
 * Every rank calls it; each wait within the group's timeout. */
RC_EXPORT int rc_pf_share(struct rc_group *g, char **buf, size_t *len, size_t max,
			  struct rc_err *err);

struct rc_pf_probe_opts {
	double duration_s; /* bandwidth burst per direction (0: 0.25 s) */
	uint64_t msg_size; /* per WRITE (0: 64 KiB) */
	int lat_iters;     /* 8-byte WRITEs and READs timed (0: 50) */
	const char *sysfs; /* for the port counters and rates (NULL: /sys) */
	void (*progress)(void *arg, int round, int rounds, int peer, const char *what);
	void *progress_arg;
};
/* The short probe: sweep's measurement (connect, bandwidth burst, 8-byte
 * latency) between each rank and the next one around the ring, both
 * directions; the matrix lands on rank 0 (res->m, pairs not probed marked
 * RC_SWEEP_SKIPPED). Release with rc_sweep_result_free. */
RC_EXPORT int rc_pf_probe(struct rc_group *g, const struct rc_pf_probe_opts *o,
			  struct rc_sweep_result *res, struct rc_err *err);

#endif
