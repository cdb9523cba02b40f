// SPDX-License-Identifier: MIT
/*
 * The group over libfabric: one RDM endpoint a rank (struct rc_ofi), bound
 * to the address the rendezvous publishes; a peer is an address-vector
 * entry, and its one-sided traffic runs through the engine's seam (an
 * rc_ofi_tp a peer, tp_core.h). An RDM endpoint has no connection, so what
 * an RC connection gives is made here (group_int.h says what):
 *
 *   HELLO  the sender's fresh nonce for the pair, sent until the peer has
 *          proven itself (a rank that is not up yet misses the first ones);
 *   PROVE  the answer to each HELLO: the sender's proof over both nonces
 *          (rc_auth, the group's plane, both ranks, the world, the job);
 *   MSG    a control message (struct gmsg), under a MAC of the pair's
 *          session key (derived from the token and both nonces, never sent)
 *          over the header, the counter and the body.
 *
 * A PROVE or a MSG proves its sender: it must name this rank's nonce for the
 * pair, and its MAC must hold. Nothing is revealed to a peer before it
 * proved itself, and a message copied off the wire is worth nothing: a
 * MSG's counter is spent (a PROVE copied proves again what it proved),
 * and in another job its nonces are wrong. A message
 * that fails is dropped and counted; one that proves a peer holds another
 * token fails the group by name. Without a token the nonces and counters
 * are checked the same way (a message of an earlier job on the same
 * address is still refused); there is no MAC.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ops.h>
#include <rdmactl/auth_core.h>
#include <rdmactl/parse_core.h>
#include <rdmactl/sha256_core.h>
#include <rdmactl/ofi_core.h>
#include <rdmactl/tp_core.h>
#include <rdmactl/group_core.h>

#include "group_fab.h"
#include "rdv_int.h"

static bool has_token(const struct rc_group *g)
{
	return g->token[0] != '\0';
}

/* The pair's rc_auth: the lower rank connects (its nonce is cn), as over
 * verbs; the plane is libfabric's, so that no proof of one serves the other. */
static void pair_auth(struct rc_group *g, int j, const unsigned char *theirs, struct rc_auth *a)
{
	struct gfab *f = g->fab;
	int me = g->o.rank, lo = me < j ? me : j, hi = me < j ? j : me;

	group_auth(a, &f->job, (uint32_t)lo, (uint32_t)hi, (uint32_t)g->o.world, 0, 0);
	a->plane = GF_PLANE;
	memcpy(me == lo ? a->cn : a->sn, f->mine[j], RC_AUTH_NONCE);
	memcpy(me == lo ? a->sn : a->cn, theirs, RC_AUTH_NONCE);
}

static enum rc_auth_role role_of(int rank, int other)
{
	return rank < other ? RC_AUTH_CLIENT : RC_AUTH_SERVER;
}

/* The MAC of a MSG: the pair's session key over the head (mac cleared) and
 * the body. */
static void msg_mac(const unsigned char key[RC_AUTH_KEY], const struct gfwire *w, const void *body,
		    size_t len, unsigned char out[RC_AUTH_MAC])
{
	unsigned char buf[GF_SLOT], h[RC_SHA256_LEN];
	struct gfwire head = *w;

	memset(head.mac, 0, sizeof(head.mac));
	memcpy(buf, &head, sizeof(head));
	memcpy(buf + sizeof(head), body, len);
	rc_hmac_sha256(key, RC_AUTH_KEY, buf, sizeof(head) + len, h);
	memcpy(out, h, RC_AUTH_MAC);
}

int gfab_post_recv(struct gfab *f, int k, struct rc_err *err)
{
	return rc_ofi_recv(&f->o, f->rx + (size_t)k * GF_SLOT, GF_SLOT, &f->rx_mr,
			   f->rx + (size_t)k * GF_SLOT, err);
}

