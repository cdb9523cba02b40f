// SPDX-License-Identifier: MIT
/*
 * The group over libfabric, its setting up and down (group_fab.h): the
 * endpoint opened at the address the rendezvous publishes, every peer
 * addressed and proven (HELLO until its PROVE came: group_fab.c says how),
 * closed; memory registered for the peers' one-sided traffic.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ops.h>
#include <rdmactl/err_core.h>
#include <rdmactl/group_core.h>

#include "group_fab.h"
#include "rdv_int.h"

int group_fab_open(struct rc_group *g, const char *prov, struct rc_endpoint *self,
		   struct rc_err *err)
{
	int W = g->o.world, rc;
	struct gfab *f = calloc(1, sizeof(*f));
	struct rc_ofi_opts oo = { .prov = prov,
				  .node = self->host,
				  .service = self->port,
				  .timeout_ms = g->o.timeout_ms,
				  .wait_fd = true };

	if (!f)
		return rc_err_set(err, ENOMEM, "out of memory");
	g->fab = f;
	snprintf(f->prov, sizeof(f->prov), "%s", prov);
	f->nrx = 4 * W < 64 ? 64 : 4 * W;
	f->addr = calloc((size_t)W, sizeof(*f->addr));
	f->tp = calloc((size_t)W, sizeof(*f->tp));
	f->eps = calloc((size_t)W, sizeof(*f->eps));
	f->mine = calloc((size_t)W, sizeof(*f->mine));
	f->their = calloc((size_t)W, sizeof(*f->their));
	f->key = calloc((size_t)W, sizeof(*f->key));
	f->tx_ctr = calloc((size_t)W, sizeof(*f->tx_ctr));
	f->rx_ctr = calloc((size_t)W, sizeof(*f->rx_ctr));
	f->owe = calloc((size_t)W, sizeof(*f->owe));
	f->hello_at = calloc((size_t)W, sizeof(*f->hello_at));
	f->sent_at = calloc((size_t)W, sizeof(*f->sent_at));
	f->name = calloc((size_t)W, sizeof(*f->name));
	f->namelen = calloc((size_t)W, sizeof(*f->namelen));
	f->refused = calloc((size_t)W, sizeof(*f->refused));
	f->heard = calloc((size_t)W, sizeof(*f->heard));
	f->rx = aligned_alloc(64, (size_t)f->nrx * GF_SLOT);
	f->tx = aligned_alloc(64, (size_t)W * GF_SLOT);
	if (!f->addr || !f->tp || !f->eps || !f->mine || !f->their || !f->key || !f->tx_ctr ||
	    !f->rx_ctr || !f->owe || !f->hello_at || !f->sent_at || !f->name || !f->namelen ||
	    !f->refused || !f->heard || !f->rx || !f->tx)
		return rc_err_set(err, ENOMEM, "out of memory");
	for (int j = 0; j < W; j++)
		if ((rc = rc_auth_nonce(f->mine[j])))
			return rc_err_set(err, -rc, "no random nonce");
	if ((rc = rc_ofi_open(&f->o, &oo, err)))
		return rc;
	if (!strcmp(self->port, "0") || !self->port[0])
		snprintf(self->port, sizeof(self->port), "%d", rc_ofi_port(&f->o));
	if (!f->o.cq_data) /* 4 bytes at least */
		return rc_err_set(err, EOPNOTSUPP,
				  "libfabric's '%s' carries no 4-byte immediate data, which a "
				  "group's writes need",
				  f->o.prov_name);
	if ((rc = rc_ofi_reg(&f->o, f->rx, (size_t)f->nrx * GF_SLOT, RC_OFI_LOCAL, &f->rx_mr, err)) ||
	    (rc = rc_ofi_reg(&f->o, f->tx, (size_t)W * GF_SLOT, RC_OFI_LOCAL, &f->tx_mr, err)))
		return rc;
	for (int k = 0; k < f->nrx; k++)
		if ((rc = gfab_post_recv(f, k, err)))
			return rc;
	return 0;
}

/* Peer j's address from its endpoint in the rendezvous: the sockaddr of
 * host:port where the provider names endpoints so (tcp, verbs), else as
 * the provider resolves it. */
static int peer_name(struct gfab *f, int j, const struct rc_endpoint *ep, struct rc_err *err)
{
	int rc = rc_ofi_sockaddr(&f->o, ep->host, ep->port, f->name[j], &f->namelen[j], err);

	if (rc != -EAFNOSUPPORT)
		return rc;
	return rc_ofi_resolve(f->prov, ep->host, ep->port, f->name[j], &f->namelen[j], err);
}

