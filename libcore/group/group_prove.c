// SPDX-License-Identifier: MIT
/*
 * The accepting rank's side of the group's connect proof (group_int.h): a
 * connect request that names a rank this rank expects is accepted as a
 * candidate for that rank, with this rank's answer in the accept; the
 * candidate's first message must be its proof. Several candidates may claim
 * one rank (up to GHELLO_CANDIDATES): the first proven takes the rank's
 * place and the others go, so a connection that never proves (a copy of
 * another's request, a peer without the token, a try its connector gave up)
 * holds no one's place: when GHELLO_CANDIDATES claim one rank, the oldest
 * that was given GHELLO_PROVE_MS goes to make room (a timer on each would
 * drop honest ones on a loaded host). Until it proved, a
 * candidate's queue pair allows no remote access, and nothing of the group
 * is sent to it.
 *
 * The accepting thread adds candidates (under g->mu, before their accept
 * goes out, so that no completion of theirs comes before they are known);
 * the calling thread, once its own connects are done, reaps the completions
 * of every connection (under g->mu) and takes the proofs (group_prove).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdmactl/ops.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/group_core.h>

#include "group_int.h"

#define DROP_DRAIN_S 0.2 /* a dropped candidate's completions reaped this long */

int group_cands(const struct rc_group *g, int rank)
{
	int n = 0;

	for (int i = 0; i < g->ncand; i++)
		n += g->cand[i]->rank == rank && !g->cand[i]->dropped;
	return n;
}

struct gcand *group_cand_of(const struct rc_group *g, const struct rc_conn *c)
{
	for (int i = 0; c && i < g->ncand; i++)
		if (g->cand[i]->c == c)
			return g->cand[i];
	return NULL;
}

