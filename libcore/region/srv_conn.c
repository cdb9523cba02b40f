// SPDX-License-Identifier: MIT
/*
 * The region server's connections: admitted by protocol 2's handshake
 * (srv_auth.c; the admin token allows the migration steps), their control channel (LIST, the migration
 * requests, immediates), a keepalive probe for each, and their end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ops.h>
#include <rdmactl/parse.h>
#include <rdmactl/parse_core.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/ctrl_core.h>

#include "srv_pool.h"

#define SRV_KEEPALIVE_MS 5000 /* default probe interval */

static void emit(struct rc_server *s, enum rc_server_event_kind kind, const char *peer,
		 const char *reason)
{
	struct rc_server_event ev = { .kind = kind, .peer = peer, .reason = reason };

	if (s->o.on_event)
		s->o.on_event(s->o.arg, &ev);
}

static void conn_free(struct srv_conn *sc)
{
	if (sc->c)
		rc_conn_close(sc->c);
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

/* A write announced done: its bytes, counted. */
static void written(void *arg, uint64_t len)
{
	struct rc_server *s = arg;

	SRV_COUNT(s, written_bytes, len);
	SRV_COUNT(s, writes, 1);
}

struct srv_mig_host srv_mig_host_of(struct rc_server *s)
{
	return (struct srv_mig_host){ .regions = s->regions,
				      .nregions = s->nregions,
				      .pd = s->l->pd,
				      .bind_addr = s->l->addr,
				      .dev_name = s->l->dev_name,
				      .admin_token = s->admin[0] ? s->admin : NULL,
				      .drain_all = drain_all,
				      .reply = mig_reply,
				      .written = written,
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
		__atomic_store_n(&s->st.conns, s->nconns, __ATOMIC_RELAXED);
		break;
	}
	if (why)
		SRV_COUNT(s, dropped, 1);
	if (peer_gone)
		sc->c->disconnected = true;
	if (s->mig) {
		struct srv_mig_host mh = srv_mig_host_of(s);

		srv_mig_conn_gone(s->mig, &mh, sc);
	}
	/* Its slots go back: nothing is written to them before its QP goes,
	 * just below, and a request it still sends there finds no owner. */
	srv_pool_release_conn(s, sc);
	conn_free(sc);
	if (tell)
		emit(s, RC_EV_DISCONNECTED, peer, why);
}

/* Its QP exists, in the shared CQ's table: a completion of it finds sc. */
static int adopt_conn(struct rc_conn *c, void *arg)
{
	struct srv_conn *sc = arg;

	sc->c = c;
	c->user = sc;
	return 0;
}

static void refuse(struct rc_server *s, struct rc_cm_event *ev, const char *why)
{
	rc_cm_refuse(ev, why);
	SRV_COUNT(s, rejected, 1);
	emit(s, RC_EV_REJECTED, ev->peer, why + strlen("rdmactl: "));
}

static void on_connect_request(struct rc_server *s, struct rc_cm_event *ev)
{
	struct rc_conn_opts co = { .sq_depth = SRV_CREDITS + 1, /* the replies and a probe */
				   .shared = s->sh,
				   .timeout_ms = 5000,
				   .rnr_retry = SRV_RNR_RETRY };
	unsigned char chal[RC_CHALLENGE_LEN];
	struct srv_conn *sc;
	char why[160];
	size_t clen;
	struct rc_err e;

	if (ev->other_device)
		return refuse(s, ev, "rdmactl: request arrived on another device");
	if (s->nconns >= s->max_conns)
		return refuse(s, ev, "rdmactl: too many connections");
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return refuse(s, ev, "rdmactl: out of memory");
	if (srv_auth_admit(s, ev, sc, chal, &clen, why, sizeof(why))) {
		free(sc);
		return refuse(s, ev, why);
	}
	/* no remote access until it proves its token; a verbs client an open
	 * server admits at once (no HELLO) has nothing to prove */
	co.hold_access = !sc->authed;
	co.on_qp = adopt_conn;
	co.on_qp_arg = sc;
	co.private_data = clen ? chal : NULL;
	co.private_len = (uint8_t)clen;
	if (rc_cm_accept(s->l, ev, &co, &sc->c, &e)) {
		free(sc);
		rc_cm_refuse(ev, "rdmactl: accept failed");
		SRV_COUNT(s, rejected, 1);
		emit(s, RC_EV_REJECTED, ev->peer, e.msg);
		return;
	}
	s->conns[s->nconns++] = sc;
	__atomic_store_n(&s->st.conns, s->nconns, __ATOMIC_RELAXED);
}

/* sc goes before it proved its token: refused, not disconnected. */
/* sc is established and proved its token (or needed none): counted and
 * announced, once (whichever of the two came last calls it). */
static void admitted(struct rc_server *s, struct srv_conn *sc)
{
	SRV_COUNT(s, accepted, 1);
	emit(s, RC_EV_CONNECTED, sc->c->peer, NULL);
}

static void drop_unproved(struct rc_server *s, struct srv_conn *sc, bool peer_gone, const char *why)
{
	char peer[sizeof(sc->c->peer)];

	snprintf(peer, sizeof(peer), "%s", sc->c->peer);
	srv_drop_conn(s, sc, peer_gone, false, NULL);
	SRV_COUNT(s, rejected, 1);
	emit(s, RC_EV_REJECTED, peer, why);
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
			if (ev.conn && sc && sc->authed)
				admitted(s, sc);
			break;
		case RC_CM_GONE:
			if (sc && !sc->authed)
				drop_unproved(s, sc, true, "it left before it proved its token");
			else if (sc)
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

/* sc is to go for why: now, or once the request of it being handled (a
 * fence's drain runs inside it) is done, so as not to free what that
 * handler still uses. */
static void drop_soon(struct rc_server *s, struct srv_conn *sc, const char *why)
{
	if (!sc->handling) {
		srv_drop_conn(s, sc, false, true, why);
		return;
	}
	if (!sc->doomed)
		snprintf(sc->doom_why, sizeof(sc->doom_why), "%s", why);
	sc->doomed = true;
}

/* The request in slot i of sc, handled: its reply goes from the slot's send
 * half, which then waits for that reply's completion (on_wc). */
static void handle_request(struct rc_server *s, struct srv_conn *sc, int i)
{
	struct srv_slot *sl = &s->pool.slot[i];
	unsigned char *in = rc_msgch_recv_buf(&s->pool.ch, (uint32_t)i),
		      *out = rc_msgch_reply_buf(&s->pool.ch, (uint32_t)i);
	struct rc_ctrl_hdr h;
	int len = 0;

	sl->state = SLOT_BUSY;
	sc->inflight++;
	if (sl->has_imm) {
		struct rc_server_event ev = { .kind = RC_EV_IMM,
					      .peer = sc->c->peer,
					      .imm = sl->imm };

		SRV_COUNT(s, imms, 1);
		if (s->o.on_event)
			s->o.on_event(s->o.arg, &ev);
		srv_slot_release(s, i);
		return;
	}
	SRV_COUNT(s, requests, 1);
	sc->handling = true;
	if (rc_ctrl_decode_hdr(in, sl->len, &h) == 0 && h.type == RC_CTRL_LIST_REQ) {
		struct rc_region_desc d[RC_MAX_REGIONS];

		for (int r = 0; r < s->nregions; r++)
			d[r] = s->regions[r].d;
		len = rc_ctrl_encode_list(out, RC_CTRL_MSG_MAX, h.seq, d, s->nregions);
	} else {
		struct srv_mig_host mh = srv_mig_host_of(s);

		/* A PULL's token comes masked under this connection's session. */
		rc_ctrl_seal_pull(in, sl->len, sc->role == RC_ROLE_ADMIN ? s->admin : s->token,
				  &sc->auth);
		len = srv_mig_handle(&s->mig, &mh, sc, sc->admin, i, in, sl->len, out,
				     RC_CTRL_MSG_MAX);
	}
	sc->handling = false;
	if (sc->doomed) {
		char why[sizeof(sc->doom_why)];

		snprintf(why, sizeof(why), "%s", sc->doom_why);
		srv_drop_conn(s, sc, false, true, why); /* its slots with it */
		return;
	}
	if (len == SRV_MIG_LATER)
		return; /* the slot is the request's until mig_reply */
	if (len > 0 && srv_slot_reply(s, sc, i, (uint32_t)len) == 0)
		return;
	srv_slot_release(s, i);
}

/* sc's waiting requests, oldest first, while it has credits (and none of
 * its requests is being handled further up the stack). */
static void pump(struct rc_server *s, struct srv_conn *sc)
{
	while (sc->nback && sc->inflight < SRV_CREDITS && !sc->handling) {
		int i = sc->back[sc->bhead];

		sc->bhead = (sc->bhead + 1) % SRV_HOLD_MAX;
		sc->nback--;
		handle_request(s, sc, i);
		/* A fence in there drained every connection: this one may
		 * have been dropped on the way. */
		if (!conn_live(s, sc))
			return;
	}
}

/* A receive completed in slot i: a request (or an immediate) of sc, queued
 * behind its others; NULL sc, a connection gone already. */
static void on_recv(struct rc_server *s, struct srv_conn *sc, const struct ibv_wc *wc, int i)
{
	struct srv_slot *sl = &s->pool.slot[i];
	struct rc_err e;
	char why[128];

	if (!sc || wc->status != IBV_WC_SUCCESS) {
		srv_slot_post(s, i);
		if (sc) {
			rc_wc_error(sc->c, wc, &e);
			drop_soon(s, sc, e.msg);
		}
		return;
	}
	sl->len = wc->byte_len;
	sl->has_imm = wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM;
	if (!sc->authed) { /* its first message: AUTH, or it goes */
		if (srv_auth_first(s, sc, i, why, sizeof(why))) {
			srv_slot_post(s, i);
			drop_unproved(s, sc, false, why);
		} else if (sc->c->established) {
			/* Else its ESTABLISHED, still to be sorted, says so: once. */
			admitted(s, sc);
		}
		return;
	}
	if (sc->inflight + sc->nback >= SRV_HOLD_MAX || !srv_slot_borrow(s, sc)) {
		srv_slot_post(s, i);
		if (sc->inflight + sc->nback >= SRV_HOLD_MAX)
			snprintf(why, sizeof(why),
				 "more than %d control messages unanswered (it does not read the replies)",
				 SRV_HOLD_MAX);
		else
			snprintf(why, sizeof(why),
				 "over its share of the control slots: %d messages unanswered, "
				 "and the rest held by others",
				 sc->inflight + sc->nback);
		drop_soon(s, sc, why);
		return;
	}
	sl->owner = sc;
	sl->state = SLOT_QUEUED;
	sl->imm = sl->has_imm ? be32toh(wc->imm_data) : 0;
	sc->back[(sc->bhead + sc->nback++) % SRV_HOLD_MAX] = i;
	pump(s, sc);
}

/* One completion of the shared CQ, checked by the message channel (which
 * pair, of which posting). An error completion (a reply or a keepalive
 * probe the peer never acknowledged) drops its connection, and says why. */
static void on_wc(void *arg, struct rc_conn *c, const struct ibv_wc *wc)
{
	struct rc_server *s = arg;
	struct srv_conn *sc = c ? c->user : NULL;
	enum rc_op op = rc_wrid_op(wc->wr_id);
	struct rc_msgch_rx rx;
	struct rc_err e;
	int kind = rc_msgch_pool_wc(&s->pool.ch, wc, &rx, &e);

	if (kind == RC_MSGCH_MSG || kind == RC_MSGCH_IMM) {
		on_recv(s, sc, wc, (int)rx.slot);
		return;
	}
	if (kind == -EBADMSG) {
		srv_slot_post(s, (int)rx.slot);
		if (sc)
			drop_soon(s, sc, e.msg);
		return;
	}
	/* A reply went (or failed): its slot takes the next request, unless
	 * it was posted again since (-ESTALE: its connection went). */
	if (kind == RC_MSGCH_SENT && s->pool.slot[rx.slot].state == SLOT_SENDING)
		srv_slot_release(s, (int)rx.slot);
	if (!sc)
		return;
	if (wc->status != IBV_WC_SUCCESS) {
		rc_wc_error(sc->c, wc, &e);
		drop_soon(s, sc, e.msg);
		return;
	}
	if (op == RC_OP_WRITE)
		sc->probing = false;
	else if (op == RC_OP_SEND)
		pump(s, sc);
}

bool srv_poll_cq(struct rc_server *s)
{
	/* Bounded: one busy peer does not keep the loop from the others'
	 * CM events, the keepalive and the flush. */
	rc_shared_drain(s->sh, s->pool.n, on_wc, s);
	return !s->sh->armed;
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

	snprintf(why, sizeof(why), "it did not prove its token within %d ms", SRV_AUTH_MS);
	for (int i = s->nconns - 1; i >= 0; i--)
		if (srv_auth_late(s->conns[i], now))
			drop_unproved(s, s->conns[i], false, why);
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

/* A fence's: the requests that came in on every connection, handled before
 * it takes hold; those of the connection whose request is being handled
 * (it is the fence's) wait in its backlog. Not again from inside itself (a
 * fence in another connection's queue). */
static void drain_all(void *arg, const void *skip)
{
	struct rc_server *s = arg;

	(void)skip; /* its handling flag keeps its requests waiting */
	if (s->draining)
		return;
	s->draining = true;
	srv_poll_cq(s);
	s->draining = false;
}

/* A PULL or HASH the worker finished: its answer goes in its slot. */
static void mig_reply(void *arg, const void *conn, int slot, const void *msg, size_t len)
{
	struct rc_server *s = arg;
	struct srv_conn *sc = (struct srv_conn *)conn;

	if (!conn_live(s, sc) || slot < 0 || slot >= s->pool.n || len > RC_CTRL_MSG_MAX ||
	    s->pool.slot[slot].owner != sc || s->pool.slot[slot].state != SLOT_BUSY)
		return;
	memcpy(rc_msgch_reply_buf(&s->pool.ch, (uint32_t)slot), msg, len);
	if (srv_slot_reply(s, sc, slot, (uint32_t)len))
		srv_slot_release(s, slot);
	else
		return;
	pump(s, sc);
}