/* Every peer named, its endpoint for the engine, its first HELLO. */
static int address_peers(struct rc_group *g, const struct rc_endpoint *all, struct rc_err *err)
{
	struct gfab *f = g->fab;
	int W = g->o.world, me = g->o.rank, rc;

	for (int j = 0; j < W; j++) {
		struct gpeer *p = &g->peers[j];

		if (j == me || !g->need[me * W + j])
			continue;
		group_peer_text(p->name, sizeof(p->name), j, &all[j]);
		if ((rc = peer_name(f, j, &all[j], err)) ||
		    (rc = rc_ofi_av_insert(&f->o, f->name[j], f->namelen[j], &f->addr[j], err)) ||
		    (rc = rc_ofi_tp_init(&f->tp[j], &f->o, f->addr[j], p->name, g->o.sq_depth - 2,
					 g->o.timeout_ms, err)))
			return rc_err_wrap(err, -rc, "%s", p->name);
		f->tp[j].other = gfab_on_other;
		f->tp[j].other_arg = g;
		f->eps[f->neps] = &f->tp[j];
		g->conn_rank[f->neps++] = j;
	}
	return 0;
}

/* A HELLO to peer j, which may not be up yet: a provider that connects on
 * the first send (ofi_rxm) holds a refused connection failed, so after a
 * refusal, or a HELLO that did not leave within GF_STUCK_MS, the peer gets
 * a fresh address-vector entry; a post that finds no room now waits for
 * the next round. 0 or -errno. */
static int hello(struct rc_group *g, int j, double now, struct rc_err *err)
{
	struct gfab *f = g->fab;
	struct gpeer *p = &g->peers[j];
	int t = f->o.timeout_ms, rc;

	if (f->refused[j] || (p->fab_tx && now - f->sent_at[j] > GF_STUCK_MS / 1e3)) {
		rc_ofi_av_remove(&f->o, f->addr[j]);
		if ((rc = rc_ofi_av_insert(&f->o, f->name[j], f->namelen[j], &f->addr[j], err)))
			return rc;
		f->tp[j].peer = f->addr[j];
		f->refused[j] = false;
		p->fab_tx = false;
	}
	/* the higher rank of a pair says HELLO first, the lower once it heard
	 * it: two ranks that connect to each other at once (ofi_rxm) may both
	 * fail */
	if ((g->o.rank < j && !f->heard[j]) || p->fab_tx || f->owe[j] ||
	    now - f->hello_at[j] < GF_HELLO_MS / 1e3)
		return 0;
	f->hello_at[j] = now;
	f->o.timeout_ms = 0; /* one try */
	rc = gfab_send(g, j, GF_HELLO, NULL, 0, err);
	f->o.timeout_ms = t;
	return rc == -ETIMEDOUT ? 0 : rc;
}

/* Until every peer proved itself: HELLOs again to those that did not. */
static int prove_all(struct rc_group *g, double deadline, struct rc_err *err)
{
	struct gfab *f = g->fab;
	int rc;

	for (;;) {
		int waiting = 0;
		double now = rc_now();

		for (int k = 0; k < f->neps; k++) {
			int j = g->conn_rank[k];
			struct gpeer *p = &g->peers[j];

			if (p->fab_up)
				continue;
			waiting++;
			if ((rc = hello(g, j, now, err)))
				return rc;
		}
		if (!waiting)
			return 0;
		if (now >= deadline) {
			bool *have = calloc((size_t)g->o.world, sizeof(bool));
			char missing[256] = "?";

			if (have) {
				for (int j = 0; j < g->o.world; j++)
					have[j] = !g->need[g->o.rank * g->o.world + j] ||
						  g->peers[j].fab_up;
				ranks_missing(have, g->o.world, missing, sizeof(missing));
				free(have);
			}
			/* messages that failed their checks hint at a stale or foreign sender */
			return rc_err_set(err, ETIMEDOUT,
					  "rank %s never answered over libfabric's '%s' within %d ms "
					  "(is it running, with the same token?; %llu messages failed "
					  "their checks)",
					  missing, f->o.prov_name, g->o.timeout_ms,
					  (unsigned long long)f->dropped);
		}
		if ((rc = group_fab_progress(g, 20, err)))
			return rc;
	}
}

int group_fab_connect(struct rc_group *g, const struct rc_endpoint *all, const uint8_t *need,
		      struct rc_err *err)
{
	int W = g->o.world, rc;
	double t0 = rc_now();

