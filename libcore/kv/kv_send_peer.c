// SPDX-License-Identifier: MIT
/*
 * kvxfer send: its decode ranks' connections. Each gets a control QP, the
 * source pool registered on its PD, HELLO answered by WELCOME (or ERROR),
 * then --qps data QPs on the sender's one shared CQ; every connection's CM
 * events come to the sender's one channel, and one gone is its decode rank
 * dead, with the reason.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_send.h"
#include <rdmactl/parse_core.h>
#include <rdmactl/mem_core.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/dev_core.h>
#include <rdmactl/err_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/kv_core.h>

/* The device and local address d's connections leave from: its rail's. */
static const char *dst_dev(const struct kv_sender *s, const struct sdst *d)
{
	return s->o->nrails > 1 ? s->o->rail_dev[d->rail] : s->o->c.dev_name;
}

static const char *dst_bind(const struct kv_sender *s, const struct sdst *d)
{
	if (s->o->nrails < 2)
		return s->o->bind_addr;
	return s->rail_bind[d->rail][0] ? s->rail_bind[d->rail] : NULL;
}

/* Each rail of a device connects from that device's address, as a write's
 * rails do (rc_dev_ipv4): left to the routing table, a decode rank's address
 * may be reached through another NIC of the host, and the connect through
 * the rail's device fails. Once, before any connection. */
int kvs_rail_binds(struct kv_sender *s, struct rc_err *err)
{
	const struct kv_send_opts *o = s->o;

	for (int i = 0; i < o->nrails && o->nrails > 1; i++) {
		int rc = 0;

		if (o->rail_bind[i])
			snprintf(s->rail_bind[i], sizeof(s->rail_bind[i]), "%s", o->rail_bind[i]);
		else if (o->rail_dev[i])
			rc = rc_dev_ipv4(o->rail_dev[i], s->rail_bind[i], sizeof(s->rail_bind[i]),
					 err);
		if (rc)
			return rc_err_wrap(err, -rc, "rail %d", i + 1);
	}
	return 0;
}

/* The private data of connect request qp of d (0: the control QP, with
 * the nonce of d's exchange; a data QP, with its proof under the session's
 * data-QP secret). */
static void hello_pd(const struct kv_sender *s, const struct sdst *d, uint32_t qp,
		     unsigned char pdb[KV_PD_LEN], struct kv_hello_pd *pd)
{
	*pd = (struct kv_hello_pd){ .rank = s->o->c.rank,
				    .nqps = s->o->nqps,
				    .session = s->session,
				    .qp = qp };
	if (qp)
		kv_pd_data_prove(pd, d->key);
	else
		memcpy(pd->nonce, d->a.cn, RC_AUTH_NONCE);
	kv_pd_encode(pd, pdb, KV_PD_LEN);
}

/* The decode rank's accept of the control QP: its nonce and its proof of
 * the token, checked before anything is sent to it (a decode rank without
 * the token learns nothing of this source, not even its geometry). */
static int check_accept(struct sdst *d, const char *token, struct rc_err *err)
{
	bool have = token && *token;
	struct kv_accept_pd acc;
	const unsigned char *b;
	size_t len;

	b = rc_conn_accept_data(d->ctrl, &len);
	if (kv_acc_decode(b, len, &acc))
		return rc_err_set(err, have ? EKEYREJECTED : EPROTO,
				  "decode rank at %s answered without the challenge of kvxfer "
				  "protocol 7%s",
				  d->name,
				  have ? ": it did not prove the token"
				       : " (an older rdmactl?): run the same version on both sides");
	memcpy(d->a.sn, acc.nonce, RC_AUTH_NONCE);
	if (!rc_auth_check(token, &d->a, RC_AUTH_SERVER, acc.proof))
		return rc_err_set(err, EKEYREJECTED,
				  "decode rank at %s did not prove the token: not authorised (a "
				  "missing or wrong token on its side); nothing was sent to it",
				  d->name);
	kv_data_key(token, &d->a, d->key);
	return 0;
}

static int connect_dst(struct kv_sender *s, struct sdst *d, struct rc_err *err)
{
	const struct kv_send_opts *o = s->o;
	unsigned char pdb[KV_PD_LEN];
	struct kv_hello_pd pd;
	struct rc_conn_opts co = { .sq_depth = KV_CHAN_SENDS + 2,
				   .rq_depth = KV_CHAN_RECVS,
				   .timeout_ms = o->c.timeout_ms,
				   .private_data = pdb,
				   .private_len = KV_PD_LEN,
				   .bind_addr = dst_bind(s, d),
				   .dev_name = dst_dev(s, d) };
	struct rc_err e;
	int rc;

	if ((rc = rc_auth_nonce(d->a.cn)))
		return rc_err_set(err, -rc, "no random bytes for a nonce: %s", strerror(-rc));
	hello_pd(s, d, 0, pdb, &pd);
	if ((rc = rc_connect(d->t->host, d->t->port, &co, &d->ctrl, &e)))
		return rc_err_set(err, -rc, "decode rank at %s: %.400s", d->name, e.msg);
	rc_conn_share_events(d->ctrl, s->ech);
	/* The port in the context is the one this connection reached. */
	kv_auth_start(&d->a, &pd, be16toh(rdma_get_dst_port(d->ctrl->id)));
	if ((rc = check_accept(d, o->c.token, err)))
		return rc;
	return kv_chan_init(&d->ch, d->ctrl, err);
}

