// SPDX-License-Identifier: MIT
/*
 * probe-topology --export nccl|ucx|mooncake: the rail plan written as the
 * settings other tools read, so that each GPU's process is bound to its
 * rail beyond rdmactl.
 *   nccl      NCCL_IB_HCA==DEV:PORT (the leading '=' makes NCCL match the
 *             name exactly, so mlx5_1 does not also pick mlx5_10)
 *   ucx       UCX_NET_DEVICES=DEV:PORT
 *   mooncake  the NIC priority matrix Mooncake's transfer engine reads from
 *             the file named by MC_CUSTOM_TOPO_JSON: per GPU its rail NIC
 *             first, then every other NIC with an active port
 * Without --gpu the nccl and ucx forms are a POSIX sh fragment that picks
 * the GPU from RDMACTL_GPU, else LOCAL_RANK (torchrun, Slurm's wrappers,
 * Open MPI's OMPI_COMM_WORLD_LOCAL_RANK mapped by the caller); with --gpu N
 * they are one KEY=VALUE line, the form of an environment file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <rdmactl/topo.h>

#include "cmds.h"
#include "topo_export.h"

int topo_export_kind(const char *name)
{
	static const char *const kinds[] = { [TOPO_EXPORT_NCCL] = "nccl",
					     [TOPO_EXPORT_UCX] = "ucx",
					     [TOPO_EXPORT_MOONCAKE] = "mooncake" };

	for (int k = TOPO_EXPORT_NCCL; k <= TOPO_EXPORT_MOONCAKE; k++)
		if (!strcmp(name, kinds[k]))
			return k;
	return -1;
}

/* The port a NIC is used through: its first ACTIVE port, else its first. */
static int export_port(const struct rc_topo_dev *d, bool *active)
{
	for (int p = 0; p < d->nports; p++)
		if (!strcmp(d->ports[p].state, "ACTIVE")) {
			*active = true;
			return d->ports[p].num;
		}
	*active = false;
	return d->nports ? d->ports[0].num : 1;
}

/* The number tools know the GPU by: NVML's index where known (PCI bus
 * order), else its place in the probe's list (also PCI bus order). */
static int gpu_number(const struct rc_topo *t, int g)
{
	return t->gpus[g].nvml_index >= 0 ? t->gpus[g].nvml_index : g;
}

static bool nic_active(const struct rc_topo_dev *d)
{
	bool active;

	export_port(d, &active);
	return active;
}

/* Mooncake's matrix: {"cuda:N": [[rail], [other active NICs]], ...}. */
static json_t *mooncake_matrix(const struct rc_topo *t, int only)
{
	json_t *m = json_object();

	for (int g = 0; g < t->ngpus; g++) {
		const struct rc_topo_rail *r = &t->rails[g];
		json_t *pref, *other, *row;
		char key[32];

		if (only >= 0 && g != only)
			continue;
		pref = json_array();
		other = json_array();
		row = json_array();
		for (int d = 0; d < t->ndevs; d++) {
			if (d == r->dev)
				json_array_append_new(pref, json_string(t->devs[d].name));
			else if (nic_active(&t->devs[d]))
				json_array_append_new(other, json_string(t->devs[d].name));
		}
		json_array_append_new(row, pref);
		json_array_append_new(row, other);
		snprintf(key, sizeof(key), "cuda:%d", gpu_number(t, g));
		json_object_set_new(m, key, row);
	}
	return m;
}

/* A host without GPUs: the rail plan by NUMA node, as --rails numa:N takes
 * it (the node's NICs that are up; rxe and other NICs of no known node count
 * on a host of one node), else every NIC that is up. node -1: any node. The
 * DEV:PORT list, with the leading '=' for NCCL, into val. */
static int numa_rail(const struct rc_topo *t, int node, const char *eq, char *val, size_t cap,
		     int *devs, int *n, struct rc_err *e)
{
	size_t len;
	bool active;
	int rc = rc_topo_rails_of(t, -1, node, devs, RC_TOPO_MAX_DEVS, n, e);

	if (rc && node >= 0)
		rc = rc_topo_rails_of(t, -1, -1, devs, RC_TOPO_MAX_DEVS, n, e);
	if (rc)
		return rc;
	len = (size_t)snprintf(val, cap, "%s", eq);
	for (int i = 0; i < *n && i < RC_TOPO_MAX_DEVS && len < cap; i++)
		len += (size_t)snprintf(val + len, cap - len, "%s%s:%d", i ? "," : "",
					t->devs[devs[i]].name,
					export_port(&t->devs[devs[i]], &active));
	return 0;
}

