// SPDX-License-Identifier: MIT
/*
 * The group's mailbox: completions reaped from every connection in one place
 * (receives become mailbox entries or immediate-data counts) with the CM
 * events, the waits that name the peer they wait for, control messages to
 * one peer and back, and the ABORT and FIN messages of giving up and
 * closing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ops.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/group_core.h>

#include "group_int.h"

#define SLICE_MS 100

/* A connection of the group that went: its peer is dead. */
static void mark_dead(const struct rc_cm_event *ev)
{
	if (ev->conn && ev->conn->user && (ev->kind == RC_CM_GONE || ev->kind == RC_CM_DEVICE_GONE))
		((struct gpeer *)ev->conn->user)->dead = true;
}

static void cm_events(struct rc_group *g)
{
	struct rc_cm_event ev;

	while (rc_listener_next(g->l, 0, &ev) == 0) {
		if (ev.kind == RC_CM_REQUEST)
			rc_cm_refuse(&ev, "rdmactl: the group is complete");
		else
			mark_dead(&ev);
	}
	while (rc_cm_poll(g->ech, &ev) == 0)
		mark_dead(&ev);
	for (int k = 0; k < g->nconns; k++)
		while (rc_cm_poll(g->conns[k]->ech, &ev) == 0)
			mark_dead(&ev);
}

static int on_recv(struct rc_group *g, int j, const struct ibv_wc *wc, struct rc_err *err)
{
	struct gpeer *p = &g->peers[j];
	struct rc_msgch_rx rx;
	struct rc_err e;
	int k = rc_msgch_wc(&g->ch, p->slot, wc, &rx, &e), rc;

	/* the length that came (rc_msgch_wc checks it against the slot), not
	 * the previous message's stale bytes */
	if (k == -EBADMSG)
		return rc_err_set(err, EPROTO, "rank %d: %s", j, e.msg);
	if (k < 0)
		return rc_err_set(err, -k, "%s", e.msg);
	if (k == RC_MSGCH_IMM) {
		uint32_t imm = ntohl(wc->imm_data);
		unsigned ch = imm >> 24;

		if (ch >= IMM_CHANNELS)
			return rc_err_set(err, EPROTO,
					  "rank %d sent immediate data 0x%x on no channel", j, imm);
		p->imm[ch]++;
	} else if ((rc = group_on_msg(g, j, rx.data, rx.len, err))) {
		return rc;
	}
	/* copied out: its receive slot goes back at once, for any peer's next
	 * message (a shared slot) */
	return rc_msgch_repost(&g->ch, rx.slot, err);
}

int group_on_wc(struct rc_group *g, int j, const struct ibv_wc *wc, struct rc_err *err)
{
	struct gpeer *p = &g->peers[j];
	int rc;

	switch (wc->opcode) {
	case IBV_WC_RECV:
	case IBV_WC_RECV_RDMA_WITH_IMM:
		return on_recv(g, j, wc, err);
	default:
		/* a failed peer's sends were let go already */
		if (rc_wrid_op(wc->wr_id) == RC_OP_SEND) {
			p->sends_out--;
			if (!p->failed && (rc = rc_msgch_wc(&g->ch, p->slot, wc, NULL, err)) < 0)
				return rc;
			return 0;
		}
		rc_pipe_complete(&p->pipe, wc->wr_id & RC_WRID_MASK, NULL);
		if (!(wc->wr_id & PIECE_NOT_LAST))
			p->writes_done++;
		return 0;
	}
}

int group_progress(struct rc_group *g, int timeout_ms, struct rc_err *err)
{
	struct ibv_wc wc[32];
	int which = 0, n, rc;

	if (g->fab)
		return group_fab_progress(g, timeout_ms, err);
	if (g->nconns == 0)
		return 0;
	/* keep_going reaps one completion at a time: an error completion then
	 * loses no successful one of the same poll, and fails its peer only. */
	which = -1;
	n = rc_poll_any(g->conns, g->nconns, wc, g->o.keep_going ? 1 : 32, timeout_ms, &which, err);
	if (n == -ETIMEDOUT)
		n = 0;
	/* which is set for an error completion only (-EIO, or -EACCES for a
	 * remote access error: a peer that is going away may have released
	 * its memory before its connection) */
	if (n < 0 && g->o.keep_going && which >= 0) {
		struct gpeer *p = &g->peers[g->conn_rank[which]];

		if (!p->failed)
			snprintf(p->why, sizeof(p->why), "%s",
				 err ? err->msg : "a completion failed");
		p->failed = p->dead = true;
		p->sends_out = 0;
		rc_pipe_abandon(&p->pipe);
		rc_msgch_sends_lost(&g->ch, p->slot);
		return 0;
	}
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		if ((rc = group_on_wc(g, g->conn_rank[which], &wc[i], err)))
			return rc;
	if (n == 0)
		cm_events(g);
	if (g->aborted)
		return rc_err_set(err, ECONNABORTED, "%s", g->abort_msg);
	return 0;
}

