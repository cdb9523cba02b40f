// SPDX-License-Identifier: MIT
/* --rails auto|gpu:N|numa:N (register, write, read, kvxfer): the devices
 * that the rail plan of probe-topology gives this process, used as
 * -d DEV1,DEV2 would be. The plan is libcore's (topo/topo_rail.c,
 * rc_topo_rails_of); here only which GPU or node this process is, and the
 * tree to read:
 * $RDMACTL_SYSFS (a captured tree or tarball, as probe-topology --sysfs
 * reads), else the host's /sys. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/topo.h>

#include "cmds.h"
#include "rails_cmds.h"

/* What the plan is asked for: a GPU, else a node (-1: every node). */
struct rails_want {
	int gpu, numa;
	bool from_env; /* auto: decided once the tree is read */
	char why[160];
};

/* A whole number >= 0 in s (all of it), or -1. */
static long whole(const char *s)
{
	char *end;
	long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	v = strtol(s, &end, 10);
	return *end || v > 1000000 ? -1 : v;
}

static int want_parse(struct ctx *ctx, const char *who, const char *plan, struct rails_want *w)
{
	*w = (struct rails_want){ .gpu = -1, .numa = -1 };
	if (!strcmp(plan, "auto")) {
		w->from_env = true;
		return 0;
	}
	if (!strncmp(plan, "gpu:", 4) && (w->gpu = (int)whole(plan + 4)) >= 0) {
		snprintf(w->why, sizeof(w->why), "GPU %d", w->gpu);
		return 0;
	}
	if (!strncmp(plan, "numa:", 5) && (w->numa = (int)whole(plan + 5)) >= 0) {
		snprintf(w->why, sizeof(w->why), "NUMA node %d", w->numa);
		return 0;
	}
	return usage_err(ctx, "%s: invalid --rails '%s': expected auto, gpu:N or numa:N", who, plan);
}

/* auto: the GPU that RDMACTL_GPU names, else LOCAL_RANK's (through
 * CUDA_VISIBLE_DEVICES when it lists GPU numbers), where the host has GPUs;
 * else the node this process runs on. */
static int want_from_env(struct ctx *ctx, const char *who, const struct rc_topo *t,
			 struct rails_want *w)
{
	const char *g = getenv("RDMACTL_GPU"), *lr = getenv("LOCAL_RANK");
	const char *vis = getenv("CUDA_VISIBLE_DEVICES");

	if (g) {
		if ((w->gpu = (int)whole(g)) < 0)
			return usage_err(ctx, "%s: --rails auto: RDMACTL_GPU='%s' is no GPU number",
					 who, g);
		snprintf(w->why, sizeof(w->why), "GPU %d (RDMACTL_GPU)", w->gpu);
		return 0;
	}
	if (lr && t->ngpus) {
		long rank = whole(lr), i = rank;
		const char *p = vis;

		if (rank < 0)
			return usage_err(ctx, "%s: --rails auto: LOCAL_RANK='%s' is no number", who,
					 lr);
		for (; p && *p && i > 0; i--)
			p = strchr(p, ',') ? strchr(p, ',') + 1 : "";
		w->gpu = (int)rank;
		if (p && *p && *p >= '0' && *p <= '9')
			w->gpu = atoi(p);
		snprintf(w->why, sizeof(w->why), "GPU %d (LOCAL_RANK %ld%s)", w->gpu, rank,
			 p && *p ? " through CUDA_VISIBLE_DEVICES" : "");
		return 0;
	}
	w->numa = rc_topo_my_node(t);
	if (w->numa >= 0)
		snprintf(w->why, sizeof(w->why), "NUMA node %d (this process's CPUs)", w->numa);
	else
		snprintf(w->why, sizeof(w->why),
			 "every NUMA node (this process's CPUs span several, "
			 "or the host tells none)");
	return 0;
}

/* Rail i's address: the first IPv4 address of its first active port's
 * netdev (else its first port's), "" when it has none. */
static void rail_addr(const struct rc_topo_dev *d, char *out, size_t cap)
{
	const struct rc_topo_port *p = d->nports ? &d->ports[0] : NULL;

	out[0] = '\0';
	for (int i = 0; i < d->nports; i++)
		if (!strcmp(d->ports[i].state, "ACTIVE")) {
			p = &d->ports[i];
			break;
		}
	for (int a = 0; p && a < p->naddrs; a++)
		if (!strchr(p->addrs[a], ':')) {
			snprintf(out, cap, "%.*s", (int)strcspn(p->addrs[a], "/"), p->addrs[a]);
			return;
		}
}

