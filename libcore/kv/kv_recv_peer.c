// SPDX-License-Identifier: MIT
/*
 * kvxfer serve, the source ranks as peers: a connect request checked
 * (version, limits, the peer a data QP joins and its proof) and accepted
 * with this rank's challenge or refused, its HELLO's proof of the token
 * checked, then the HELLO against this rank, and answered (WELCOME, or an
 * ERROR that names no value of this rank), and the heartbeats.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/parse.h>
#include <rdmactl/parse_core.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/err_core.h>
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

/* Control QPs that have not proven the token in a HELLO yet, alive. */
static int count_pending(struct kv_receiver *r)
{
	int n = 0;

	for (int i = 0; i < PEERS; i++)
		n += r->peers[i].used && !r->peers[i].hello && !r->peers[i].dead &&
		     !r->peers[i].refused;
	return n;
}

/* With PENDING_MAX control QPs waiting for their HELLO, the oldest goes:
 * connects that never prove the token cannot keep a source out, whose
 * HELLO follows its connect within a round trip. */
static void evict_pending(struct kv_receiver *r)
{
	struct rpeer *old = NULL;

	if (count_pending(r) < PENDING_MAX)
		return;
	for (int i = 0; i < PEERS; i++) {
		struct rpeer *p = &r->peers[i];

		if (p->used && !p->hello && !p->dead && !p->refused &&
		    (!old || p->t_conn < old->t_conn))
			old = p;
	}
	snprintf(old->why, sizeof(old->why),
		 "no HELLO yet: dropped for a newer connection (%d wait at most)", PENDING_MAX);
	old->dead = true;
}

/* A connect request's private data, decoded; false when the request was
 * refused. */
static bool request_decoded(struct kv_receiver *r, struct rc_cm_event *ev, struct kv_hello_pd *pd)
{
	int bad = kv_pd_decode(ev->param.private_data, ev->param.private_data_len, pd);

	if (bad == -EPROTO) {
		refuse_request(
			r, ev, -1,
			"a kvxfer source of an earlier protocol (2 to 6, an older rdmactl): "
			"this decode rank speaks protocol 7; run the same version on both sides");
		return false;
	}
	if (bad) {
		refuse_request(r, ev, -1, "not a kvxfer source of this version (connect request)");
		return false;
	}
	return true;
}

/* The source whose HELLO passed that a data QP joins, by rank and session,
 * its proof of the session checked first (whatever else holds); NULL with
 * why saying why not. Each of its data QPs joins once. */
static struct rpeer *data_peer(struct kv_receiver *r, int rail, const struct kv_hello_pd *pd,
			       char why[KV_REASON_MAX])
{
	struct rpeer *p = NULL;

	for (int i = 0; i < PEERS; i++) {
		struct rpeer *c = &r->peers[i];

		if (c->used && c->hello && !c->dead && !c->refused && c->rank == pd->rank &&
		    c->session == pd->session)
			p = c;
	}
	if (!p)
		snprintf(why, KV_REASON_MAX, "data QP %u of source rank %u before a valid HELLO",
			 pd->qp, pd->rank);
	else if (!kv_pd_data_proven(pd, p->key))
		snprintf(why, KV_REASON_MAX,
			 "not authorised: data QP %u of source rank %u without its session's proof",
			 pd->qp, pd->rank);
	else if (p->nqps != pd->nqps || p->q[pd->qp])
		snprintf(why, KV_REASON_MAX,
			 "data QP %u of source rank %u: connected already or not one of its %u",
			 pd->qp, pd->rank, p->nqps);
	/* its control QP's rail holds the rkey its WELCOME gave */
	else if (p->rail != rail)
		snprintf(why, KV_REASON_MAX,
			 "data QP %u of source rank %u on rail %d (%s), its control QP on rail %d (%s)",
			 pd->qp, pd->rank, rail + 1, r->rails[rail].l->dev_name, p->rail + 1,
			 r->rails[p->rail].l->dev_name);
	return why[0] ? NULL : p;
}

/* The peer a control QP makes, its exchange begun: this rank's nonce and
 * proof go in the accept (*acc); NULL with why saying why not. */