/* One slice of waiting: reap, or fail at the deadline. */
int group_wait_slice(struct rc_group *g, double deadline, struct rc_err *err)
{
	double left = deadline - rc_now();

	if (left <= 0)
		return -ETIMEDOUT;
	return group_progress(g, left * 1000 < SLICE_MS ? (int)(left * 1000) + 1 : SLICE_MS, err);
}

int group_peer_gone(struct rc_group *g, int j, const char *what, struct rc_err *err)
{
	if (g->peers[j].failed)
		return rc_err_set(err, ECONNRESET, "%s failed while %s: %s",
				  gpeer_name(&g->peers[j]), what, g->peers[j].why);
	return rc_err_set(err, ECONNRESET, "%s left the group while %s", gpeer_name(&g->peers[j]),
			  what);
}

int rc_group_poll(struct rc_group *g, int timeout_ms, struct rc_err *err)
{
	return group_progress(g, timeout_ms, err);
}

bool rc_group_peer_alive(const struct rc_group *g, int peer)
{
	return peer >= 0 && peer < g->o.world && g->peers[peer].c && !g->peers[peer].dead;
}

uint64_t rc_group_writes_done(const struct rc_group *g, int peer)
{
	return g->peers[peer].writes_done;
}

int rc_group_peer_error(struct rc_group *g, int peer, const char *what, struct rc_err *err)
{
	return group_peer_gone(g, peer, what, err);
}

int group_send_msg(struct rc_group *g, int j, const void *data, size_t len, double deadline,
		   struct rc_err *err)
{
	struct gpeer *p = &g->peers[j];
	struct gmsg *m;
	int rc;

	while (send_busy(g, p) || gpeer_sq_used(p) >= g->o.sq_depth - 2) {
		rc = group_wait_slice(g, deadline, err);
		if (rc == -ETIMEDOUT)
			return rc_err_set(err, ETIMEDOUT, "a message to %s did not go within %d ms",
					  gpeer_name(p), g->o.timeout_ms);
		if (rc)
			return rc;
	}
	if (g->fab)
		return group_fab_send(g, j, GROUP_MAGIC, data, len, err);
	m = rc_msgch_send_buf(&g->ch, p->slot);
	m->magic = GROUP_MAGIC;
	m->seq = g->seq;
	m->from = (uint32_t)g->o.rank;
	m->len = (uint32_t)len;
	memcpy(m->data, data, len);
	rc = rc_msgch_send(&g->ch, p->slot, (uint32_t)(offsetof(struct gmsg, data) + len), err);
	if (rc)
		return rc;
	p->sends_out++;
	return 0;
}

/* The message at the head of peer j's box, checked (kind, round, sender,
 * length) and copied to out: 1, 0 when the box is empty, or -errno. */
int group_pop_msg(struct rc_group *g, int j, void *out, size_t len, struct rc_err *err)
{
	struct gpeer *p = &g->peers[j];
	const struct gmsg *m;

	if (!p->box_n)
		return 0;
	m = &p->box[p->box_head];
	if (m->magic != GROUP_MAGIC || m->seq != g->seq || m->len != len || m->from != (uint32_t)j)
		return rc_err_set(err, EPROTO,
				  "%s is out of step (message %u of %u bytes, expected %u of %zu)",
				  gpeer_name(p), m->seq, m->len, g->seq, len);
	memcpy(out, m->data, len);
	p->box_head = (p->box_head + 1) % p->box_cap;
	p->box_n--;
	return 1;
}

int group_take_msg(struct rc_group *g, int j, void *out, size_t len, double deadline,
		   struct rc_err *err)
{
	struct gpeer *p = &g->peers[j];
	int got;

	while (!(got = group_pop_msg(g, j, out, len, err))) {
		int rc = group_wait_slice(g, deadline, err);

		if (rc == -ETIMEDOUT)
			return rc_err_set(err, ETIMEDOUT,
					  "no word from %s within %d ms (is it still running?)",
					  gpeer_name(p), g->o.timeout_ms);
		if (rc)
			return rc;
		/* gone: what it sent before leaving may still sit in the queue */
		if (!p->box_n && p->dead && (rc = group_progress(g, 0, err)))
			return rc;
		if (!p->box_n && p->dead)
			return group_peer_gone(g, j, "a message from it was awaited", err);
	}
	return got < 0 ? got : 0;
}