	if (g->o.partial || g->o.keep_going)
		return rc_err_set(err, EINVAL,
				  "over libfabric a group has every pair it plans, or fails");
	if ((rc = group_take_plan(g, need, err)))
		return rc;
	if (!(g->fab->all = malloc((size_t)W * sizeof(*all))))
		return rc_err_set(err, ENOMEM, "out of memory");
	memcpy(g->fab->all, all, (size_t)W * sizeof(*all));
	g->fab->job = (struct gjob){ .job = g->job, .all = g->fab->all };
	if ((rc = address_peers(g, all, err)))
		return rc;
	if ((rc = prove_all(g, t0 + g->o.timeout_ms / 1000.0, err)))
		return rc;
	g->nconns = g->fab->neps;
	g->connect_s = rc_now() - t0;
	return 0;
}

void group_fab_close(struct rc_group *g)
{
	struct gfab *f = g->fab;

	if (!f)
		return;
	for (int j = 0; f->tp && j < g->o.world; j++)
		if (f->tp[j].ring) {
			rc_ofi_tp_quiesce(&f->tp[j], 500);
			rc_ofi_tp_fini(&f->tp[j]);
		}
	rc_ofi_dereg(&f->rx_mr); /* as the region server closes: registrations first */
	rc_ofi_dereg(&f->tx_mr);
	if (f->o.ep)
		rc_ofi_close(&f->o); /* before the buffers its receives are posted in are freed */
	free(f->all);
	free(f->addr);
	free(f->tp);
	free(f->eps);
	free(f->mine);
	free(f->their);
	free(f->key);
	free(f->tx_ctr);
	free(f->rx_ctr);
	free(f->owe);
	free(f->hello_at);
	free(f->sent_at);
	free(f->name);
	free(f->namelen);
	free(f->refused);
	free(f->heard);
	free(f->rx);
	free(f->tx);
	free(f);
	g->fab = NULL;
}

const char *group_fab_domain(const struct rc_group *g)
{
	return g->fab->o.domain_name;
}

int rc_group_reg(struct rc_group *g, void *buf, size_t len, bool remote_write, uint32_t *lkey,
		 uint64_t *rkey, uint64_t *raddr0, void **h, struct rc_err *err)
{
	struct gfab *f = g->fab;
	struct rc_ofi_mr *mr;
	uint32_t key = 0;
	int rc;

	*h = NULL;
	if (!f)
		return rc_err_set(err, EINVAL, "a group over verbs registers on its device");
	if (!(mr = calloc(1, sizeof(*mr))))
		return rc_err_set(err, ENOMEM, "out of memory");
	if ((rc = rc_ofi_reg(&f->o, buf, len,
			     RC_OFI_REMOTE_READ | (remote_write ? RC_OFI_REMOTE_WRITE : 0), mr,
			     err))) {
		free(mr);
		return rc;
	}
	/* every peer's endpoint names it by the same number: each is given
	 * the registrations in the same order */
	for (int k = 0; k < f->neps; k++) {
		uint32_t n = rc_ofi_tp_key(f->eps[k], mr);

		if (!n || (key && n != key)) {
			rc_group_dereg(g, mr);
			return rc_err_set(err, ENOSPC, "%d registrations a group at most",
					  RC_OFI_TP_MRS);
		}
		key = n;
	}
	*lkey = key;
	*rkey = mr->key;
	*raddr0 = mr->base;
	*h = mr;
	return 0;
}

void rc_group_dereg(struct rc_group *g, void *h)
{
	struct gfab *f = g->fab;
	struct rc_ofi_mr *mr = h;

	if (!mr)
		return;
	for (int k = 0; f && k < f->neps; k++) {
		struct rc_ofi_tp *t = f->eps[k];

		for (int i = 0; i < RC_OFI_TP_MRS; i++)
			if (t->mrs[i] == mr)
				t->mrs[i] = NULL;
	}
	rc_ofi_dereg(mr);
	free(mr);
}

const char *rc_group_transport(const struct rc_group *g, const char **provider, const char **domain)
{
	if (provider)
		*provider = g->fab ? g->fab->o.prov_name : NULL;
	if (domain)
		*domain = g->fab ? g->fab->o.domain_name : NULL;
	return g->fab ? "ofi" : "verbs";
}

uint64_t group_fab_ring_bytes(const struct rc_group *g)
{
	return (uint64_t)(g->fab->nrx + g->o.world) * GF_SLOT;
}
