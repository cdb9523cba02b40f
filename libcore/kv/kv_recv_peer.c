// SPDX-License-Identifier: MIT
/*
 * kvxfer serve, the source ranks as peers: a connect request checked
 * (version, token, limits, the peer a data QP joins) and accepted or
 * refused, its HELLO checked against this rank and answered (WELCOME, or
 * an ERROR that names no value of this rank), and the heartbeats.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/parse.h>
#include <rdmactl/parse_core.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/kv_core.h>

#include "kv_recv.h"

static int prep_ctrl(struct rc_conn *c, void *arg)
{
	struct rconn *conn = arg;

	conn->c = c;
	return kv_chan_init(&conn->ch, c, NULL);
}

static int prep_data(struct rc_conn *c, void *arg)
{
	int rc = 0;

	((struct rconn *)arg)->c = c;
	for (int i = 0; !rc && i < DATA_RECVS; i++)
		rc = rc_post_recv(c, NULL, 0, 0, 0, NULL);
	return rc;
}

static void refuse_request(struct kv_receiver *r, struct rc_cm_event *ev, int rank, const char *why)
{
	struct kv_event e = { .kind = KV_EV_PEER_REFUSED,
			      .rank = rank < 0 ? UINT32_MAX : (uint32_t)rank,
			      .peer = ev->peer,
			      .reason = why };

	/* The peer reads one word (or whether it lacks the token); the
	 * operator's log says why. */
	rc_cm_refuse(ev, !strncmp(why, "not authorised", 14)
				 ? "rdmactl: not authorised (a missing or wrong token)"
				 : "rdmactl: refused");
	kvr_emit(r, &e);
}

static int count_pending(struct kv_receiver *r)
{
	int n = 0;

	for (int i = 0; i < PEERS; i++)
		n += r->peers[i].used && !r->peers[i].hello;
	return n;
}

/* A connect request's private data, decoded, and its token proven; false
 * when the request was refused. */
static bool request_authentic(struct kv_receiver *r, struct rc_cm_event *ev, struct kv_hello_pd *pd)
{
	char why[KV_REASON_MAX] = "";
	int bad = kv_pd_decode(ev->param.private_data, ev->param.private_data_len, pd);

	if (bad == -EPROTO) {
		refuse_request(
			r, ev, -1,
			"a kvxfer source of an earlier protocol (2 to 5, an older rdmactl): "
			"this decode rank speaks protocol 6; run the same version on both sides");
		return false;
	}
	if (bad) {
		refuse_request(r, ev, -1, "not a kvxfer source of this version (connect request)");
		return false;
	}
	/* The token before anything else: a host without it holds nothing,
	 * not even a connection waiting for its HELLO. */
	if (!kv_pd_authentic(pd, r->token)) {
		static const uint8_t none[KV_PD_PROOF];

		snprintf(why, sizeof(why),
			 "not authorised: %s token in the connect request of %s QP %u",
			 rc_bytes_equal(pd->proof, none, KV_PD_PROOF) ? "no" : "a wrong",
			 pd->qp ? "data" : "control", pd->qp);
		refuse_request(r, ev, (int)pd->rank, why);
		return false;
	}
	return true;
}

/* The peer an authentic connect request joins (a data QP, by rank, session
 * and secret) or makes (a control QP); NULL with why saying why not. */
static struct rpeer *request_peer(struct kv_receiver *r, int rail, const struct rc_cm_event *ev,
				  const struct kv_hello_pd *pd, char why[KV_REASON_MAX])
{
	struct rpeer *p = NULL;

	if (r->nconns >= MAX_CONNS)
		snprintf(why, KV_REASON_MAX, "too many connections (%d)", MAX_CONNS);
	else if (pd->qp == 0 && count_pending(r) >= PENDING_MAX)
		snprintf(why, KV_REASON_MAX, "%d connections wait for their HELLO already",
			 PENDING_MAX);
	for (int i = 0; !why[0] && pd->qp && i < PEERS; i++) {
		struct rpeer *c = &r->peers[i];

		/* Bound by the sender's secret: every byte compared, always. */
		if (c->used && c->hello && !c->dead && !c->refused && c->rank == pd->rank &&
		    c->session == pd->session && rc_bytes_equal(c->secret, pd->secret, KV_PD_SECRET))
			p = c;
	}
	if (!why[0] && pd->qp && !p)
		snprintf(why, KV_REASON_MAX, "data QP %u of source rank %u before a valid HELLO",
			 pd->qp, pd->rank);
	if (!why[0] && pd->qp && (p->nqps != pd->nqps || p->q[pd->qp]))
		snprintf(why, KV_REASON_MAX,
			 "data QP %u of source rank %u: connected already or not "
			 "one of its %u",
			 pd->qp, pd->rank, p->nqps);
	/* its control QP's rail holds the rkey its WELCOME gave */
	if (!why[0] && pd->qp && p->rail != rail)
		snprintf(why, KV_REASON_MAX,
			 "data QP %u of source rank %u on rail %d (%s), its control QP on rail %d (%s)",
			 pd->qp, pd->rank, rail + 1, r->rails[rail].l->dev_name, p->rail + 1,
			 r->rails[p->rail].l->dev_name);
	for (int i = 0; !why[0] && !p && i < PEERS; i++) {
		if (r->peers[i].used)
			continue;
		p = &r->peers[i];
		*p = (struct rpeer){ .used = true,
				     .rank = pd->rank,
				     .nqps = pd->nqps,
				     .session = pd->session,
				     .rail = rail,
				     .t_conn = rc_now() };
		memcpy(p->secret, pd->secret, KV_PD_SECRET);
		p->last_rx = p->last_hb = p->t_conn;
		snprintf(p->peer, sizeof(p->peer), "%s", ev->peer);
	}
	if (!why[0] && !p)
		snprintf(why, KV_REASON_MAX, "too many peers");
	return why[0] ? NULL : p;
}

