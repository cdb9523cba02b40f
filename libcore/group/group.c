// SPDX-License-Identifier: MIT
/*
 * Group connect: every rank listens, accepts the peers below it on a thread
 * of its own and connects to the peers above it, so that no rank waits on a
 * rank that is itself waiting. Ranks that are not up yet are retried until
 * the timeout, whose error names them.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdmactl/ops.h>
#include <rdmactl/parse_core.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/group_core.h>

#include "group_int.h"
#include "rdv_int.h"

#define RETRY_MS 200
#define CONNECT_WIDTH (GROUP_CONNECT_AT_ONCE - 1) /* threads besides the calling one */

int group_post_recvs(struct rc_group *g, int j, struct rc_err *err)
{
	return rc_msgch_start(&g->ch, g->peers[j].slot, g->peers[j].c, err);
}

int group_alloc(const struct rc_group_opts *o, struct rc_group **out, struct rc_err *err)
{
	struct rc_group *g = calloc(1, sizeof(*g));

	*out = NULL;
	if (!g)
		return rc_err_set(err, ENOMEM, "out of memory");
	g->o = *o;
	g->o.token = NULL;
	pthread_mutex_init(&g->mu, NULL);
	*out = g;
	if (o->token && !rc_token_valid(o->token))
		return rc_err_set(err, EINVAL,
				  "a group token is 1 to %d printable characters without spaces",
				  RC_TOKEN_MAX);
	if (o->token)
		memcpy(g->token, o->token, strlen(o->token));
	g->o.recv_depth = group_recv_depth(g->o.recv_depth);
	if (g->o.sq_depth <= 0)
		g->o.sq_depth = GROUP_SQ_DEPTH;
	if (g->o.timeout_ms <= 0)
		g->o.timeout_ms = 10000;
	g->barrier_s = -1;
	if (o->world < 1 || o->world > RC_GROUP_MAX || o->rank < 0 || o->rank >= o->world)
		return rc_err_set(err, EINVAL, "rank %d of %d is not a valid group member", o->rank,
				  o->world);
	g->need = calloc((size_t)o->world * (size_t)o->world, 1);
	g->peers = calloc((size_t)o->world, sizeof(*g->peers));
	g->conns = calloc((size_t)o->world, sizeof(*g->conns));
	g->conn_rank = calloc((size_t)o->world, sizeof(*g->conn_rank));
	g->parent = calloc((size_t)o->world, sizeof(*g->parent));
	if (!g->need || !g->peers || !g->conns || !g->conn_rank || !g->parent)
		return rc_err_set(err, ENOMEM, "out of memory");
	for (int j = 0; j < o->world; j++)
		g->peers[j].slot = -1;
	return 0;
}

int rc_group_listen(const struct rc_group_opts *o, struct rc_endpoint *ep, struct rc_group **out,
		    struct rc_err *err)
{
	struct rc_group *g;
	int rc = group_alloc(o, &g, err);

	if (!rc)
		rc = rc_listen(ep->host, ep->port, o->dev_name, &g->l, err);
	if (rc) {
		rc_group_close(g);
		*out = NULL;
		return rc;
	}
	snprintf(ep->port, sizeof(ep->port), "%u", g->l->port);
	g->self = *ep;
	*out = g;
	return 0;
}

/* The CQ peer j's connection shares (NULL: one of its own). */
static struct rc_shared *peer_cq(const struct rc_group *g, int j)
{
	return g->nsh && g->peers[j].slot >= 0 ? g->sh[g->peers[j].slot % g->nsh] : NULL;
}

#define WHY_BUSY "rdmactl: that rank has tries unproven; try again"

/* A connect request: from a rank below us that we expect and that has not
 * proved itself yet, a candidate for its place (group_prove.c). */