/* The NUMA nodes a GPU-less export covers: the host's, or one "any" (-1). */
static int numa_nodes(const struct rc_topo *t, int *nodes)
{
	for (int i = 0; i < t->nnuma; i++)
		nodes[i] = t->numa[i].node;
	if (!t->nnuma)
		nodes[0] = -1;
	return t->nnuma ? t->nnuma : 1;
}

/* Mooncake's rows of a host without GPUs: "cpu:N" per NUMA node, as its
 * topology names the nodes: the node's rails first, then the other NICs up. */
static int mooncake_cpu_rows(const struct rc_topo *t, json_t *m, struct rc_err *e)
{
	int nodes[RC_TOPO_MAX_NUMA], devs[RC_TOPO_MAX_DEVS], n, rc;
	char key[32], val[16];

	for (int i = 0, nn = numa_nodes(t, nodes); i < nn; i++) {
		json_t *pref = json_array(), *other = json_array(), *row = json_array();

		if ((rc = numa_rail(t, nodes[i], "", val, sizeof(val), devs, &n, e))) {
			json_decref(pref);
			json_decref(other);
			json_decref(row);
			return rc;
		}
		for (int d = 0; d < t->ndevs; d++) {
			bool mine = false;

			for (int j = 0; j < n && j < RC_TOPO_MAX_DEVS; j++)
				mine |= devs[j] == d;
			if (mine || nic_active(&t->devs[d]))
				json_array_append_new(mine ? pref : other,
						      json_string(t->devs[d].name));
		}
		json_array_append_new(row, pref);
		json_array_append_new(row, other);
		snprintf(key, sizeof(key), "cpu:%d", nodes[i] < 0 ? 0 : nodes[i]);
		json_object_set_new(m, key, row);
	}
	return 0;
}

