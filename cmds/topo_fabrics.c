// SPDX-License-Identifier: MIT
/*
 * probe-topology --fabrics: what libfabric offers on this host, a provider
 * and domain a row as fi_info lists them (rc_fabric_offers), each row with
 * the NIC it runs on (a verbs or efa domain is the device, "rxe0" or
 * "rxe0-dgram"; a tcp or udp one is the device's netdev), its endpoint
 * types and capabilities, and the --fabric that opens it where rdmactl can
 * (an RDM endpoint with what rdmactl asks); then what --fabric auto picks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/dev.h>
#include <rdmactl/fabric.h>

#include "cmds.h"
#include "topo_show.h"

#define OFFERS_MAX 256

/* The device of t a domain belongs to, NULL none. */
static const char *nic_of(const struct rc_topo *t, const char *domain)
{
	for (int d = 0; d < t->ndevs; d++) {
		const struct rc_topo_dev *v = &t->devs[d];
		size_t n = strlen(v->name);

		if (!strncmp(domain, v->name, n) && (!domain[n] || domain[n] == '-'))
			return v->name;
		for (int p = 0; p < v->nports; p++)
			if (v->ports[p].netdev[0] && !strcmp(domain, v->ports[p].netdev))
				return v->name;
		if (v->parent_netdev[0] && !strcmp(domain, v->parent_netdev))
			return v->name;
	}
	return NULL;
}

static void put_offer(struct out *o, const struct rc_topo *t, const struct rc_fabric_offer *f)
{
	const char *nic = nic_of(t, f->domain);
	char eps[24] = "";

	out_obj_begin(o, NULL);
	out_str(o, "provider", "  %-16s", f->provider);
	out_str(o, "domain", " %-12s", f->domain);
	out_str(o, "fabric", NULL, f->fabric);
	if (nic)
		out_str(o, "nic", " %-8s", nic);
	else {
		out_null(o, "nic");
		out_text(o, " %-8s", "-");
	}
	out_arr_begin(o, "endpoints");
	if (f->msg)
		out_str(o, NULL, NULL, "msg");
	if (f->rdm)
		out_str(o, NULL, NULL, "rdm");
	if (f->dgram)
		out_str(o, NULL, NULL, "dgram");
	out_arr_end(o);
	snprintf(eps, sizeof(eps), "%s%s%s", f->msg ? "msg," : "", f->rdm ? "rdm," : "",
		 f->dgram ? "dgram," : "");
	if (eps[0])
		eps[strlen(eps) - 1] = '\0';
	out_text(o, " %-14s", eps);
	out_bool(o, "rma", f->rma ? " rma" : NULL, f->rma);
	out_bool(o, "atomic", f->atomic ? " atomic" : NULL, f->atomic);
	out_bool(o, "immediate_data", f->cq_data ? " imm" : NULL, f->cq_data);
	out_bool(o, "hmem", f->hmem ? " hmem" : NULL, f->hmem);
	if (f->usable)
		out_str(o, "fabric_option",
			strchr(f->fabric_option, ';') ? "   --fabric '%s'" : "   --fabric %s",
			f->fabric_option);
	else
		out_null(o, "fabric_option");
	out_text(o, "\n");
	out_obj_end(o);
}

int topo_fabrics(struct ctx *ctx, const struct rc_topo *t)
{
	struct out *o = &ctx->out;
	struct rc_fabric_offer *f = calloc(OFFERS_MAX, sizeof(*f));
	char ver[32];
	struct rc_err e;
	int n = 0, left = 0, rc, devs = rc_dev_count();

	if (!f)
		return fail(ctx, -ENOMEM, "out of memory");
	rc = rc_fabric_offers(f, OFFERS_MAX, &n, &left, &e);
	if (rc) {
		free(f);
		return fail(ctx, rc, "--fabrics: %s", ERR_TEXT(e));
	}
	out_obj_begin(o, "fabrics");
	out_str(o, "libfabric", "\nlibfabric %s", rc_fabric_version(ver, sizeof(ver)));
	out_i64(o, "offers", ": %lld provider and domain pair(s)\n", n);
	out_arr_begin(o, "list");
	for (int i = 0; i < n; i++)
		put_offer(o, t, &f[i]);
	out_arr_end(o);
	out_i64(o, "left_out", left ? "  (%lld more of libfabric's entries not shown)\n" : NULL,
		left);
	/* --fabric auto: verbs where an RDMA device exists, never a software
	 * provider by itself (fabric_pick.c) */
	if (devs > 0)
		out_str(o, "auto", "--fabric auto picks %s", "verbs");
	else
		out_null(o, "auto");
	if (devs > 0)
		out_text(o, " (%d RDMA device%s)\n", devs, devs == 1 ? "" : "s");
	else
		out_text(o, "--fabric auto picks nothing: no RDMA device (name a provider)\n");
	out_obj_end(o);
	free(f);
	return 0;
}
