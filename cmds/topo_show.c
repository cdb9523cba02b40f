// SPDX-License-Identifier: MIT
/*
 * probe-topology's report: the host, the RDMA devices, their ports and
 * GIDs, the GPUs, the GPU x NIC and GPU x GPU path classes, GPUDirect, the
 * rail plan and the doctor's findings, every value through the output layer
 * so that text and JSON say the same thing.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <rdmactl/parse.h>
#include <rdmactl/topo.h>

#include "topo_show.h"

/* A string that may be unknown: null in JSON, nothing in text. */
static void put_str(struct out *o, const char *key, const char *fmt, const char *val)
{
	if (val && *val)
		out_str(o, key, fmt, val);
	else
		out_null(o, key);
}

static void put_int(struct out *o, const char *key, const char *fmt, long long v)
{
	if (v >= 0)
		out_i64(o, key, fmt, v);
	else
		out_null(o, key);
}

static void put_pci(struct out *o, const struct rc_topo_pci *p)
{
	out_obj_begin(o, "pci");
	out_str(o, "address", "  pci %s", p->addr);
	put_int(o, "numa_node", "  numa %lld", p->numa_node);
	put_str(o, "local_cpulist", "  cpus %s", p->cpulist);
	put_str(o, "vendor", NULL, p->vendor);
	put_str(o, "device", NULL, p->device);
	put_str(o, "class", NULL, p->class_code);
	put_str(o, "driver", NULL, p->driver);
	out_obj_begin(o, "link");
	put_str(o, "current_speed", "  link %s", p->cur_speed);
	put_int(o, "current_width", " x%lld", p->cur_width);
	put_str(o, "max_speed", " (max %s", p->max_speed);
	put_int(o, "max_width", " x%lld", p->max_width);
	out_text(o, "%s", p->max_speed[0] ? ")" : "");
	out_obj_end(o);
	out_str(o, "path", NULL, p->path);
	out_obj_end(o);
	out_text(o, "\n");
}

static void put_gids(struct out *o, const struct rc_topo_port *p)
{
	out_arr_begin(o, "gids");
	for (int i = 0; i < p->ngids; i++) {
		const struct rc_topo_gid *g = &p->gids[i];

		out_obj_begin(o, NULL);
		out_i64(o, "index", "    gid %3lld", g->index);
		out_str(o, "type", "  %-8s", g->type[0] ? g->type : "?");
		out_str(o, "gid", " %s", g->gid);
		put_str(o, "netdev", "  (%s)", g->netdev);
		out_text(o, "%s\n", g->index == p->rec_gid ? "  <- recommended" : "");
		out_obj_end(o);
	}
	out_arr_end(o);
}

static void put_verify(struct out *o, const struct rc_topo_verify *v)
{
	char size[32], written[32];

	if (!v->done) {
		out_null(o, "verify");
		return;
	}
	rc_format_size(v->bytes, size, sizeof(size));
	out_obj_begin(o, "verify");
	out_bool(o, "ok", "    verify: %s", v->ok);
	if (v->ok) {
		rc_format_size(v->written, written, sizeof(written));
		out_u64(o, "written_bytes", NULL, v->written);
		out_text(o, ", %s written", written);
		out_f64(o, "seconds", " in %.3f s", v->seconds);
		out_f64(o, "gbit_per_s", " (%.2f Gb/s)", v->gbit_per_s);
		out_u64(o, "bytes", NULL, v->bytes);
		out_text(o, ", %s checked", size);
		out_null(o, "error");
	} else {
		out_null(o, "written_bytes");
		out_null(o, "bytes");
		out_null(o, "seconds");
		out_null(o, "gbit_per_s");
		out_str(o, "error", ": %s", v->error);
	}
	put_int(o, "gid_index", v->ok ? ", gid index %lld" : NULL, v->gid_index);
	out_obj_end(o);
	out_text(o, "\n");
}

/* rdma(8)'s spelling of sysfs's physical state, as rdma link and ibv
 * devinfo print it: "LinkUp" -> "LINK_UP", "Phy Test" -> "PHY_TEST". */