static void on_request(struct rc_group *g, struct rc_cm_event *ev)
{
	bool *proven = calloc((size_t)g->o.world, sizeof(bool));
	struct ghello h;
	const char *why = NULL;
	bool full = false;

	pthread_mutex_lock(&g->mu);
	for (int j = 0; proven && j < g->o.rank; j++)
		proven[j] = g->peers[j].c != NULL;
	pthread_mutex_unlock(&g->mu);
	why = proven ? group_hello_check(ev->param.private_data, ev->param.private_data_len,
					 g->o.rank, g->o.world, g->token, g->need, proven, &h)
		     : "rdmactl: out of memory";
	free(proven);
	if (!why) {
		pthread_mutex_lock(&g->mu);
		full = !group_cand_room(g, (int)h.rank);
		pthread_mutex_unlock(&g->mu);
		why = full ? WHY_BUSY : group_cand_accept(g, ev, &h, peer_cq(g, (int)h.rank));
	}
	if (why)
		rc_cm_refuse(ev, why);
}

/* A CM event of an accepted connection: a candidate's, or a peer's. */
static void on_conn_event(struct rc_group *g, const struct rc_cm_event *ev)
{
	struct gcand *k;
	bool gone = ev->kind == RC_CM_GONE || ev->kind == RC_CM_DEVICE_GONE;

	pthread_mutex_lock(&g->mu);
	if ((k = group_cand_of(g, ev->conn))) {
		k->up |= ev->kind == RC_CM_ESTABLISHED;
		k->gone |= gone;
	} else {
		for (int j = 0; gone && j < g->o.world; j++)
			if (g->peers[j].c && g->peers[j].c == ev->conn)
				g->peers[j].dead = true;
	}
	pthread_mutex_unlock(&g->mu);
}

struct accept_arg {
	struct rc_group *g;
	double deadline;
};

/* The accepting thread's end at the deadline: the ranks that never proved
 * themselves named (and why the last unproven connection went). */
static void accept_timeout(struct rc_group *g)
{
	char missing[256];
	bool *have = calloc((size_t)g->o.world, sizeof(bool));

	pthread_mutex_lock(&g->mu);
	for (int j = 0; have && j < g->o.world; j++)
		have[j] = j >= g->o.rank || !g->need[j * g->o.world + g->o.rank] || g->peers[j].c;
	if (have)
		ranks_missing(have, g->o.world, missing, sizeof(missing));
	else
		snprintf(missing, sizeof(missing), "(out of memory)");
	free(have);
	if (!g->o.partial)
		g->accept_rc =
			rc_err_set(&g->accept_err, ETIMEDOUT,
				   "rank %s never connected to rank %d within %d ms%s%.*s%s",
				   missing, g->o.rank, g->o.timeout_ms, g->unproven[0] ? " (" : "",
				   400, g->unproven, g->unproven[0] ? ")" : "");
	pthread_mutex_unlock(&g->mu);
}

