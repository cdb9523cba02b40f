// SPDX-License-Identifier: MIT
/*
 * The region server's connections: admitted by their token (the admin token
 * allows the migration steps), their control channel (LIST, the migration
 * requests, immediates), a keepalive probe for each, and their end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ops.h>
#include <rdmactl/parse.h>

#include "server_int.h"

#define SRV_KEEPALIVE_MS 5000 /* default probe interval */

static void emit(struct rc_server *s, enum rc_server_event_kind kind, const char *peer,
		 const char *reason)
{
	struct rc_server_event ev = { .kind = kind, .peer = peer, .reason = reason };

	if (s->o.on_event)
		s->o.on_event(s->o.arg, &ev);
}

static int post_ctrl_recv(struct srv_conn *sc, int i)
{
	return rc_post_recv(sc->c, sc->buf.recv[i], RC_CTRL_MSG_MAX, sc->mr->lkey, (uint64_t)i,
			    NULL);
}

static int prepare_conn(struct rc_conn *c, void *arg)
{
	struct srv_conn *sc = arg;
	int rc;

	sc->c = c;
	sc->mr = ibv_reg_mr(c->pd, &sc->buf, sizeof(sc->buf), IBV_ACCESS_LOCAL_WRITE);
	if (!sc->mr)
		return -errno;
	for (int i = 0; i < SRV_RECVS; i++) {
		rc = post_ctrl_recv(sc, i);
		if (rc)
			return rc;
	}
	return 0;
}

static void conn_free(struct srv_conn *sc)
{
	if (sc->c)
		rc_conn_close(sc->c);
	if (sc->mr)
		ibv_dereg_mr(sc->mr);
	free(sc);
}

static void drain_all(void *arg, const void *skip);
static void mig_reply(void *arg, const void *conn, int slot, const void *msg, size_t len);

/* Whether sc is still served: a migration's fence drains every connection
 * from inside the handling of one (drain_all), and may drop any of them. */
static bool conn_live(const struct rc_server *s, const struct srv_conn *sc)
{
	for (int i = 0; i < s->nconns; i++)
		if (s->conns[i] == sc)
			return true;
	return false;
}

struct srv_mig_host srv_mig_host_of(struct rc_server *s)
{
	return (struct srv_mig_host){ .regions = s->regions,
				      .nregions = s->nregions,
				      .pd = s->l->pd,
				      .bind_addr = s->l->addr,
				      .dev_name = s->l->dev_name,
				      .drain_all = drain_all,
				      .reply = mig_reply,
				      .arg = s };
}

void srv_drop_conn(struct rc_server *s, struct srv_conn *sc, bool peer_gone, bool tell,
		   const char *why)
{
	char peer[sizeof(sc->c->peer)];

	snprintf(peer, sizeof(peer), "%s", sc->c->peer);
	for (int i = 0; i < s->nconns; i++) {
		if (s->conns[i] != sc)
			continue;
		s->conns[i] = s->conns[--s->nconns];
		break;
	}
	if (why)
		s->st.dropped++;
	if (peer_gone)
		sc->c->disconnected = true;
	if (s->mig) {
		struct srv_mig_host mh = srv_mig_host_of(s);

		srv_mig_conn_gone(s->mig, &mh, sc);
	}
	conn_free(sc);
	if (tell)
		emit(s, RC_EV_DISCONNECTED, peer, why);
}

/* Whether the connect request carries the admin token (compared in full,
 * in constant time, as the token). */
static bool admin_ok(const struct rc_server *s, const struct rdma_conn_param *p)
{
	const unsigned char *pd = p->private_data;
	size_t len = pd ? p->private_data_len : 0;

	return s->admin[0] && len && pd[0] && rc_token_equal(s->admin, pd, len);
}

static bool token_ok(const struct rc_server *s, const struct rdma_conn_param *p, const char **why)
{
	const unsigned char *pd = p->private_data;
	size_t len = pd ? p->private_data_len : 0;

	if (admin_ok(s, p))
		return true;
	if (!s->token[0])
		return true;
	if (len == 0 || pd[0] == 0) {
		*why = "rdmactl: a token is required";
		return false;
	}
	/* The CM pads private data with zeros up to its fixed size; the
	 * comparison takes the same time wherever the tokens differ. */
	if (!rc_token_equal(s->token, pd, len)) {
		*why = "rdmactl: invalid token";
		return false;
	}
	return true;
}