static void upper_state(const char *s, char *out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; s[i] && n + 2 < cap; i++) {
		if (s[i] == ' ') {
			out[n++] = '_';
			continue;
		}
		if (i && isupper((unsigned char)s[i]) && islower((unsigned char)s[i - 1]))
			out[n++] = '_';
		out[n++] = (char)toupper((unsigned char)s[i]);
	}
	out[n] = '\0';
}

static void put_port(struct out *o, const struct rc_topo_port *p)
{
	char phys[64];

	const struct rc_topo_gid *rec = NULL;

	out_obj_begin(o, NULL);
	out_i64(o, "port", "  port %lld:", p->num);
	out_str(o, "state", " %s", p->state);
	upper_state(p->phys_state, phys, sizeof(phys));
	put_str(o, "phys_state", NULL, p->phys_state);
	put_str(o, "physical_state", " (%s)", phys);
	put_str(o, "link_layer", "  %s", p->link_layer);
	put_str(o, "rate", "  %s", p->rate);
	if (p->rate_gbps > 0)
		out_f64(o, "rate_gbit_per_s", NULL, p->rate_gbps);
	else
		out_null(o, "rate_gbit_per_s");
	put_str(o, "width", NULL, p->width);
	put_str(o, "speed", NULL, p->speed);
	put_int(o, "active_mtu", "  mtu %lld", p->active_mtu > 0 ? p->active_mtu : -1);
	put_int(o, "lid", "  lid %lld", p->lid);
	put_int(o, "sm_lid", " (sm %lld)", p->sm_lid);
	out_text(o, "\n");
	put_str(o, "netdev", "    netdev %s", p->netdev);
	put_int(o, "netdev_mtu", " (mtu %lld", p->netdev_mtu);
	put_str(o, "netdev_state", p->netdev_mtu >= 0 ? ", %s)" : " (%s)", p->netdev_state);
	if (p->netdev_mtu >= 0 && !p->netdev_state[0])
		out_text(o, ")");
	if (p->addrs_known) {
		out_arr_begin(o, "addresses");
		for (int i = 0; i < p->naddrs; i++)
			out_str(o, NULL, "  %s", p->addrs[i]);
		out_arr_end(o);
	} else {
		out_null(o, "addresses");
	}
	if (p->netdev[0])
		out_text(o, "\n");
	put_gids(o, p);
	for (int i = 0; i < p->ngids; i++)
		if (p->gids[i].index == p->rec_gid)
			rec = &p->gids[i];
	put_int(o, "recommended_gid_index", NULL, p->rec_gid);
	put_str(o, "recommended_gid", NULL, rec ? rec->gid : NULL);
	if (!rec)
		out_text(o, "    no recommended GID%s\n",
			 strcmp(p->link_layer, "Ethernet") ? "" : " (no RoCE v2 GID)");
	put_verify(o, &p->verify);
	out_obj_end(o);
}

/* rdma(8)'s spelling of sysfs's node type, as rdma dev prints it: "CA" -> "ca". */
static void lower_type(const char *s, char *out, size_t cap)
{
	size_t n = 0;

	for (; s[n] && n + 1 < cap; n++)
		out[n] = (char)tolower((unsigned char)s[n]);
	out[n] = '\0';
}

static void put_dev(struct out *o, const struct rc_topo_dev *d)
{
	char type[sizeof(d->node_type)];

	lower_type(d->node_type, type, sizeof(type));
	out_obj_begin(o, NULL);
	out_str(o, "name", "%s", d->name);
	out_str(o, "provider", "  provider %s", d->provider);
	put_str(o, "driver", " (driver %s)", d->driver);
	put_str(o, "node_type", "  %s", type);
	put_str(o, "node_guid", "  guid %s", d->node_guid);
	/* none in sysfs (rxe): "0.0.0", as ibv devinfo says */
	put_str(o, "fw_ver", "  fw %s", d->fw_ver[0] ? d->fw_ver : "0.0.0");
	put_str(o, "parent_netdev", "  on %s", d->parent_netdev);
	if (d->verbs >= 0)
		out_bool(o, "verbs", d->verbs ? NULL : "  (no verbs provider)", d->verbs);
	else
		out_null(o, "verbs");
	out_text(o, "\n");
	if (d->has_pci)
		put_pci(o, &d->pci);
	else
		out_null(o, "pci");
	out_arr_begin(o, "ports");
	for (int p = 0; p < d->nports; p++)
		put_port(o, &d->ports[p]);
	out_arr_end(o);
	out_obj_end(o);
}