int gfab_send(struct rc_group *g, int j, int type, const void *body, size_t len, struct rc_err *err)
{
	struct gfab *f = g->fab;
	struct gpeer *p = &g->peers[j];
	unsigned char *slot = f->tx + (size_t)j * GF_SLOT;
	struct gfwire w = { .magic = GF_MAGIC,
			    .type = (uint8_t)type,
			    .flags = has_token(g) ? GF_TOKEN : 0,
			    .from = (uint32_t)g->o.rank,
			    .to = (uint32_t)j,
			    .world = (uint32_t)g->o.world };
	int rc;

	memcpy(w.nfrom, f->mine[j], RC_AUTH_NONCE);
	if (type != GF_HELLO) {
		struct rc_auth a;

		w.ctr = ++f->tx_ctr[j];
		memcpy(w.nto, f->their[j], RC_AUTH_NONCE);
		if (type == GF_PROVE) {
			pair_auth(g, j, f->their[j], &a);
			rc_auth_mac(g->token, &a, role_of(g->o.rank, j), w.mac);
		} else if (has_token(g)) {
			msg_mac(f->key[j], &w, body, len, w.mac);
		}
	}
	memcpy(slot, &w, sizeof(w));
	if (len)
		memcpy(slot + sizeof(w), body, len);
	if ((rc = rc_ofi_send(&f->o, f->addr[j], slot, sizeof(w) + len, &f->tx_mr, slot, err)))
		return rc;
	p->fab_tx = true;
	f->sent_at[j] = rc_now();
	return 0;
}

/* Peer j proved itself with nonce theirs: its session key, once. */
static void proven(struct rc_group *g, int j, const unsigned char *theirs)
{
	struct gfab *f = g->fab;
	struct rc_auth a;

	if (g->peers[j].fab_up)
		return;
	memcpy(f->their[j], theirs, RC_AUTH_NONCE);
	pair_auth(g, j, theirs, &a);
	rc_auth_session(g->token, &a, "group-ofi-msg", f->key[j]);
	g->peers[j].fab_up = true;
}

/* The group fails: who, why (the first failure is kept). */
static void fail(struct gfab *f, int code, const char *who, const char *why)
{
	if (!f->rc)
		f->rc = rc_err_set(&f->err, code, "%s %s", who, why);
}

/* A PROVE or a MSG from peer j (the head checked for its kind and ranks):
 * whether it proves j; counted as dropped where it does not. */
static bool check_peer(struct rc_group *g, int j, const struct gfwire *w, const void *body,
		       size_t len)
{
	struct gfab *f = g->fab;
	struct gpeer *p = &g->peers[j];
	unsigned char want[RC_AUTH_MAC], key[RC_AUTH_KEY];
	struct rc_auth a;
	bool ok;

	/* our nonce for the pair, and the one it proved itself with */
	if (memcmp(w->nto, f->mine[j], RC_AUTH_NONCE) ||
	    (p->fab_up && memcmp(w->nfrom, f->their[j], RC_AUTH_NONCE)) ||
	    (w->type == GF_MSG && w->ctr <= f->rx_ctr[j]))
		return false;
	if ((w->flags & GF_TOKEN) && !has_token(g)) {
		fail(f, EACCES, p->name, "holds a group token and this rank none");
		return false;
	}
	if (!(w->flags & GF_TOKEN) && has_token(g)) {
		fail(f, EACCES, p->name, "holds no group token");
		return false;
	}
	pair_auth(g, j, w->nfrom, &a);
	if (w->type == GF_PROVE) {
		ok = rc_auth_check(g->token, &a, role_of(j, g->o.rank), w->mac);
	} else if (has_token(g)) {
		rc_auth_session(g->token, &a, "group-ofi-msg", key);
		msg_mac(key, w, body, len, want);
		ok = rc_bytes_equal(want, w->mac, RC_AUTH_MAC);
	} else {
		ok = true;
	}
	if (!ok) {
		/* it named our nonce: the peer (or one who saw the pair's
		 * HELLOs), and its proof fails */
		fail(f, EACCES, p->name, "did not prove the group token (a wrong token?)");
		return false;
	}
	/* a PROVE's MAC does not cover its counter: a copy proves again, no more */
	if (w->type == GF_MSG)
		f->rx_ctr[j] = w->ctr;
	proven(g, j, w->nfrom);
	return true;
}