/*
 * One CQ and completion channel a rail for the data QPs of every decode
 * rank on it (room for each one's send queue and its one receive), made
 * with the first decode rank's, on the rail's device. Without the room, or
 * when it cannot be made, each data QP keeps its own.
 */
static void shared_cq(struct kv_sender *s, struct sdst *d)
{
	struct ibv_device_attr da;
	int on = 0;
	long cqe;

	for (int i = 0; i < s->o->ntargets; i++)
		on += s->o->nrails > 1 ? i % s->o->nrails == d->rail : 1;
	cqe = (long)on * s->o->nqps * (SQ_DEPTH + 5);
	if (s->sh[d->rail] || ibv_query_device(d->ctrl->verbs, &da) || cqe > da.max_cqe)
		return;
	if (rc_shared_create(d->ctrl->pd, (int)cqe, 0, &s->sh[d->rail], NULL))
		s->sh[d->rail] = NULL;
}

/* The data QPs: the decode rank takes them only after WELCOME. */
static int connect_data(struct kv_sender *s, struct sdst *d, struct rc_err *err)
{
	const struct kv_send_opts *o = s->o;
	unsigned char pdb[KV_PD_LEN];
	struct kv_hello_pd pd;
	struct rc_conn_opts co = { .timeout_ms = o->c.timeout_ms,
				   .private_data = pdb,
				   .private_len = KV_PD_LEN,
				   .bind_addr = dst_bind(s, d),
				   .dev_name = dst_dev(s, d) };
	struct rc_err e;
	int rc;

	co.sq_depth = SQ_DEPTH + 4;
	co.rq_depth = 1;
	co.send_sge = (int)s->gather;
	co.pd = d->ctrl->pd;
	shared_cq(s, d);
	co.shared = s->sh[d->rail];
	for (uint32_t k = 0; k < o->nqps; k++) {
		hello_pd(s, d, k + 1, pdb, &pd);
		if ((rc = rc_connect(d->t->host, d->t->port, &co, &d->qp[k].c, &e)))
			return rc_err_set(err, -rc, "decode rank at %s, data QP %u: %.400s",
					  d->name, k + 1, e.msg);
		d->qp[k].c->user = &d->qp[k];
		rc_conn_share_events(d->qp[k].c, s->ech);
		d->qp[k].d = d;
		d->qp[k].k = k;
		rc_pipe_init(&d->qp[k].pipe, &rc_verbs_transport, d->qp[k].c,
			     &(struct rc_pipe_opts){ .depth = SQ_DEPTH,
						     .signal_every = SIGNAL_EVERY,
						     .batch = CHAIN });
		if ((uint32_t)d->qp[k].c->send_sge < s->gather)
			s->gather = (uint32_t)d->qp[k].c->send_sge;
	}
	return 0;
}

/* HELLO, and wait for WELCOME (or ERROR), bounded. */
static int handshake(struct kv_sender *s, struct sdst *d, struct rc_err *err)
{
	struct kv_msg m = { .type = KV_MSG_HELLO };
	double deadline = rc_now() + s->o->c.timeout_ms / 1000.0;
	struct ibv_wc wc[4];
	int rc;

	m.u.hello.rank = s->o->c.rank;
	m.u.hello.nqps = s->o->nqps;
	m.u.hello.session = s->session;
	m.u.hello.g = *s->g;
	m.u.hello.land = s->o->land;
	/* The answer to the decode rank's challenge: the token does not travel. */
	rc_auth_mac(s->o->c.token, &d->a, RC_AUTH_CLIENT, m.u.hello.proof);
	if ((rc = kv_chan_send(&d->ch, &m, err)))
		return rc;
	while (!d->welcomed) {
		int left = (int)((deadline - rc_now()) * 1000), n;

		if (left <= 0)
			return rc_err_set(err, ETIMEDOUT,
					  "decode rank at %s did not answer HELLO within %d ms",
					  d->name, s->o->c.timeout_ms);
		n = rc_poll(d->ctrl, wc, 4, left, err);
		if (n == -ETIMEDOUT)
			continue;
		if (n < 0)
			return n;
		for (int i = 0; i < n; i++) {
			rc = kv_chan_wc(&d->ch, &wc[i], &m, s->pages_tmp, err);
			if (rc < 0)
				return rc;
			/* A heartbeat follows WELCOME by hb_ms: a slow poll reaps both. */
			if (rc == 0 || (m.type == KV_MSG_HB && d->welcomed))
				continue;
			/* The decode rank's heartbeats start with WELCOME: one may come in
			 * the same batch, right behind it. */
			if (m.type == KV_MSG_HB && d->welcomed)
				continue;
			if (m.type == KV_MSG_ERROR)
				return rc_err_set(err, m.u.cancel.code ? m.u.cancel.code : EINVAL,
						  "decode rank at %s refused this source rank: %s",
						  d->name, m.u.cancel.text);
			if (m.type != KV_MSG_WELCOME)
				return rc_err_set(err, EPROTO,
						  "decode rank at %s answered HELLO with %s",
						  d->name, kv_msg_name(m.type));
			d->rank = m.u.welcome.rank;
			d->pool_pages = m.u.welcome.pool_pages;
			d->rkey = m.u.welcome.rkey;
			d->base = m.u.welcome.base;
			d->page_bytes = m.u.welcome.page_bytes;
			d->land_base = m.u.welcome.land;
			d->land_units = m.u.welcome.land_units;
			d->welcomed = true;
		}
	}
	if (d->rank >= s->g->dst_tp || d->page_bytes != kv_page_bytes(s->g, true))
		return rc_err_set(err, EPROTO, "decode rank at %s says rank %u, pages of %llu bytes",
				  d->name, d->rank, (unsigned long long)d->page_bytes);
	return 0;
}