/* How GPUs and NICs are numbered, said once so that no one has to guess. */
static void put_numbering(struct out *o, const struct rc_topo *t)
{
	bool same = true;

	for (int i = 0, k = 0; i < t->ndevs; i++)
		if (t->devs[i].has_pci)
			same &= t->nic_pci_order[k++] == i;
	out_obj_begin(o, "numbering");
	out_str(o, "gpus", NULL, "pci_bus_id");
	out_text(o,
		 "\nNumbering: GPUs in PCI bus order (as nvidia-smi, and CUDA with CUDA_DEVICE_ORDER=PCI_BUS_ID);\n");
	out_str(o, "nics", NULL, "name");
	out_text(o, "  NICs by name (mlx5 names follow probe order)");
	out_text(o, same ? ", which here is also PCI bus order\n" : "; in PCI bus order:");
	out_arr_begin(o, "nics_pci_order");
	for (int k = 0; k < t->nnic_pci; k++)
		out_str(o, NULL, same ? NULL : " %s", t->devs[t->nic_pci_order[k]].name);
	out_arr_end(o);
	out_text(o, same ? "" : "\n");
	out_bool(o, "nvml", NULL, t->nvml);
	out_obj_end(o);
}

static void put_gpus(struct out *o, const struct rc_topo *t)
{
	out_text(o, "\nGPUs (%d)%s\n", t->ngpus, t->ngpus ? "" : ": none found on PCI");
	out_i64(o, "nvswitches", t->nvswitches ? "NVSwitches on PCI: %lld (not GPUs)\n" : NULL,
		t->nvswitches);
	out_arr_begin(o, "gpus");
	for (int g = 0; g < t->ngpus; g++) {
		const struct rc_topo_gpu *gpu = &t->gpus[g];

		out_obj_begin(o, NULL);
		out_i64(o, "index", "GPU%lld", g);
		put_str(o, "name", "  %s", gpu->name);
		put_str(o, "uuid", "  %s", gpu->uuid);
		put_int(o, "nvml_index", "  (NVML %lld)", gpu->nvml_index);
		out_i64(o, "nvswitch_links",
			gpu->nvswitch_links ? "  %lld NVLinks to NVSwitches" : NULL,
			gpu->nvswitch_links);
		out_text(o, "\n");
		put_pci(o, &gpu->pci);
		out_obj_end(o);
	}
	out_arr_end(o);
}

static void put_matrix(struct out *o, const struct rc_topo *t)
{
	char fmt[16];
	int w = 6;

	for (int d = 0; d < t->ndevs; d++)
		if ((int)strlen(t->devs[d].name) + 2 > w)
			w = (int)strlen(t->devs[d].name) + 2;
	snprintf(fmt, sizeof(fmt), "%%-%ds", w);
	if (t->ngpus && t->ndevs) {
		out_text(o, "\nGPU x NIC paths\n        ");
		for (int d = 0; d < t->ndevs; d++)
			out_text(o, "%-*s", w, t->devs[d].name);
		out_text(o, "\n");
	}
	out_arr_begin(o, "matrix");
	for (int g = 0; g < t->ngpus && t->ndevs; g++) {
		out_text(o, "GPU%-5d", g);
		for (int d = 0; d < t->ndevs; d++) {
			out_obj_begin(o, NULL);
			out_i64(o, "gpu", NULL, g);
			out_str(o, "gpu_pci", NULL, t->gpus[g].pci.addr);
			out_str(o, "nic", NULL, t->devs[d].name);
			put_str(o, "nic_pci", NULL, t->devs[d].has_pci ? t->devs[d].pci.addr : NULL);
			out_str(o, "path", fmt, rc_topo_path_name(t->matrix[g][d]));
			out_obj_end(o);
		}
		out_text(o, "\n");
	}
	out_arr_end(o);
	if (t->ngpus && t->ndevs)
		out_text(o,
			 "Legend: PIX at most one PCIe switch, PXB several bridges, PHB through the host bridge,\n"
			 "        NODE between host bridges of one NUMA node, SYS across NUMA nodes,\n"
			 "        N/A no PCI parent (rxe, siw)\n");
}