int rc_group_fab_head(const void *buf, size_t len, int me, int world, const uint8_t *need,
		      int *from, const void **body, size_t *blen)
{
	struct gfwire w;
	size_t n;

	if (len < sizeof(w))
		return -EPROTO;
	memcpy(&w, buf, sizeof(w));
	n = len - sizeof(w);
	if (w.magic != GF_MAGIC || w.to != (uint32_t)me || w.world != (uint32_t)world ||
	    w.from >= (uint32_t)world || (int)w.from == me || !need[me * world + (int)w.from] ||
	    n > sizeof(struct gmsg) || w.type < GF_HELLO || w.type > GF_MSG ||
	    (w.type != GF_MSG && n))
		return -EPROTO;
	*from = (int)w.from;
	*body = (const unsigned char *)buf + sizeof(w);
	*blen = n;
	return w.type;
}

/* Receive slot k held len bytes. */
static void on_message(struct rc_group *g, const unsigned char *buf, size_t len)
{
	struct gfab *f = g->fab;
	struct gfwire w;
	const void *body;
	size_t blen;
	int j;

	if (rc_group_fab_head(buf, len, g->o.rank, g->o.world, g->need, &j, &body, &blen) < 0) {
		f->dropped++;
		return;
	}
	memcpy(&w, buf, sizeof(w));
	if (w.type == GF_HELLO) {
		/* answered with our proof over the nonce it names; only the
		 * peer at j's address gets the answer */
		if (!g->peers[j].fab_up)
			memcpy(f->their[j], w.nfrom, RC_AUTH_NONCE);
		if (!g->peers[j].fab_up || !memcmp(w.nfrom, f->their[j], RC_AUTH_NONCE))
			f->owe[j] = true;
		f->heard[j] = true;
		f->events++;
		return;
	}
	if (!check_peer(g, j, &w, body, blen)) {
		f->dropped++;
		return;
	}
	f->events++;
	if (w.type == GF_MSG) {
		struct gmsg m;

		memcpy(&m, body, blen);
		if (!f->rc && (f->rc = group_on_msg(g, j, &m, blen, &f->err)))
			return;
	}
}

/* A completion that is not the engine's: a message, a send of ours, or a
 * peer's write with immediate data (the writer's rank in its low bits). */
void gfab_on_other(void *arg, const struct rc_ofi_wc *wc)
{
	struct rc_group *g = arg;
	struct gfab *f = g->fab;
	uintptr_t at = (uintptr_t)wc->ctx, rx = (uintptr_t)f->rx, tx = (uintptr_t)f->tx;

	if (at >= tx && at < tx + (size_t)g->o.world * GF_SLOT) {
		int j = (int)((at - tx) / GF_SLOT);

		g->peers[j].fab_tx = false;
		if (wc->err && !g->peers[j].fab_up)
			f->refused[j] = true;
		/* a message to a peer not up yet is sent again; to a proven
		 * one, it is lost: the peer failed */
		if (wc->err && g->peers[j].fab_up && !g->peers[j].dead) {
			g->peers[j].dead = true;
			snprintf(g->peers[j].why, sizeof(g->peers[j].why), "%s",
				 wc->why[0] ? wc->why : "a message to it failed");
		}
		f->events++;
		return;
	}
	if (at >= rx && at < rx + (size_t)f->nrx * GF_SLOT) {
		int k = (int)((at - rx) / GF_SLOT);

		if (!wc->err)
			on_message(g, f->rx + (size_t)k * GF_SLOT, wc->len);
		if (!f->rc)
			f->rc = gfab_post_recv(f, k, &f->err);
		return;
	}
	if (rc_ofi_wc_imm(wc)) {
		uint32_t ch = (uint32_t)(wc->data >> 24) & 0xff, j = (uint32_t)wc->data & 0xffffff;

		if (j >= (uint32_t)g->o.world || ch >= IMM_CHANNELS || !g->peers[j].fab_up) {
			f->dropped++;
			return;
		}
		g->peers[j].imm[ch]++;
		f->events++;
	}
}