static void *accept_main(void *arg)
{
	struct accept_arg *a = arg;
	struct rc_group *g = a->g;

	for (;;) {
		struct rc_cm_event ev;
		int done;

		pthread_mutex_lock(&g->mu);
		done = g->accepted >= g->expect_accepts || g->stop_accept;
		pthread_mutex_unlock(&g->mu);
		if (!done && rc_now() > a->deadline) {
			accept_timeout(g); /* partial: rc_group_connect names them */
			done = 1;
		}
		if (done)
			break;
		if (rc_listener_next(g->l, 100, &ev))
			continue;
		if (ev.kind == RC_CM_REQUEST)
			on_request(g, &ev);
		else if (ev.conn)
			on_conn_event(g, &ev);
	}
	pthread_mutex_lock(&g->mu);
	g->accept_done = true;
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

/* The connecting side's check of rank j's answer on c (our request's nonce
 * in h), then its own proof as the connection's first message. 0, or
 * -EKEYREJECTED naming the rank. */
static int prove_to(struct rc_group *g, int j, const struct rc_endpoint *ep, struct rc_conn *c,
		    const struct ghello *h, struct rc_err *err)
{
	struct gjob job = { g->job, g->all };
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	const unsigned char *ad;
	struct rc_auth a;
	const char *why;
	struct gmsg *m;
	size_t adl;
	int rc;

	if (ibv_query_qp(c->qp, &qa, IBV_QP_DEST_QPN, &qi))
		return rc_err_set(err, EIO,
				  "rank %d (%s:%s): cannot read the connection's queue pair", j,
				  ep->host, ep->port);
	group_auth(&a, &job, (uint32_t)g->o.rank, (uint32_t)j, (uint32_t)g->o.world, c->qp->qp_num,
		   qa.dest_qp_num);
	memcpy(a.cn, h->cn, RC_AUTH_NONCE);
	ad = rc_conn_accept_data(c, &adl);
	if ((why = group_accept_check(ad, adl, g->token, &a))) {
		g->peers[j].link = RC_LINK_REFUSED;
		return rc_err_set(err, EKEYREJECTED, "rank %d (%s:%s) %s", j, ep->host, ep->port,
				  why);
	}
	if ((rc = group_post_recvs(g, j, err)))
		return rc;
	m = rc_msgch_send_buf(&g->ch, g->peers[j].slot);
	group_proof_msg(m, (uint32_t)g->o.rank, g->token, &a);
	if ((rc = rc_msgch_send(&g->ch, g->peers[j].slot,
				(uint32_t)(offsetof(struct gmsg, data) + m->len), err)))
		return rc;
	g->peers[j].sends_out++;
	return 0;
}

static int connect_one(struct rc_group *g, int j, const struct rc_endpoint *ep, double deadline,
		       struct rc_err *err)
{
	struct ghello h = { .magic = htole32(GHELLO_MAGIC),
			    .rank = htole32((uint32_t)g->o.rank),
			    .world = htole32((uint32_t)g->o.world),
			    .flags = htole32(g->token[0] ? GHELLO_TOKEN : 0) };
	struct rc_conn_opts co = { 0 };
	struct rc_err last = { 0 };

	co.sq_depth = g->o.sq_depth;
	co.rq_depth = g->o.recv_depth;
	co.busy_poll = g->o.busy_poll;
	co.private_data = &h;
	co.private_len = sizeof(h);
	co.bind_addr = g->self.host;
	co.dev_name = g->o.dev_name;
	co.pd = g->l->pd;
	co.shared = peer_cq(g, j);
	for (;;) {
		double left = deadline - rc_now();
		struct rc_conn *c;
		int rc;

		if (left <= 0)
			break;
		co.timeout_ms = (int)(left * 1000) < g->o.timeout_ms ? (int)(left * 1000) + 1
								     : g->o.timeout_ms;
		/* A fresh nonce each try: the peer's answer is bound to it. */
		if ((rc = rc_auth_nonce(h.cn)))
			return rc_err_set(err, -rc,
					  "no random bytes for the group's connect request: %s",
					  strerror(-rc));
		rc = rc_connect(ep->host, ep->port, &co, &c, &last);
		if (!rc) {
			c->timeout_ms = g->o.timeout_ms;
			c->user = &g->peers[j];
			pthread_mutex_lock(&g->mu);
			g->peers[j].c = c;
			group_name_peer(g, j, ep);
			pthread_mutex_unlock(&g->mu);
			if ((rc = prove_to(g, j, ep, c, &h, err))) {
				pthread_mutex_lock(&g->mu);
				g->peers[j].c = NULL;
				pthread_mutex_unlock(&g->mu);
				rc_conn_close(c);
				return rc;
			}
			/* Its CM events join the group's one channel: no descriptor
			 * to poll per peer. */
			rc_conn_share_events(c, g->ech);
			return 0;
		}
		if (rc == -EINVAL) {
			g->peers[j].link = rc_link_classify(EINVAL, last.msg);
			return rc_err_set(err, EINVAL, "rank %d (%s:%s): %s", j, ep->host, ep->port,
					  last.msg);
		}
		/* The peer read our request and said no for good (the token,
		 * the world): say it now, not at the deadline, and while the
		 * peer still listens to say it. */
		if ((rc == -ECONNREFUSED || rc == -EKEYREJECTED) && group_refusal_final(last.msg)) {
			g->peers[j].link = RC_LINK_REFUSED;
			return rc_err_set(err, -rc, "rank %d (%s:%s): %s", j, ep->host, ep->port,
					  last.msg);
		}
		usleep(RETRY_MS * 1000);
	}
	g->peers[j].link = last.msg[0] ? rc_link_classify(last.code, last.msg) : RC_LINK_TIMEOUT;
	return rc_err_set(err, ETIMEDOUT, "rank %d (%s:%s) never answered within %d ms: %s", j,
			  ep->host, ep->port, g->o.timeout_ms,
			  last.msg[0] ? last.msg : "no try finished");
}

/* The connects to the peers above this rank, GROUP_CONNECT_AT_ONCE of them in flight
 * at once: each costs round trips (address, route, the handshake) rather
 * than work, so a rank of hundreds of peers does not wait for them one by
 * one. All within the one deadline; the first failure stops the rest. */
struct connect_arg {
	struct rc_group *g;
	const struct rc_endpoint *all;
	double deadline;
	int next; /* the next peer to try (under g->mu) */
	int rc;   /* the first failure */
	struct rc_err err;
};

static void *connect_main(void *arg)
{
	struct connect_arg *a = arg;
	struct rc_group *g = a->g;
	int W = g->o.world, me = g->o.rank;

	for (;;) {
		struct rc_err e;
		int j, rc;

		pthread_mutex_lock(&g->mu);
		while (a->next < W && !g->need[(size_t)me * (size_t)W + (size_t)a->next])
			a->next++;
		j = a->rc ? W : a->next++;
		pthread_mutex_unlock(&g->mu);
		if (j >= W)
			return NULL;
		rc = connect_one(g, j, &a->all[j], a->deadline, &e);
		if (rc && g->o.partial) {
			pthread_mutex_lock(&g->mu);
			snprintf(g->peers[j].why, sizeof(g->peers[j].why), "%s", e.msg);
			pthread_mutex_unlock(&g->mu);
			continue;
		}
		if (rc) {
			pthread_mutex_lock(&g->mu);
			if (!a->rc) {
				a->rc = rc;
				a->err = e;
			}
			pthread_mutex_unlock(&g->mu);
			return NULL;
		}
	}
}

static int connect_above(struct rc_group *g, const struct rc_endpoint *all, double deadline,
			 struct rc_err *err)
{
	struct connect_arg a = { .g = g, .all = all, .deadline = deadline, .next = g->o.rank + 1 };
	pthread_t th[CONNECT_WIDTH];
	int n = 0, above = 0, W = g->o.world, me = g->o.rank;

	for (int j = me + 1; j < W; j++)
		above += g->need[(size_t)me * (size_t)W + (size_t)j] != 0;
	while (n < CONNECT_WIDTH && n < above - 1 && !pthread_create(&th[n], NULL, connect_main, &a))
		n++;
	connect_main(&a); /* this thread is one of them */
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (a.rc)
		return rc_err_set(err, a.err.code, "%s", a.err.msg);
	return 0;
}

/* partial: a planned peer not connected by the deadline gets its reason
 * (the connecting side has it already), and is left out. */
static bool link_up(struct rc_group *g, int j)
{
	struct gpeer *p = &g->peers[j];

	if (p->c && p->c->established && !p->link)
		return true;
	if (!p->link) {
		p->link = RC_LINK_TIMEOUT;
		snprintf(p->why, sizeof(p->why), "rank %d never connected to rank %d within %d ms",
			 j, g->o.rank, g->o.timeout_ms);
	}
	p->dead = true;
	return false;
}

int rc_group_connect(struct rc_group *g, const struct rc_endpoint *all, const uint8_t *need,
		     struct rc_err *err)
{
	int W = g->o.world, me = g->o.rank, rc = 0;
	double t0 = rc_now(), deadline = t0 + g->o.timeout_ms / 1000.0;
	/* partial: the accepting side waits a quarter of the timeout longer, so
	 * that a connect its peer saw established just before the deadline is
	 * not taken for a failed pair on this side alone */
	struct accept_arg a = { g, deadline + (g->o.partial ? g->o.timeout_ms / 4000.0 : 0) };
	pthread_t th;

	if ((rc = group_take_plan(g, need, err)) || (rc = group_rings(g, err)))
		return rc;
	g->ech = rc_cm_channel(); /* NULL: each connection keeps its own */
	g->expect_accepts = 0;
	for (int j = 0; j < me; j++)
		g->expect_accepts += need[j * W + me] ? 1 : 0;
	g->all = all;
	if (pthread_create(&th, NULL, accept_main, &a))
		return rc_err_set(err, errno, "cannot start the accepting thread");
	rc = connect_above(g, all, deadline, err);
	/* our connects done: the proofs of those that connected to us */
	if (!rc)
		rc = group_prove(g, a.deadline, err);
	pthread_mutex_lock(&g->mu);
	g->stop_accept = true;
	pthread_mutex_unlock(&g->mu);
	pthread_join(th, NULL);
	group_cands_close(g);
	g->all = NULL;
	/* the proofs' deadline, met before the accepting thread's own */
	if (!rc && !g->accept_rc && g->accepted < g->expect_accepts)
		accept_timeout(g);
	if (!rc && g->accept_rc)
		rc = rc_err_set(err, g->accept_err.code, "%s", g->accept_err.msg);
	if (rc)
		return rc;
	for (int j = 0; j < W; j++) {
		if (j == me || !need[me * W + j])
			continue;
		if (g->o.partial && !link_up(g, j))
			continue;
		g->conns[g->nconns] = g->peers[j].c;
		g->conn_rank[g->nconns++] = j;
	}
	g->connect_s = rc_now() - t0;
	return g->o.partial ? group_agree_links(g, err) : 0;
}

int rc_group_close(struct rc_group *g)
{
	int rc = 0, r;

	if (!g)
		return 0;
	/* What was posted leaves before the connections go (bounded). */
	if (g->nconns) {
		int t = g->o.timeout_ms;

		g->o.timeout_ms = t < 2000 ? t : 2000;
		rc_group_flush(g, NULL);
		group_fin(g, g->o.timeout_ms);
		g->o.timeout_ms = t;
	}
	group_fab_close(g);
	for (int j = 0; g->peers && j < g->o.world; j++) {
		if (g->peers[j].c && (r = rc_conn_close(g->peers[j].c)) && !rc)
			rc = r;
		free(g->peers[j].box);
	}
	for (int i = 0; i < g->nsh; i++) /* after its connections */
		if ((r = rc_shared_destroy(g->sh[i])) && !rc)
			rc = r;
	if (g->ech)
		rdma_destroy_event_channel(g->ech);
	if ((r = rc_msgch_fini(&g->ch)) && !rc)
		rc = r;
	if (g->l && (r = rc_listener_close(g->l)) && !rc)
		rc = r;
	if (g->rdv && (r = rc_rdv_close(g->rdv)) && !rc)
		rc = r;
	free(g->need);
	group_cands_close(g);
	free(g->peers);
	free(g->conns);
	free(g->conn_rank);
	free(g->parent);
	pthread_mutex_destroy(&g->mu);
	free(g);
	return rc;
}

struct ibv_pd *rc_group_pd(const struct rc_group *g)
{
	return g->l ? g->l->pd : NULL;
}

struct rc_conn *rc_group_conn(const struct rc_group *g, int peer)
{
	return peer >= 0 && peer < g->o.world ? g->peers[peer].c : NULL;
}

const char *rc_group_dev(const struct rc_group *g)
{
	return g->fab ? group_fab_domain(g) : g->l->dev_name;
}

const struct rc_endpoint *rc_group_self(const struct rc_group *g)
{
	return &g->self;
}

int rc_group_port(const struct rc_group *g)
{
	return g->l ? g->l->port_num : 1;
}

void rc_group_stats(const struct rc_group *g, struct rc_group_stats *out)
{
	*out = (struct rc_group_stats){ .rendezvous_s = g->rdv_s,
					.connect_s = g->connect_s,
					.first_barrier_s = g->barrier_s,
					.qps = g->nconns,
					.cqs = g->fab   ? 1
					       : g->nsh ? g->nsh
							: g->nconns,
					.ring_bytes = g->fab     ? group_fab_ring_bytes(g)
						      : g->ch.mr ? g->ch.len
								 : 0,
					.tree_depth = g->depth };
}

int rc_group_rank(const struct rc_group *g)
{
	return g->o.rank;
}

int rc_group_world(const struct rc_group *g)
{
	return g->o.world;
}