static struct rpeer *control_peer(struct kv_receiver *r, int rail, const struct rc_cm_event *ev,
				  const struct kv_hello_pd *pd, struct kv_accept_pd *acc,
				  char why[KV_REASON_MAX])
{
	struct rpeer *p = NULL;

	evict_pending(r);
	for (int i = 0; !p && i < PEERS; i++)
		if (!r->peers[i].used)
			p = &r->peers[i];
	if (!p) {
		snprintf(why, KV_REASON_MAX, "too many peers");
		return NULL;
	}
	*p = (struct rpeer){ .used = true,
			     .rank = pd->rank,
			     .nqps = pd->nqps,
			     .session = pd->session,
			     .rail = rail,
			     .t_conn = rc_now() };
	p->last_rx = p->last_hb = p->t_conn;
	snprintf(p->peer, sizeof(p->peer), "%s", ev->peer);
	kv_auth_start(&p->a, pd, r->rails[rail].l->port);
	if (rc_auth_nonce(p->a.sn)) {
		memset(p, 0, sizeof(*p));
		snprintf(why, KV_REASON_MAX, "no random bytes for a nonce");
		return NULL;
	}
	memcpy(acc->nonce, p->a.sn, RC_AUTH_NONCE);
	rc_auth_mac(r->token, &p->a, RC_AUTH_SERVER, acc->proof);
	kv_data_key(r->token, &p->a, p->key);
	return p;
}

/* Accept the request's QP for p; NULL with why saying why not (a control
 * QP's peer is given up then). */
static struct rconn *accept_qp(struct kv_receiver *r, struct kv_rrail *rl, struct rc_cm_event *ev,
			       const struct kv_hello_pd *pd, struct rpeer *p,
			       const struct kv_accept_pd *acc, char why[KV_REASON_MAX])
{
	unsigned char accb[KV_ACC_LEN];
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
	/* A control QP carries messages only: no remote access, ever, proven or
	 * not (the pool's PD is its PD; only data QPs, joined under a proven
	 * HELLO's session, write into the pool). */
	co.hold_access = !pd->qp;
	co.on_qp_arg = conn;
	if (!pd->qp) { /* the challenge and this rank's proof */
		co.private_data = accb;
		co.private_len = kv_acc_encode(acc, accb, sizeof(accb));
	}
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
 * proves the token: not its rank, not a data QP, not the pool's address.
 * Its accept carries this rank's challenge and proof. Data QPs join a peer
 * whose HELLO passed, by rank and session, with the proof of the session.
 */
void kvr_on_connect_request(struct kv_receiver *r, int rail, struct rc_cm_event *ev)
{
	struct kv_hello_pd pd;
	struct kv_accept_pd acc = { 0 };
	struct rpeer *p = NULL;
	struct rconn *conn = NULL;
	char why[KV_REASON_MAX] = "";

	if (!request_decoded(r, ev, &pd))
		return;
	if (r->nconns >= MAX_CONNS)
		snprintf(why, KV_REASON_MAX, "too many connections (%d)", MAX_CONNS);
	else
		p = pd.qp ? data_peer(r, rail, &pd, why) : control_peer(r, rail, ev, &pd, &acc, why);
	if (p)
		conn = accept_qp(r, &r->rails[rail], ev, &pd, p, &acc, why);
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

/* Refuse a HELLO: the peer reads an ERROR that names no value of this rank
 * (its code tells a token from the rest), the operator's log the cause; the
 * connection closes once the ERROR is out (bounded by close_by). */
static void refuse_hello(struct kv_receiver *r, struct rpeer *p, int code, const char *cause)
{
	struct kv_msg a = { .type = KV_MSG_ERROR };

	a.u.cancel.code = code;
	snprintf(a.u.cancel.text, sizeof(a.u.cancel.text), "%s",
		 code == EKEYREJECTED
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
	char opt[64];
	struct rpeer *holder = r->by_rank[p->rank];

	/* The answer to this connection's challenge, before anything else is
	 * looked at: a HELLO recorded from another connection answers
	 * another challenge. */
	if (!rc_auth_check(r->token, &p->a, RC_AUTH_CLIENT, m->u.hello.proof)) {
		static const uint8_t none[RC_AUTH_MAC];

		snprintf(why, sizeof(why), "not authorised: %s proof of the token in HELLO",
			 rc_bytes_equal(m->u.hello.proof, none, RC_AUTH_MAC) ? "no" : "a wrong");
		refuse_hello(r, p, EKEYREJECTED, why);
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
				 "source rank %u lands its route (%s always), and "
				 "this decode rank has no landing area (its pool is GPU memory)",
				 p->rank, rc_param_name("land", opt, sizeof(opt)));
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