/* Setup, step 3, for each decode rank: the control QP, the pool registered
 * on its PD, HELLO and WELCOME, then the data QPs. */
int kvs_open_dst(struct kv_sender *s, struct sdst *d, const struct kv_send_target *t,
		 struct rc_err *err)
{
	struct rc_err e;
	int rc;

	d->t = t;
	d->rail = s->o->nrails > 1 ? (int)(d - s->d) % s->o->nrails : 0;
	snprintf(d->name, sizeof(d->name), strchr(d->t->host, ':') ? "[%s]:%s" : "%s:%s",
		 d->t->host, d->t->port);
	s->nd++;
	if ((rc = connect_dst(s, d, err)))
		return rc;
	if (s->o->nrails > 1) { /* the rail's figures: its device, address, decode ranks */
		struct kv_rail_sum *rs = &s->sum->rails[d->rail];

		snprintf(rs->dev, sizeof(rs->dev), "%s", d->ctrl->dev_name);
		snprintf(rs->addr, sizeof(rs->addr), "%s", dst_bind(s, d) ? dst_bind(s, d) : "");
		rs->sources++;
	}
	/* Pinning a large pool takes a while: before HELLO, since the decode
	 * rank counts heartbeats from WELCOME on. */
	if ((rc = rc_mem_register(&s->mem, d->ctrl->pd, IBV_ACCESS_LOCAL_WRITE, &d->mr, &e))) {
		d->mr = NULL;
		return rc_err_set(err, -rc, "cannot register %zu bytes of source pages: %.400s",
				  s->pool_len, e.msg);
	}
	/* What the NIC reads: the pool itself, the GPU's, or its bounce buffer. */
	s->wire_delta = s->mem.mr_addr - (uint64_t)(uintptr_t)s->pool;
	if ((rc = handshake(s, d, err)) || (rc = connect_data(s, d, err)))
		return rc;
	d->last_hb = rc_now();
	return 0;
}

void kvs_close_dst(struct sdst *d)
{
	if (d->closed)
		return;
	d->closed = true;
	for (int k = 0; k < KV_MAX_QPS; k++) {
		if (d->qp[k].c)
			rc_conn_close(d->qp[k].c);
		d->qp[k].c = NULL;
		for (size_t j = 0; j < d->qp[k].qlen; j++)
			free(d->qp[k].q[d->qp[k].qhead + j].sg);
		d->qp[k].qlen = 0;
	}
	if (d->mr)
		ibv_dereg_mr(d->mr);
	d->mr = NULL;
	kv_chan_fini(&d->ch);
	if (d->ctrl)
		rc_conn_close(d->ctrl);
	d->ctrl = NULL;
}

/* A CM event of one of d's connections: gone is d dead, with why. */
static void cm_gone(struct sdst *d, const struct rc_cm_event *ev)
{
	if (ev->kind == RC_CM_GONE || ev->kind == RC_CM_DEVICE_GONE) {
		snprintf(d->why, sizeof(d->why), "%s", ev->why);
		d->dead = true;
	}
}

/* The events of a connection that kept its own channel. */
void kvs_conn_events(struct sdst *d, struct rc_conn *c)
{
	struct rc_cm_event ev;

	while (!d->dead && rc_cm_poll(c->ech, &ev) == 0)
		cm_gone(d, &ev);
}

/* The decode rank a connection of ours belongs to (NULL: none now). */
static struct sdst *dst_of(struct kv_sender *s, const struct rc_conn *c)
{
	for (int i = 0; c && i < s->nd; i++) {
		struct sdst *d = &s->d[i];

		if (d->ctrl == c)
			return d;
		for (uint32_t k = 0; k < s->o->nqps; k++)
			if (d->qp[k].c == c)
				return d;
	}
	return NULL;
}

/* The CM events of every connection, on the sender's one channel: a
 * decode rank whose connection went is dead, with the reason. */
void kvs_cm_events(struct kv_sender *s)
{
	struct rc_cm_event ev;

	while (rc_cm_poll(s->ech, &ev) == 0) {
		struct sdst *d = dst_of(s, ev.conn);

		if (d && !d->dead)
			cm_gone(d, &ev);
	}
}