void *group_fab_ep(struct rc_group *g, int j)
{
	return &g->fab->tp[j];
}

uint32_t group_fab_max_msg(const struct rc_group *g)
{
	size_t m = g->fab->o.max_msg;

	return m > UINT32_MAX ? UINT32_MAX : (uint32_t)m;
}

/* The PROVEs owed, where the peer's send slot is free. */
static int pay_owed(struct rc_group *g, struct rc_err *err)
{
	struct gfab *f = g->fab;
	int rc;

	for (int j = 0; j < g->o.world; j++)
		if (f->owe[j] && !g->peers[j].fab_tx) {
			f->owe[j] = false;
			if ((rc = gfab_send(g, j, GF_PROVE, NULL, 0, err)))
				return rc;
		}
	return 0;
}

/* One read of the queue: the engine's completions told to each peer's
 * pipe, the others taken by on_other. The count of the engine's, or -errno. */
static int read_queue(struct rc_group *g, struct rc_err *err)
{
	struct gfab *f = g->fab;
	int n = 0, which, rc;
	struct rc_cqe cqe;

	if (!f->neps) {
		struct rc_ofi_wc wc[16];

		if ((rc = rc_ofi_poll(&f->o, wc, 16, 0, err)) < 0)
			return rc;
		for (int i = 0; i < rc; i++)
			gfab_on_other(g, &wc[i]);
		return 0;
	}
	while ((rc = rc_ofi_transport.poll(f->eps, f->neps, &cqe, 1, 0, &which, err)) == 1) {
		struct gpeer *p = &g->peers[g->conn_rank[which]];

		rc_pipe_complete(&p->pipe, cqe.user & RC_WRID_MASK, NULL);
		if (!(cqe.user & PIECE_NOT_LAST))
			p->writes_done++;
		n++;
	}
	if (rc < 0 && rc != -ETIMEDOUT)
		return rc;
	return n;
}

/* Whether something of ours is in flight: a manual-progress provider moves
 * it only while we poll, so the wait then yields rather than sleeps. */
static bool ours_in_flight(const struct rc_group *g)
{
	for (int k = 0; k < g->fab->neps; k++) {
		const struct gpeer *p = &g->peers[g->conn_rank[k]];

		if (p->fab_tx || rc_pipe_outstanding(&p->pipe))
			return true;
	}
	return false;
}

int group_fab_progress(struct rc_group *g, int timeout_ms, struct rc_err *err)
{
	struct gfab *f = g->fab;
	double start = rc_now(), end = start + timeout_ms / 1000.0;
	uint64_t ev = f->events;
	int n, rc;

	for (;;) {
		if ((n = read_queue(g, err)) < 0)
			return n;
		if (f->rc)
			return rc_err_set(err, -f->rc, "%s", f->err.msg);
		if ((rc = pay_owed(g, err)))
			return rc;
		if (g->aborted)
			return rc_err_set(err, ECONNABORTED, "%s", g->abort_msg);
		if (n || f->events != ev || rc_now() >= end)
			return 0;
		/* tcp and ofi_rxm move only while polled: spin a while, then
		 * yield while ours are in flight, else sleep on the queue where
		 * it has a descriptor */
		if ((rc_now() - start) * 1000 > GF_SPIN_MS) {
			double left = (end - rc_now()) * 1000;

			if (ours_in_flight(g) ||
			    rc_ofi_wait(&f->o, left < 10 ? (int)left + 1 : 10) < 0)
				sched_yield();
		}
	}
}

int group_fab_send(struct rc_group *g, int j, uint32_t magic, const void *data, size_t len,
		   struct rc_err *err)
{
	struct gmsg m = { .magic = magic,
			  .seq = g->seq,
			  .from = (uint32_t)g->o.rank,
			  .len = (uint32_t)len };

	memcpy(m.data, data, len);
	return gfab_send(g, j, GF_MSG, &m, offsetof(struct gmsg, data) + len, err);
}