static int plan_rails(struct ctx *ctx, const char *who, const char *plan, struct rails_want *w,
		      const struct rc_topo *t, struct rails_auto *ra)
{
	int devs[RC_RAILS_MAX], n = 0, rc;
	size_t o = 0;
	struct rc_err e;

	if (w->from_env && (rc = want_from_env(ctx, who, t, w)))
		return rc;
	rc = rc_topo_rails_of(t, w->gpu, w->numa, devs, RC_RAILS_MAX, &n, &e);
	if (rc)
		return fail(ctx, rc, "%s: --rails %s: %s: %s", who, plan, w->why, ERR_TEXT(e));
	if (n > RC_RAILS_MAX)
		out_log(&ctx->out, "%s: --rails %s: the plan has %d rails, the first %d are used",
			who, plan, n, RC_RAILS_MAX);
	ra->n = n < RC_RAILS_MAX ? n : RC_RAILS_MAX;
	for (int i = 0; i < ra->n; i++) {
		snprintf(ra->dev[i], sizeof(ra->dev[i]), "%s", t->devs[devs[i]].name);
		rail_addr(&t->devs[devs[i]], ra->addr[i], sizeof(ra->addr[i]));
		o += (size_t)snprintf(ra->devs + o, sizeof(ra->devs) - o, "%s%s", i ? "," : "",
				      ra->dev[i]);
	}
	out_log(&ctx->out, "%s: --rails %s: the rail plan of %s: %s (%d rail%s)", who, plan, w->why,
		ra->devs, ra->n, ra->n == 1 ? "" : "s");
	return 0;
}

int rails_auto(struct ctx *ctx, const char *who, const char *plan, struct rails_auto *ra)
{
	const char *sysfs = getenv("RDMACTL_SYSFS");
	char root[4096], tmpdir[4096] = "";
	struct rc_topo_opts to = { 0 };
	struct rc_topo *t = NULL;
	struct rails_want w;
	struct rc_err e;
	int rc;

	memset(ra, 0, sizeof(*ra));
	if ((rc = want_parse(ctx, who, plan, &w)))
		return rc;
	if (ctx->dev_name)
		return usage_err(ctx, "%s: --rails %s picks the devices: give it or -d, not both",
				 who, plan);
	if (sysfs && *sysfs &&
	    (rc = rc_topo_open_tree(sysfs, root, sizeof(root), tmpdir, sizeof(tmpdir), &e)))
		return fail(ctx, rc, "%s: --rails %s: RDMACTL_SYSFS: %s", who, plan, ERR_TEXT(e));
	to.root = sysfs && *sysfs ? root : NULL;
	to.name = sysfs && *sysfs ? sysfs : NULL;
	rc = rc_topo_load(&to, &t, &e);
	if (rc)
		rc = fail(ctx, rc, "%s: --rails %s: %s", who, plan, ERR_TEXT(e));
	else
		rc = plan_rails(ctx, who, plan, &w, t, ra);
	rc_topo_free(t);
	if (tmpdir[0])
		rc_topo_rmtree(tmpdir);
	return rc;
}

int rails_auto_client(struct ctx *ctx, const struct cmd *c, const char *plan, struct client_args *a,
		      struct rails_auto *ra)
{
	int rc;

	if (a->bind)
		return usage_err(ctx,
				 "%s: --rails %s picks the devices: give it or --bind, not both",
				 c->name, plan);
	if ((rc = rails_auto(ctx, c->name, plan, ra)))
		return rc;
	a->devs = ra->devs;
	return 0;
}

bool rails_listen_any(const char *listen, char *port, size_t cap)
{
	const char *p = NULL;

	if (!strncmp(listen, "0.0.0.0", 7))
		p = listen + 7;
	else if (!strncmp(listen, "[::]", 4))
		p = listen + 4;
	else if (!strcmp(listen, "::"))
		p = listen + 2;
	if (!p || (*p && (*p != ':' || !p[1] || strlen(p + 1) >= cap)))
		return false;
	snprintf(port, cap, "%s", *p ? p + 1 : "");
	return true;
}

int rails_auto_listen(struct ctx *ctx, const char *who, const char *plan, const char *listen,
		      const char *port_default, struct rails_auto *ra, char *out, size_t cap)
{
	char port[8] = "";
	bool ok = !listen || rails_listen_any(listen, port, sizeof(port));
	size_t o = 0;
	int rc;

	if (ok && !port[0] && port_default)
		snprintf(port, sizeof(port), "%s", port_default);
	if (!ok || !port[0])
		return usage_err(ctx,
				 "%s: --rails %s serves each rail on its device's address: give "
				 "the port as --listen 0.0.0.0:PORT%s%s%s",
				 who, plan, port_default ? ", or leave --listen out (port " : "",
				 port_default ? port_default : "", port_default ? ")" : "");
	if ((rc = rails_auto(ctx, who, plan, ra)))
		return rc;
	for (int i = 0; i < ra->n; i++) {
		if (!ra->addr[i][0])
			return fail(ctx, -EADDRNOTAVAIL,
				    "%s: --rails %s: %s has no IPv4 address to listen on: give "
				    "--listen ADDR1,ADDR2 -d DEV1,DEV2",
				    who, plan, ra->dev[i]);
		o += (size_t)snprintf(out + o, cap - o, "%s%s:%s", i ? "," : "", ra->addr[i], port);
		if (o >= cap)
			return usage_err(ctx, "%s: --rails %s: too many rails to listen on", who,
					 plan);
	}
	out_log(&ctx->out, "%s: --rails %s: listening on %s", who, plan, out);
	return 0;
}