static void emit_mooncake(struct out *o, json_t *m)
{
	if (out_is_json(o)) {
		out_str(o, "variable", NULL, "MC_CUSTOM_TOPO_JSON");
		out_json(o, "matrix", m);
		return;
	}
	char *s = json_dumps(m, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	out_text(o, "%s\n", s ? s : "{}");
	free(s);
	json_decref(m);
}

static void put_mooncake(struct out *o, const struct rc_topo *t, int only)
{
	emit_mooncake(o, mooncake_matrix(t, only));
}

/* nccl and ucx on a host without GPUs: a value per NUMA node, and one for a
 * process on any other (every NIC that is up). */
static int put_env_cpu(struct ctx *ctx, const struct rc_topo *t, enum topo_export kind)
{
	const char *var = kind == TOPO_EXPORT_NCCL ? "NCCL_IB_HCA" : "UCX_NET_DEVICES";
	const char *eq = kind == TOPO_EXPORT_NCCL ? "=" : "";
	int nodes[RC_TOPO_MAX_NUMA], devs[RC_TOPO_MAX_DEVS], n, rc;
	struct out *o = &ctx->out;
	char val[1024];
	struct rc_err e;

	out_str(o, "variable", NULL, var);
	out_text(o, "# %s for each NUMA node's processes: no GPU here, so the rail plan by node\n",
		 var);
	out_text(o, "# (rdmactl probe-topology --export %s; --rails numa:N takes the same)\n",
		 kind == TOPO_EXPORT_NCCL ? "nccl" : "ucx");
	out_text(o, "case \"${RDMACTL_NUMA:-}\" in\n");
	out_arr_begin(o, "gpus");
	out_arr_end(o);
	out_arr_begin(o, "numa_nodes");
	for (int i = 0, nn = numa_nodes(t, nodes); i < nn && nodes[0] >= 0; i++) {
		if ((rc = numa_rail(t, nodes[i], eq, val, sizeof(val), devs, &n, &e)))
			return fail(ctx, rc, "probe-topology --export: %s", ERR_TEXT(e));
		out_obj_begin(o, NULL);
		out_i64(o, "node", "%lld) ", nodes[i]);
		out_arr_begin(o, "nics");
		for (int j = 0; j < n && j < RC_TOPO_MAX_DEVS; j++)
			out_str(o, NULL, NULL, t->devs[devs[j]].name);
		out_arr_end(o);
		out_str(o, "value", NULL, val);
		out_text(o, "export %s='%s' ;; # NUMA node %d\n", var, val, nodes[i]);
		out_obj_end(o);
	}
	out_arr_end(o);
	if ((rc = numa_rail(t, -1, eq, val, sizeof(val), devs, &n, &e)))
		return fail(ctx, rc, "probe-topology --export: %s", ERR_TEXT(e));
	out_str(o, "any_node", NULL, val);
	out_text(o, "*) export %s='%s' ;; # any other node: every NIC that is up\nesac\n", var, val);
	return 0;
}

/* nccl and ucx: one value per GPU. */
static void put_env(struct out *o, const struct rc_topo *t, enum topo_export kind, int only)
{
	const char *var = kind == TOPO_EXPORT_NCCL ? "NCCL_IB_HCA" : "UCX_NET_DEVICES";
	const char *eq = kind == TOPO_EXPORT_NCCL ? "=" : "";
	bool fragment = only < 0;

	out_str(o, "variable", NULL, var);
	if (fragment) {
		out_text(o,
			 "# %s for each GPU's process from the rail plan (rdmactl probe-topology --export %s)\n",
			 var, kind == TOPO_EXPORT_NCCL ? "nccl" : "ucx");
		out_text(o,
			 "# GPU numbers are NVML's (PCI bus order): run with CUDA_DEVICE_ORDER=PCI_BUS_ID\n");
		out_text(o, "case \"${RDMACTL_GPU:-${LOCAL_RANK:-}}\" in\n");
	}
	out_arr_begin(o, "gpus");
	for (int g = 0; g < t->ngpus; g++) {
		const struct rc_topo_rail *r = &t->rails[g];
		const struct rc_topo_dev *d;
		char val[RC_TOPO_NAME_MAX + 16];
		bool active;
		int port;

		if (only >= 0 && g != only)
			continue;
		if (r->dev < 0) { /* --gpu refused it already */
			out_text(o, "# GPU %d (%s): no NIC with a PCI path, left out\n",
				 gpu_number(t, g), t->gpus[g].pci.addr);
			continue;
		}
		d = &t->devs[r->dev];
		port = export_port(d, &active);
		snprintf(val, sizeof(val), "%s%s:%d", eq, d->name, port);
		out_obj_begin(o, NULL);
		out_i64(o, "gpu", fragment ? "%lld) " : NULL, gpu_number(t, g));
		out_str(o, "gpu_pci", NULL, t->gpus[g].pci.addr);
		out_str(o, "nic", NULL, d->name);
		out_i64(o, "port", NULL, port);
		out_bool(o, "port_active", NULL, active);
		out_str(o, "path", NULL, rc_topo_path_name(r->path));
		out_str(o, "value", NULL, val);
		if (fragment)
			out_text(o, "export %s='%s' ;; # GPU %s -> %s port %d, %s%s\n", var, val,
				 t->gpus[g].pci.addr, d->name, port, rc_topo_path_name(r->path),
				 active ? "" : ", port not active");
		else
			out_text(o, "%s=%s\n", var, val);
		out_obj_end(o);
	}
	out_arr_end(o);
	if (fragment)
		out_text(o,
			 "*) echo \"rail plan: set RDMACTL_GPU or LOCAL_RANK to this process's GPU\" >&2 ;;\nesac\n");
}

int topo_export(struct ctx *ctx, const struct rc_topo *t, enum topo_export kind, int gpu)
{
	struct out *o = &ctx->out;
	int only = -1;

	if (!t->ngpus && gpu >= 0)
		return fail(ctx, -ENODEV,
			    "probe-topology --export --gpu %d: this host has no GPU (without --gpu: "
			    "the rail plan by NUMA node)",
			    gpu);
	if (gpu >= 0) {
		for (int g = 0; g < t->ngpus; g++)
			if (gpu_number(t, g) == gpu)
				only = g;
		if (only < 0)
			return fail(ctx, -ENODEV,
				    "probe-topology --export: no GPU %d (%d GPU%s found, numbered by NVML)",
				    gpu, t->ngpus, t->ngpus == 1 ? "" : "s");
		if (t->rails[only].dev < 0)
			return fail(ctx, -ENODEV,
				    "probe-topology --export: GPU %d (%s) has no NIC with a PCI path",
				    gpu, t->gpus[only].pci.addr);
	}
	out_str(o, "export", NULL,
		kind == TOPO_EXPORT_NCCL  ? "nccl"
		: kind == TOPO_EXPORT_UCX ? "ucx"
					  : "mooncake");
	if (!t->ngpus && kind != TOPO_EXPORT_MOONCAKE)
		return put_env_cpu(ctx, t, kind);
	if (!t->ngpus) {
		json_t *m = json_object();
		struct rc_err e;
		int rc = mooncake_cpu_rows(t, m, &e);

		if (rc) {
			json_decref(m);
			return fail(ctx, rc, "probe-topology --export: %s", ERR_TEXT(e));
		}
		emit_mooncake(o, m);
	} else if (kind == TOPO_EXPORT_MOONCAKE) {
		put_mooncake(o, t, only);
	} else {
		put_env(o, t, kind, only);
	}
	return 0;
}