/* A round of control messages of len bytes: checked, numbered, and given
 * the group's timeout. */
int group_msg_round(struct rc_group *g, size_t len, double *deadline, struct rc_err *err)
{
	*deadline = rc_now() + g->o.timeout_ms / 1000.0;
	if (len > RC_GROUP_MSG_MAX)
		return rc_err_set(err, EINVAL, "a control message is limited to %d bytes",
				  RC_GROUP_MSG_MAX);
	g->seq++;
	return 0;
}

/* Every message this rank sent was acknowledged (skip_dead: but those to a
 * peer that died), by the deadline. */
int group_sends_acked(struct rc_group *g, double deadline, bool skip_dead, struct rc_err *err)
{
	int rc;

	for (int k = 0; k < g->nconns; k++) {
		struct gpeer *p = &g->peers[g->conn_rank[k]];

		while (send_busy(g, p) && !(p->dead && skip_dead)) {
			rc = group_wait_slice(g, deadline, err);
			if (rc == -ETIMEDOUT)
				return rc_err_set(err, ETIMEDOUT,
						  "a message to %s was not acknowledged within %d ms",
						  gpeer_name(p), g->o.timeout_ms);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* Best effort: a message of its own kind to every live peer whose send slot
 * is free; a peer missed learns it from the timeout instead. */
static void post_to_all(struct rc_group *g, uint32_t magic, const char *data, size_t len)
{
	for (int k = 0; k < g->nconns; k++) {
		struct gpeer *p = &g->peers[g->conn_rank[k]];
		struct gmsg *m;

		if (p->dead || send_busy(g, p) || gpeer_sq_used(p) >= g->o.sq_depth - 2)
			continue;
		if (g->fab) {
			group_fab_send(g, g->conn_rank[k], magic, data, len, NULL);
			continue;
		}
		m = rc_msgch_send_buf(&g->ch, p->slot);
		m->magic = magic;
		m->seq = g->seq;
		m->from = (uint32_t)g->o.rank;
		m->len = (uint32_t)len;
		memcpy(m->data, data, len);
		if (rc_msgch_send(&g->ch, p->slot, (uint32_t)(offsetof(struct gmsg, data) + len),
				  NULL) == 0)
			p->sends_out++;
	}
}

void rc_group_abort(struct rc_group *g, const char *why)
{
	double deadline = rc_now() + 0.5;
	size_t len = strlen(why);

	g->gave_up = true;
	post_to_all(g, ABORT_MAGIC, why, len > RC_GROUP_MSG_MAX ? RC_GROUP_MSG_MAX : len);
	/* Let the messages leave before the connections close. */
	for (int k = 0; k < g->nconns; k++)
		while (send_busy(g, &g->peers[g->conn_rank[k]]) && rc_now() < deadline)
			if (group_progress(g, 50, NULL) == -EIO)
				break; /* a failed connection completes nothing more */
}

void rc_group_abort_err(struct rc_group *g, const struct rc_err *err, const char *why)
{
	char text[sizeof(err->msg) + 64];

	rc_group_abort(g, err ? rc_err_text(err, NULL, text, sizeof(text)) : why ? why : "gave up");
}

/*
 * The closing handshake. A message is complete for its sender only when the
 * receiver's acknowledgment comes back; if that acknowledgment is lost, the
 * sender retransmits, and a receiver that has already destroyed its QP
 * answers nothing: the sender's last exchange then fails with "retry
 * counter exceeded" although its peer got everything. So a rank that ended
 * well tells each peer so (FIN, after its own sends completed) and keeps
 * its connections until each live peer's FIN came, or until timeout_ms.
 */
void group_fin(struct rc_group *g, int timeout_ms)
{
	double deadline = rc_now() + timeout_ms / 1000.0;
	bool keep = g->o.keep_going;

	if (g->aborted || g->gave_up)
		return;
	post_to_all(g, FIN_MAGIC, "", 0);
	/* a peer that fails now fails alone: the others' FINs still count */
	g->o.keep_going = true;
	for (int k = 0; k < g->nconns; k++) {
		struct gpeer *p = &g->peers[g->conn_rank[k]];

		while (!p->dead && (!p->fin || send_busy(g, p)) && rc_now() < deadline)
			if (group_progress(g, 50, NULL) && g->aborted)
				break;
	}
	g->o.keep_going = keep;
}