/* nvidia-smi topo -m's word for a GPU pair: NV# where NVLinks join them. */
static void gpu_link_name(const struct rc_topo *t, int g, int h, char *buf, size_t len)
{
	if (g == h)
		snprintf(buf, len, "X");
	else if (t->nvlinks[g][h] > 0)
		snprintf(buf, len, "NV%d", t->nvlinks[g][h]);
	else
		snprintf(buf, len, "%s", rc_topo_path_name(t->gpu_matrix[g][h]));
}

static void put_gpu_matrix(struct out *o, const struct rc_topo *t)
{
	char word[16];

	if (t->ngpus > 1) {
		out_text(o, "\nGPU x GPU paths\n        ");
		for (int h = 0; h < t->ngpus; h++)
			out_text(o, "GPU%-4d", h);
		out_text(o, "\n");
	}
	out_arr_begin(o, "gpu_matrix");
	for (int g = 0; g < t->ngpus && t->ngpus > 1; g++) {
		out_text(o, "GPU%-5d", g);
		for (int h = 0; h < t->ngpus; h++) {
			gpu_link_name(t, g, h, word, sizeof(word));
			if (g == h) {
				out_text(o, "%-7s", word);
				continue;
			}
			out_obj_begin(o, NULL);
			out_i64(o, "gpu", NULL, g);
			out_i64(o, "peer", NULL, h);
			out_str(o, "link", "%-7s", word);
			out_str(o, "path", NULL, rc_topo_path_name(t->gpu_matrix[g][h]));
			out_i64(o, "nvlinks", NULL, t->nvlinks[g][h]);
			out_obj_end(o);
		}
		out_text(o, "\n");
	}
	out_arr_end(o);
	if (t->ngpus > 1)
		out_text(o,
			 "Legend: X itself, NV# joined by # NVLinks (direct or through NVSwitches),\n"
			 "        then the PCIe class as above%s\n",
			 t->nvml ? "" : "; no NVML here, so no NVLink counts");
}

static void put_gpudirect(struct out *o, const struct rc_topo *t)
{
	bool any = false;

	for (int g = 0; g < t->ngpus; g++)
		any |= t->rails[g].dev >= 0;
	if (any)
		out_text(o, "\nGPUDirect RDMA (rail pairs; every pair in the JSON)\n");
	out_arr_begin(o, "gpudirect");
	for (int g = 0; g < t->ngpus; g++)
		for (int d = 0; d < t->ndevs; d++) {
			struct rc_topo_gpudirect gd;
			bool show = t->rails[g].dev == d;

			rc_topo_gpudirect(t, g, d, &gd);
			out_obj_begin(o, NULL);
			out_i64(o, "gpu", show ? "  GPU%-3lld" : NULL, g);
			out_str(o, "nic", show ? " %-8s" : NULL, t->devs[d].name);
			out_str(o, "path", show ? " %-4s" : NULL, rc_topo_path_name(gd.path));
			out_bool(o, "dmabuf", show ? "  dma-buf %s" : NULL, gd.dmabuf);
			put_str(o, "dmabuf_why", NULL, gd.dmabuf ? NULL : gd.dmabuf_why);
			out_bool(o, "peermem", show ? ", peermem %s" : NULL, gd.peermem);
			out_bool(o, "ready", show ? ", ready %s" : NULL, gd.ready);
			out_str(o, "advice", show ? "\n        %s\n" : NULL, gd.advice);
			out_obj_end(o);
		}
	out_arr_end(o);
}