static void on_connect_request(struct rc_server *s, struct rc_cm_event *ev)
{
	struct rc_conn_opts co = { .sq_depth = SRV_RECVS + 1,
				   .rq_depth = SRV_RECVS,
				   .timeout_ms = 5000 };
	struct srv_conn *sc;
	const char *why = NULL;
	struct rc_err e;

	if (ev->other_device)
		why = "rdmactl: request arrived on another device";
	else if (s->nconns >= s->max_conns)
		why = "rdmactl: too many connections";
	else
		token_ok(s, &ev->param, &why);
	if (why) {
		rc_cm_refuse(ev, why);
		s->st.rejected++;
		emit(s, RC_EV_REJECTED, ev->peer, why + strlen("rdmactl: "));
		return;
	}
	sc = calloc(1, sizeof(*sc));
	if (!sc) {
		rc_cm_refuse(ev, "rdmactl: out of memory");
		s->st.rejected++;
		return;
	}
	co.on_qp = prepare_conn;
	co.on_qp_arg = sc;
	if (rc_cm_accept(s->l, ev, &co, &sc->c, &e)) {
		if (sc->mr)
			ibv_dereg_mr(sc->mr);
		free(sc);
		rc_cm_refuse(ev, "rdmactl: accept failed");
		s->st.rejected++;
		emit(s, RC_EV_REJECTED, ev->peer, e.msg);
		return;
	}
	sc->c->user = sc;
	sc->admin = s->admin[0] ? admin_ok(s, &ev->param) : s->o.allow_unauth_migration;
	s->conns[s->nconns++] = sc;
}

int srv_handle_cm(struct rc_server *s, struct rc_err *err)
{
	struct rc_cm_event ev;

	while (rc_listener_next(s->l, 0, &ev) == 0) {
		struct srv_conn *sc = ev.conn ? ev.conn->user : NULL;

		switch (ev.kind) {
		case RC_CM_REQUEST:
			on_connect_request(s, &ev);
			break;
		case RC_CM_ESTABLISHED:
			if (ev.conn) {
				s->st.accepted++;
				emit(s, RC_EV_CONNECTED, ev.conn->peer, NULL);
			}
			break;
		case RC_CM_GONE:
			if (sc)
				srv_drop_conn(s, sc, true, ev.was_established, NULL);
			break;
		case RC_CM_DEVICE_GONE:
			return rc_err_set(err, ENODEV, "the RDMA device %s was removed",
					  s->l->dev_name);
		case RC_CM_OTHER:
			break;
		}
	}
	return 0;
}

static void handle_ctrl(struct rc_server *s, struct srv_conn *sc, struct ibv_wc *wc)
{
	int slot = (int)(wc->wr_id & RC_WRID_MASK);
	unsigned char *out;
	struct rc_ctrl_hdr h;
	int len = 0;

	if (slot >= SRV_RECVS)
		return;
	/* A reply has gone: its request's slot takes the next request. */
	if (rc_wrid_op(wc->wr_id) == RC_OP_SEND) {
		post_ctrl_recv(sc, slot);
		return;
	}
	if (rc_wrid_op(wc->wr_id) != RC_OP_RECV)
		return;
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		struct rc_server_event ev = { .kind = RC_EV_IMM,
					      .peer = sc->c->peer,
					      .imm = be32toh(wc->imm_data) };

		s->st.imms++;
		if (s->o.on_event)
			s->o.on_event(s->o.arg, &ev);
		post_ctrl_recv(sc, slot);
		return;
	}
	s->st.requests++;
	out = sc->buf.send[slot];
	if (rc_ctrl_decode_hdr(sc->buf.recv[slot], wc->byte_len, &h) == 0 &&
	    h.type == RC_CTRL_LIST_REQ) {
		struct rc_region_desc d[RC_MAX_REGIONS];

		for (int i = 0; i < s->nregions; i++)
			d[i] = s->regions[i].d;
		len = rc_ctrl_encode_list(out, RC_CTRL_MSG_MAX, h.seq, d, s->nregions);
	} else {
		struct srv_mig_host mh = srv_mig_host_of(s);

		len = srv_mig_handle(&s->mig, &mh, sc, sc->admin, slot, sc->buf.recv[slot],
				     wc->byte_len, out, RC_CTRL_MSG_MAX);
		if (len == SRV_MIG_LATER)
			return; /* the slot is the request's until mig_reply */
	}
	/* With a reply out, the slot waits for its completion (above). */
	if (len > 0 &&
	    rc_post_send(sc->c, out, (uint32_t)len, sc->mr->lkey, (uint64_t)slot, NULL) == 0)
		return;
	post_ctrl_recv(sc, slot);
}

/* Take every completion: the CQ is left empty and armed. An error
 * completion (a LIST reply or a keepalive probe the peer never
 * acknowledged) drops the connection, and says why. */