/* Accept the request's QP for p; NULL with why saying why not (a control
 * QP's peer is given up then). */
static struct rconn *accept_qp(struct kv_receiver *r, struct kv_rrail *rl, struct rc_cm_event *ev,
			       const struct kv_hello_pd *pd, struct rpeer *p,
			       char why[KV_REASON_MAX])
{
	struct rc_conn_opts co = { .timeout_ms = r->o->c.timeout_ms };
	struct rconn *conn = calloc(1, sizeof(*conn));
	struct rc_err e;

	if (!conn) {
		snprintf(why, KV_REASON_MAX, "out of memory");
		return NULL;
	}
	conn->p = p;
	conn->qp = pd->qp;
	co.sq_depth = pd->qp ? 2 : KV_CHAN_SENDS + 2;
	co.rq_depth = pd->qp ? DATA_RECVS : KV_CHAN_RECVS;
	co.on_qp = pd->qp ? prep_data : prep_ctrl;
	co.on_qp_arg = conn;
	if (rl->sh && rl->cq_used + co.sq_depth + co.rq_depth <= rl->sh->cqe) {
		co.shared = rl->sh;
		conn->cqe = co.sq_depth + co.rq_depth;
		rl->cq_used += conn->cqe;
	}
	conn->rail = (int)(rl - r->rails);
	if (rc_cm_accept(rl->l, ev, &co, &conn->c, &e)) {
		rl->cq_used -= conn->cqe;
		kv_chan_fini(&conn->ch);
		snprintf(why, KV_REASON_MAX, "accept failed: %.200s", e.msg);
		if (!pd->qp)
			memset(p, 0, sizeof(*p));
		free(conn);
		return NULL;
	}
	return conn;
}

/*
 * A control QP (qp 0) makes a peer that holds nothing until its HELLO
 * passes: not its rank, not a data QP, not the pool's address. Data QPs
 * join a peer whose HELLO passed, by rank, session and secret. With a token,
 * every request proves it before anything else is looked at.
 */
void kvr_on_connect_request(struct kv_receiver *r, int rail, struct rc_cm_event *ev)
{
	struct kv_hello_pd pd;
	struct rpeer *p;
	struct rconn *conn = NULL;
	char why[KV_REASON_MAX] = "";

	if (!request_authentic(r, ev, &pd))
		return;
	if ((p = request_peer(r, rail, ev, &pd, why)))
		conn = accept_qp(r, &r->rails[rail], ev, &pd, p, why);
	if (!conn) {
		refuse_request(r, ev, (int)pd.rank, why);
		return;
	}
	conn->c->user = conn;
	p->q[pd.qp] = conn;
	if (pd.qp)
		p->last_rx = rc_now(); /* its data QPs connecting: alive */
	r->conns[r->nconns++] = conn;
}

static int geom_diff(const struct kv_geom *a, const struct kv_geom *b, char *why, size_t len)
{
#define DIFF(f, name) \
	if (a->f != b->f) \
	return snprintf(why, len, \
			"geometry mismatch: decode rank has " name " %u, the " \
			"source rank %u", \
			(unsigned)a->f, (unsigned)b->f), \
	       -1
	DIFF(layout, "layout");
	DIFF(page_layout, "page layout");
	DIFF(dtype, "dtype");
	DIFF(layers, "layers");
	DIFF(kv_heads, "KV heads");
	DIFF(head_dim, "head/latent dims");
	DIFF(src_tp, "src TP");
	DIFF(dst_tp, "dst TP");
	DIFF(src_page_tokens, "src page tokens");
	DIFF(dst_page_tokens, "dst page tokens");
#undef DIFF
	return 0;
}