static void put_rails(struct out *o, const struct rc_topo *t)
{
	if (t->ngpus)
		out_text(o,
			 "\nRail plan (least total path cost, then the least NIC load; NICs with an active port first)\n");
	out_arr_begin(o, "rail_plan");
	for (int g = 0; g < t->ngpus; g++) {
		const struct rc_topo_rail *r = &t->rails[g];
		const struct rc_topo_dev *d = r->dev >= 0 ? &t->devs[r->dev] : NULL;
		int n = 0;

		out_obj_begin(o, NULL);
		out_i64(o, "gpu", "  GPU%-3lld", g);
		out_str(o, "gpu_pci", " %s", t->gpus[g].pci.addr);
		put_int(o, "gpu_numa", " (NUMA %lld)", t->gpus[g].pci.numa_node);
		put_str(o, "nic", " -> %s", d ? d->name : NULL);
		put_str(o, "nic_pci", " %s", d ? d->pci.addr : NULL);
		put_int(o, "nic_numa", " (NUMA %lld)", d ? d->pci.numa_node : -1);
		put_str(o, "path", "  %s", d ? rc_topo_path_name(r->path) : NULL);
		if (!d)
			out_text(o, " -> no NIC with a PCI path");
		out_bool(o, "shared", NULL, d && r->shared > 1);
		out_arr_begin(o, "shared_with");
		for (int h = 0; d && h < t->ngpus; h++) {
			if (h == g || t->rails[h].dev != r->dev)
				continue;
			out_text(o, "%s", n++ ? ", " : "  shared with ");
			out_i64(o, NULL, "GPU%lld", h);
		}
		out_arr_end(o);
		out_bool(o, "shared_by_design",
			 r->shared_by_design ? " (by design: more GPUs than NICs)" : NULL,
			 r->shared_by_design);
		out_bool(o, "cross_socket", r->cross_socket ? "  cross-socket" : NULL,
			 r->cross_socket);
		put_str(o, "best_nic", NULL, r->best_dev >= 0 ? t->devs[r->best_dev].name : NULL);
		put_str(o, "best_path", NULL,
			r->best_dev >= 0 ? rc_topo_path_name(r->best_path) : NULL);
		if (r->best_dev >= 0 && r->best_path < r->path)
			out_text(o, "  (its closest alone: %s %s)", t->devs[r->best_dev].name,
				 rc_topo_path_name(r->best_path));
		out_text(o, "\n");
		out_obj_end(o);
	}
	out_arr_end(o);
}

static void put_findings(struct out *o, const struct rc_topo *t, int count[3])
{
	if (t->nfindings)
		out_text(o, "\nDoctor (%d finding%s)\n", t->nfindings, t->nfindings == 1 ? "" : "s");
	else
		out_text(o, "\nDoctor: no findings\n");
	out_arr_begin(o, "findings");
	for (int i = 0; i < t->nfindings; i++) {
		const struct rc_topo_finding *f = &t->findings[i];

		count[f->severity]++;
		out_obj_begin(o, NULL);
		out_str(o, "severity", "  %-8s", rc_topo_sev_name(f->severity));
		out_str(o, "check", "%s: ", f->check);
		out_str(o, "message", "%s\n", f->message);
		put_str(o, "fix", "           fix: %s\n", f->fix);
		out_obj_end(o);
	}
	out_arr_end(o);
	if (t->findings_left_out)
		out_text(o, "  (%d more findings not shown)\n", t->findings_left_out);
}