void srv_drain_cq(struct rc_server *s, struct srv_conn *sc)
{
	struct ibv_wc wc[8];
	struct rc_err e;
	int got;

	while ((got = rc_cq_take(sc->c, wc, 8)) > 0) {
		for (int j = 0; j < got; j++) {
			if (wc[j].status != IBV_WC_SUCCESS) {
				rc_wc_error(sc->c, &wc[j], &e);
				srv_drop_conn(s, sc, false, true, e.msg);
				return;
			}
			if (rc_wrid_op(wc[j].wr_id) == RC_OP_WRITE)
				sc->probing = false;
			else
				handle_ctrl(s, sc, &wc[j]);
			/* A fence in there drained every connection: this one
			 * may have been dropped on the way. */
			if (!conn_live(s, sc))
				return;
		}
	}
}

/*
 * A peer host that vanishes (crash, power-off, partition) sends no
 * disconnect, and its connection would hold a slot for ever. Every
 * keepalive_ms each connection gets a zero-length RDMA WRITE, which the
 * peer's adapter acknowledges by itself (no buffer, no CPU, no rkey for no
 * bytes). From a vanished host it comes back as a retry-exceeded error
 * after the transport's retries, or not at all; either way the connection
 * is dropped (srv_drain_cq, or here after three intervals).
 */
void srv_keepalive(struct rc_server *s)
{
	int every = s->o.keepalive_ms ? s->o.keepalive_ms : SRV_KEEPALIVE_MS;
	double now = rc_now();

	char why[160];

	if (s->o.keepalive_ms < 0)
		return;
	for (int i = s->nconns - 1; i >= 0; i--) { /* a drop moves the last one here */
		struct srv_conn *sc = s->conns[i];

		/* The transport's own retries may never end (an RC QP with no ack
		 * timeout waits for ever): a probe unanswered for three intervals
		 * is the answer. */
		if (sc->probing && now - sc->probe_sent > 3 * every / 1000.0) {
			snprintf(why, sizeof(why),
				 "keepalive: no answer from the peer in %d ms "
				 "(its host is gone or unreachable)",
				 3 * every);
			srv_drop_conn(s, sc, false, true, why);
			continue;
		}
		if (!sc->c->established || sc->probing || now < sc->probe_at)
			continue;
		sc->probe_at = now + every / 1000.0;
		if (rc_post_rdma(sc->c, RC_OP_WRITE, NULL, 0, 0, 0, 0, 0, 0, true, NULL) == 0) {
			sc->probing = true;
			sc->probe_sent = now;
		}
	}
}

/* A fence's: every connection but skip, the one whose request is being
 * handled (dropping it would free what its handler still writes to). Not
 * again from inside itself (a fence in another connection's queue). */
static void drain_all(void *arg, const void *skip)
{
	struct rc_server *s = arg;
	struct srv_conn *all[SRV_MAX_CONNS];
	int n = s->nconns;

	if (s->draining)
		return;
	s->draining = true;
	/* A snapshot: draining one may drop others and reorder the table. */
	memcpy(all, s->conns, (size_t)n * sizeof(all[0]));
	for (int i = 0; i < n; i++)
		if (all[i] != skip && conn_live(s, all[i]))
			srv_drain_cq(s, all[i]);
	s->draining = false;
}

/* A PULL or HASH the worker finished: its answer goes in its slot. */
static void mig_reply(void *arg, const void *conn, int slot, const void *msg, size_t len)
{
	struct rc_server *s = arg;
	struct srv_conn *sc = (struct srv_conn *)conn;

	if (!conn_live(s, sc) || slot < 0 || slot >= SRV_RECVS || len > RC_CTRL_MSG_MAX)
		return;
	memcpy(sc->buf.send[slot], msg, len);
	if (rc_post_send(sc->c, sc->buf.send[slot], (uint32_t)len, sc->mr->lkey, (uint64_t)slot,
			 NULL))
		post_ctrl_recv(sc, slot);
}

void srv_handle_cqs(struct rc_server *s, struct pollfd *pfd, int n)
{
	struct srv_conn *ready[SRV_MAX_CONNS];
	int k = 0;

	/* Collected first: draining one may drop it and reorder the table. */
	for (int i = 0; i < n && i < s->nconns; i++)
		if (pfd[i].revents & POLLIN)
			ready[k++] = s->conns[i];
	for (int i = 0; i < k; i++)
		if (conn_live(s, ready[i])) /* not dropped by an earlier one */
			srv_drain_cq(s, ready[i]);
}