/* Equal tokens, in a time that does not depend on where they differ. */
static bool token_ok(const char *want, const char *got)
{
	return rc_token_equal(want, got, RC_TOKEN_MAX + 1);
}

/* Refuse a HELLO: the peer reads an ERROR that names no value of this rank
 * (its code tells a token from the rest), the operator's log the cause; the
 * connection closes once the ERROR is out (bounded by close_by). */
static void refuse_hello(struct kv_receiver *r, struct rpeer *p, int code, const char *cause)
{
	struct kv_msg a = { .type = KV_MSG_ERROR };

	a.u.cancel.code = code;
	snprintf(a.u.cancel.text, sizeof(a.u.cancel.text), "%s",
		 code == EACCES
			 ? "HELLO refused: not authorised (a missing or wrong token)"
			 : "HELLO refused: it does not match this decode rank (geometry, rank or "
			   "QPs); the decode rank's log names the difference");
	snprintf(p->why, sizeof(p->why), "HELLO refused: %s", cause);
	kvr_send_msg(r, p, &a);
	p->refused = true;
	p->close_by = rc_now() + 1.0;
}

void kvr_on_hello(struct kv_receiver *r, struct rpeer *p, const struct kv_msg *m)
{
	struct kv_msg a = { .type = KV_MSG_WELCOME };
	char why[KV_REASON_MAX] = "";
	struct rpeer *holder = r->by_rank[p->rank];

	/* The connect request proved the token (kv_pd_authentic): a HELLO
	 * carries none. One that does (an older source's habit) must carry
	 * the right one, compared whole. */
	if (m->u.hello.token[0] && !token_ok(r->token, m->u.hello.token)) {
		refuse_hello(r, p, EACCES, "wrong token in HELLO");
		return;
	}
	if (geom_diff(r->g, &m->u.hello.g, why, sizeof(why)) == 0) {
		if (m->u.hello.rank != p->rank || m->u.hello.nqps != p->nqps ||
		    m->u.hello.session != p->session)
			snprintf(why, sizeof(why),
				 "HELLO does not match its connect request (rank %u, "
				 "%u data QPs)",
				 p->rank, p->nqps);
		else if (p->rank >= r->g->src_tp || !(r->contrib >> p->rank & 1))
			snprintf(why, sizeof(why), "source rank %u does not feed decode rank %u",
				 p->rank, r->o->c.rank);
		else if (holder && holder != p && !holder->dead)
			snprintf(why, sizeof(why),
				 "source rank %u is connected already (from %.64s)", p->rank,
				 holder->peer);
		else if (m->u.hello.land == KV_PACK_ALWAYS && !r->land_off &&
			 kv_land_applies(r->g, &r->from[p->rank]))
			snprintf(why, sizeof(why),
				 "source rank %u lands its route (--land always), and "
				 "this decode rank has no landing area (its pool is GPU memory)",
				 p->rank);
	}
	if (why[0]) {
		refuse_hello(r, p, EINVAL, why);
		return;
	}
	a.u.welcome.rank = r->o->c.rank;
	a.u.welcome.pool_pages = r->o->pool_pages;
	a.u.welcome.rkey = r->rails[p->rail].mr->rkey;
	a.u.welcome.base = r->pool.mr_addr; /* GPU memory: the device pointer or the bounce buffer */
	a.u.welcome.page_bytes = r->page_bytes;
	/* Without a landing area (GPU memory), auto writes into the pool. */
	p->land = r->land_off &&
		  kv_land_choose((enum kv_pack)m->u.hello.land, r->g, &r->from[p->rank]);
	a.u.welcome.land = p->land ? r->pool.mr_addr + r->land_off : 0;
	a.u.welcome.land_units = r->land_units;
	if (kvr_send_msg(r, p, &a) == 0) {
		struct kv_event ev = { .kind = KV_EV_PEER_UP,
				       .rank = p->rank,
				       .peer = p->peer,
				       .dev = r->nrails > 1 ? r->rails[p->rail].l->dev_name : NULL,
				       .rail = p->rail,
				       .nrails = r->nrails,
				       .qps = p->nqps };

		p->hello = true;
		p->last_rx = rc_now();
		r->by_rank[p->rank] = p;
		r->sum->rails[p->rail].sources++;
		kvr_emit(r, &ev);
	}
}

void kvr_heartbeats(struct kv_receiver *r)
{
	double now = rc_now();

	for (int i = 0; i < PEERS; i++) {
		struct rpeer *p = &r->peers[i];
		struct kv_msg m = { .type = KV_MSG_HB };

		if (!p->used || p->dead || !p->hello || now - p->last_hb < r->o->c.hb_ms / 1000.0)
			continue;
		p->last_hb = now;
		kvr_send_msg(r, p, &m);
	}
}