static void put_host(struct out *o, const struct rc_topo *t, const char *source)
{
	const struct rc_topo_facts *f = &t->facts;

	out_obj_begin(o, "source");
	out_str(o, "kind", "Source: %s", t->live ? "live" : "sysfs");
	out_str(o, "path", " %s\n", source);
	out_obj_end(o);
	out_obj_begin(o, "host");
	out_text(o, "Host:");
	put_str(o, "hostname", " %s", f->hostname);
	put_str(o, "kernel", "  kernel %s", f->kernel);
	if (f->memlock_known && f->memlock_unlimited) {
		out_null(o, "memlock_bytes");
		out_text(o, "  memlock unlimited");
	} else if (f->memlock_known) {
		char size[32];

		rc_format_size(f->memlock, size, sizeof(size));
		out_u64(o, "memlock_bytes", NULL, f->memlock);
		out_text(o, "  memlock %s", size);
	} else {
		out_null(o, "memlock_bytes");
	}
	out_bool(o, "memlock_unlimited", NULL, f->memlock_known && f->memlock_unlimited);
	put_str(o, "nvidia_driver", "\n  nvidia: %s", f->nvidia_version);
	out_bool(o, "nvidia_loaded", NULL, f->nvidia_loaded);
	out_bool(o, "nvidia_peermem", NULL, f->peermem_loaded);
	out_text(o, "\n");
	out_arr_begin(o, "numa_nodes");
	for (int i = 0; i < t->nnuma; i++) {
		out_obj_begin(o, NULL);
		out_i64(o, "node", "  NUMA node %lld", t->numa[i].node);
		put_str(o, "cpulist", ": cpus %s\n", t->numa[i].cpulist);
		out_obj_end(o);
	}
	out_arr_end(o);
	out_arr_begin(o, "hugepages");
	for (int i = 0; i < f->nhuge; i++) {
		char hsz[32];

		out_obj_begin(o, NULL);
		out_u64(o, "size_bytes", NULL, (uint64_t)f->huge[i].size_kb * 1024);
		rc_format_size((uint64_t)f->huge[i].size_kb * 1024, hsz, sizeof(hsz));
		out_text(o, "  hugepages of %s", hsz);
		put_int(o, "total", ": %lld", f->huge[i].total);
		put_int(o, "free", " (%lld free)", f->huge[i].free);
		out_text(o, "\n");
		out_obj_end(o);
	}
	out_arr_end(o);
	out_obj_end(o);
}

int topo_show(struct ctx *ctx, const struct rc_topo *t, const char *source, bool fabrics)
{
	struct out *o = &ctx->out;
	int count[3] = { 0 }, nports = 0, active = 0, shown = 0, rc;

	put_host(o, t, source);
	out_text(o, "\nRDMA devices (%d)%s\n", t->ndevs, t->ndevs ? "" : ": none found");
	out_arr_begin(o, "devices");
	for (int d = 0; d < t->ndevs; d++) {
		if (ctx->dev_name && strcmp(ctx->dev_name, t->devs[d].name))
			continue;
		out_text(o, "%s", shown ? "\n" : "");
		put_dev(o, &t->devs[d]);
		shown++;
		for (int p = 0; p < t->devs[d].nports; p++) {
			nports++;
			active += !strcmp(t->devs[d].ports[p].state, "ACTIVE");
		}
	}
	out_arr_end(o);
	put_numbering(o, t);
	put_gpus(o, t);
	put_matrix(o, t);
	put_gpu_matrix(o, t);
	put_rails(o, t);
	put_gpudirect(o, t);
	if (fabrics && (rc = topo_fabrics(ctx, t)))
		return rc;
	put_findings(o, t, count);
	out_obj_begin(o, "summary");
	out_i64(o, "devices", "\nSummary: %lld RDMA device(s)", shown);
	out_i64(o, "ports", ", %lld port(s)", nports);
	out_i64(o, "ports_active", " (%lld active)", active);
	out_i64(o, "gpus", ", %lld GPU(s)", t->ngpus);
	out_i64(o, "errors", "; findings: %lld error(s)", count[RC_SEV_ERROR]);
	out_i64(o, "warnings", ", %lld warning(s)", count[RC_SEV_WARNING]);
	out_i64(o, "infos", ", %lld info\n", count[RC_SEV_INFO]);
	out_obj_end(o);
	return 0;
}
