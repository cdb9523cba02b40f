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

static void put_mooncake(struct out *o, const struct rc_topo *t, int only)
{
	json_t *m = mooncake_matrix(t, only);

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

	if (!t->ngpus)
		return fail(
			ctx, -ENODEV,
			"probe-topology --export: no GPU found, and the rail plan binds GPUs to NICs");
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
	if (kind == TOPO_EXPORT_MOONCAKE)
		put_mooncake(o, t, only);
	else
		put_env(o, t, kind, only);
	return 0;
}