static int cand_add(struct rc_group *g, struct gcand *k)
{
	if (g->ncand == g->cand_cap) {
		int cap = g->cand_cap ? 2 * g->cand_cap : 8;
		struct gcand **n = realloc(g->cand, (size_t)cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		g->cand = n;
		g->cand_cap = cap;
	}
	g->cand[g->ncand++] = k;
	return 0;
}

static void cand_remove(struct rc_group *g, struct gcand *k)
{
	for (int i = 0; i < g->ncand; i++)
		if (g->cand[i] == k) {
			g->cand[i] = g->cand[--g->ncand];
			return;
		}
}

/* Without shared receive queues the rank's receive ring is posted to one
 * candidate at a time: to the next live one of its rank, when its holder
 * goes (the others' first messages wait for a receive meanwhile). */
static void pass_ring(struct rc_group *g, int rank)
{
	for (int i = 0; !g->nsh && i < g->ncand; i++) {
		struct gcand *k = g->cand[i];

		if (k->rank == rank && k->holder)
			return;
	}
	for (int i = 0; !g->nsh && i < g->ncand; i++) {
		struct gcand *k = g->cand[i];

		if (k->rank == rank && !k->dropped && k->c &&
		    !rc_msgch_start(&g->ch, g->peers[rank].slot, k->c, NULL)) {
			k->holder = true;
			return;
		}
	}
}

/* rc_accept's on_qp: the candidate's answer, bound to both queue pairs,
 * and its place among the candidates, before the accept goes out. */
static int cand_qp(struct rc_conn *c, void *arg)
{
	struct gcand *k = arg;
	struct rc_group *g = k->g;
	struct gjob job = { g->job, g->all };
	int rc;

	k->c = c;
	group_auth(&k->a, &job, (uint32_t)k->rank, (uint32_t)g->o.rank, (uint32_t)g->o.world,
		   k->qp_from, c->qp->qp_num);
	memcpy(k->a.cn, k->cn, RC_AUTH_NONCE);
	if ((rc = rc_auth_nonce(k->a.sn)))
		return rc;
	group_accept_fill(&k->ga, g->token, &k->a);
	pthread_mutex_lock(&g->mu);
	rc = cand_add(g, k);
	if (!rc)
		pass_ring(g, k->rank);
	pthread_mutex_unlock(&g->mu);
	return rc;
}

static void cand_drop(struct rc_group *g, struct gcand *k, const char *why);

const char *group_cand_accept(struct rc_group *g, struct rc_cm_event *ev, const struct ghello *h,
			      struct rc_shared *cq)
{
	struct gcand *k = calloc(1, sizeof(*k));
	struct rc_conn_opts co = { 0 };
	struct rc_conn *c = NULL;
	struct rc_err e;

	if (!k)
		return "rdmactl: out of memory";
	k->g = g;
	k->rank = (int)h->rank;
	k->since = rc_now();
	k->qp_from = ev->param.qp_num;
	memcpy(k->cn, h->cn, RC_AUTH_NONCE);
	co.sq_depth = g->o.sq_depth;
	co.rq_depth = g->o.recv_depth;
	co.timeout_ms = g->o.timeout_ms;
	co.busy_poll = g->o.busy_poll;
	co.shared = cq;
	co.on_qp = cand_qp;
	co.hold_access = true; /* until it proves itself (cand_promote) */
	co.on_qp_arg = k;
	co.private_data = &k->ga;
	co.private_len = sizeof(k->ga);
	if (!rc_cm_accept(g->l, ev, &co, &c, &e))
		return NULL; /* a candidate, its remote access withheld till it proves itself */
	/* on_qp may have made it a candidate: its connection is closed */
	pthread_mutex_lock(&g->mu);
	cand_remove(g, k);
	if (k->holder)
		pass_ring(g, k->rank);
	pthread_mutex_unlock(&g->mu);
	free(k);
	return "rdmactl: accept failed";
}

/* Candidate k goes (why: what it failed, NULL: another took its rank): no
 * remote access, disconnected, its completions still reaped a while so
 * that the receives it took are posted again; closed later (cand_expire). */
static void cand_drop(struct rc_group *g, struct gcand *k, const char *why)
{
	if (k->dropped)
		return;
	k->dropped = true;
	k->since = rc_now();
	if (why)
		snprintf(g->unproven, sizeof(g->unproven),
			 "a connection from %s claiming rank %d %s", k->c->peer, k->rank, why);
	rdma_disconnect(k->c->id);
	if (k->holder) {
		k->holder = false;
		pass_ring(g, k->rank);
	}
}

bool group_cand_room(struct rc_group *g, int rank)
{
	struct gcand *oldest = NULL;
	double now = rc_now();

	if (g->ncand >= GROUP_CAND_MAX(g))
		return false;
	if (group_cands(g, rank) < GHELLO_CANDIDATES)
		return true;
	/* the rank's places are full: the oldest, unproven past its time, goes */
	for (int i = 0; i < g->ncand; i++) {
		struct gcand *k = g->cand[i];

		if (k->rank == rank && !k->dropped && (!oldest || k->since < oldest->since))
			oldest = k;
	}
	if (!oldest || now - oldest->since < GHELLO_PROVE_MS / 1000.0)
		return false;
	cand_drop(g, oldest, "did not prove the group token in time");
	return true;
}

/* Candidate k proved itself: it takes its rank's place, and the others of
 * that rank go. */
static int cand_promote(struct rc_group *g, struct gcand *k, struct rc_err *err)
{
	struct gpeer *p = &g->peers[k->rank];
	int rc;

	if ((rc = rc_conn_release_access(k->c)))
		return rc_err_set(err, EPERM, "cannot open the connection of rank %d", k->rank);
	if (g->nsh && (rc = rc_msgch_start(&g->ch, p->slot, k->c, err)))
		return rc;
	cand_remove(g, k);
	p->c = k->c;
	p->accepted = true;
	p->dead = false;
	k->c->established = true; /* its message came: whatever the CM event says later */
	k->c->user = p;
	group_name_peer(g, k->rank, &g->all[k->rank]);
	g->accepted++;
	for (int i = 0; i < g->ncand; i++)
		if (g->cand[i]->rank == k->rank)
			cand_drop(g, g->cand[i], NULL);
	free(k);
	return 0;
}

/* One completion of candidate k (wc), in order: its first message must be
 * its proof. Returns its rank when it proved itself (what follows is the
 * peer's), -1 while it is a candidate still (dropped or not), or -errno. */
static int cand_wc(struct rc_group *g, struct gcand *k, const struct ibv_wc *wc, struct rc_err *err)
{
	int slot = g->peers[k->rank].slot, kind, rank = k->rank;
	struct rc_msgch_rx rx;
	const char *why = "sent what is not a proof first";
	struct rc_err e;

	if (wc->status != IBV_WC_SUCCESS) {
		cand_drop(g, k, k->dropped ? NULL : "failed before it proved the group token");
		return -1;
	}
	if (rc_wrid_op(wc->wr_id) != RC_OP_RECV) {
		cand_drop(g, k, why);
		return -1;
	}
	kind = rc_msgch_wc(&g->ch, slot, wc, &rx, &e);
	if (kind == -EBADMSG) /* the slot is ours again */
		kind = RC_MSGCH_IMM;
	if (kind < 0) {
		cand_drop(g, k, why);
		return -1;
	}
	if (kind == RC_MSGCH_MSG && !k->dropped)
		why = group_proof_check(rx.data, rx.len, (uint32_t)k->rank, g->token, &k->a);
	if (rc_msgch_repost(&g->ch, rx.slot, err))
		return -EIO;
	if (k->dropped)
		return -1;
	if (why) {
		cand_drop(g, k, why);
		return -1;
	}
	kind = cand_promote(g, k, err);
	return kind ? kind : rank;
}

/* The connections to reap now: every peer's, every candidate's (owner:
 * the peer's rank, or -1 - the candidate's index). */
static int reap_list(struct rc_group *g, struct rc_conn **conns, int *owner)
{
	int n = 0;

	for (int j = 0; j < g->o.world; j++)
		if (j != g->o.rank && g->peers[j].c) {
			conns[n] = g->peers[j].c;
			owner[n++] = j;
		}
	for (int i = 0; i < g->ncand; i++) {
		conns[n] = g->cand[i]->c;
		owner[n++] = -1 - i;
	}
	return n;
}

/* Candidates gone (dropped), or dropped a while ago: out of the
 * table, into out (closed by the caller, outside the lock). */
static int cand_expire(struct rc_group *g, struct rc_conn **out)
{
	double now = rc_now();
	int n = 0;

	for (int i = 0; i < g->ncand; i++) {
		struct gcand *k = g->cand[i];
		if (!k->dropped && k->gone)
			cand_drop(g, k, "left before it proved the group token");
		else if (k->dropped && now - k->since > DROP_DRAIN_S) {
			out[n++] = k->c;
			cand_remove(g, k);
			free(k);
			i--;
		}
	}
	return n;
}

/* The completions got at wc, of connection owner: a peer's as the group
 * takes them, a candidate's to its proof. */
static int reap_some(struct rc_group *g, int owner, const struct ibv_wc *wc, int got,
		     struct rc_err *err)
{
	struct gcand *k = owner < 0 ? g->cand[-1 - owner] : NULL;
	int rc;

	for (int i = 0; i < got; i++) {
		if (k) {
			if ((rc = cand_wc(g, k, &wc[i], err)) < -1)
				return rc;
			if (rc < 0)
				continue;
			owner = rc;
			k = NULL;
		} else if ((rc = group_on_wc(g, owner, &wc[i], err))) {
			return rc;
		}
	}
	return 0;
}

/* An error completion of a peer of the group (not a candidate's). */
static int peer_failed(struct rc_group *g, int j, int rc, struct rc_err *err)
{
	struct gpeer *p = &g->peers[j];

	if (!g->o.keep_going)
		return rc;
	if (!p->failed)
		snprintf(p->why, sizeof(p->why), "%s", err ? err->msg : "a completion failed");
	p->failed = p->dead = true;
	p->sends_out = 0;
	rc_pipe_abandon(&p->pipe);
	rc_msgch_sends_lost(&g->ch, p->slot);
	return 0;
}

/* One pass: expire, reap, under the lock; close outside it. 1 when
 * something was reaped, 0 when nothing, or -errno. */
static int prove_pass(struct rc_group *g, struct rc_conn **conns, int *owner,
		      struct rc_conn **closing, struct rc_err *err)
{
	struct ibv_wc wc[32];
	int n, got = 0, which = -1, nclose, rc = 0;

	pthread_mutex_lock(&g->mu);
	nclose = cand_expire(g, closing);
	n = reap_list(g, conns, owner);
	if (n)
		got = rc_poll_any(conns, n, wc, 32, 0, &which, err);
	if (got == -ETIMEDOUT)
		got = 0;
	if (got < 0 && which >= 0 && owner[which] < 0) {
		struct gcand *k = g->cand[-1 - owner[which]];

		cand_drop(g, k, k->dropped ? NULL : "failed before it proved the group token");
		got = 1;
	} else if (got < 0 && which >= 0) {
		rc = peer_failed(g, owner[which], got, err);
		got = 1;
	} else if (got > 0) {
		rc = reap_some(g, owner[which], wc, got, err);
	} else {
		rc = got;
	}
	pthread_mutex_unlock(&g->mu);
	for (int i = 0; i < nclose; i++)
		rc_conn_close(closing[i]);
	return rc < 0 ? rc : got > 0;
}

int group_prove(struct rc_group *g, double deadline, struct rc_err *err)
{
	size_t cap = (size_t)g->o.world + (size_t)GROUP_CAND_MAX(g);
	struct rc_conn **conns = calloc(2 * cap, sizeof(*conns));
	int *owner = calloc(cap, sizeof(*owner)), rc = 0;

	if (!conns || !owner) {
		free(conns);
		free(owner);
		return rc_err_set(err, ENOMEM, "out of memory");
	}
	for (;;) {
		bool done;

		pthread_mutex_lock(&g->mu);
		done = g->accepted >= g->expect_accepts || g->accept_done || g->stop_accept;
		pthread_mutex_unlock(&g->mu);
		if (done || rc_now() > deadline)
			break;
		rc = prove_pass(g, conns, owner, conns + cap, err);
		if (rc < 0)
			break;
		if (!rc)
			usleep(1000);
		rc = 0;
	}
	free(conns);
	free(owner);
	return rc;
}

void group_cands_close(struct rc_group *g)
{
	for (int i = 0; i < g->ncand; i++) {
		rc_conn_close(g->cand[i]->c);
		free(g->cand[i]);
	}
	free(g->cand);
	g->cand = NULL;
	g->ncand = g->cand_cap = 0;
}
