// SPDX-License-Identifier: MIT
/*
 * The group at work: completions reaped from every connection in one place
 * (receives become mailbox entries or immediate-data counts), control
 * exchanges, an allgather and a barrier on a tree of the connections, and
 * waits that name the ranks they wait for.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ops.h>

#include "group_int.h"
#include "rdv_int.h"

#define SLICE_MS 100
/* wr_id user bit of a write's piece that is not its last: its completion
 * frees a send-queue slot but is not a write done. */
#define PIECE_NOT_LAST (1ULL << 40)

static void mark_dead(struct rdma_cm_event *ev)
{
	struct rc_conn *c = ev->id->context;
	enum rdma_cm_event_type t = ev->event;

	if (c && (t == RDMA_CM_EVENT_DISCONNECTED || t == RDMA_CM_EVENT_CONNECT_ERROR ||
		  t == RDMA_CM_EVENT_UNREACHABLE || t == RDMA_CM_EVENT_TIMEWAIT_EXIT)) {
		c->disconnected = true;
		if (c->user)
			((struct gpeer *)c->user)->dead = true;
	}
}

static void cm_events(struct rc_group *g)
{
	struct rdma_cm_event *ev;

	while (rc_listener_event(g->l, 0, &ev) == 0) {
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			rc_reject(ev->id, "rdmactl: the group is complete");
			rdma_ack_cm_event(ev);
			continue;
		}
		if (ev->id->context != g->l)
			mark_dead(ev);
		rdma_ack_cm_event(ev);
	}
	for (int k = 0; k < g->nconns; k++) {
		struct rc_conn *c = g->conns[k];

		while (c->ech && rc_conn_event(c, 0, &ev) == 0) {
			mark_dead(ev);
			rdma_ack_cm_event(ev);
		}
	}
}

int rc_group_msg_check(const void *buf, size_t byte_len, struct rc_err *err)
{
	const struct gmsg *m = buf;
	size_t hdr = offsetof(struct gmsg, data);

	if (byte_len < hdr || byte_len > sizeof(*m))
		return rc_err_set(err, EPROTO,
				  "a control message of %zu bytes (%zu to %zu expected)", byte_len,
				  hdr, sizeof(*m));
	if (m->len != byte_len - hdr)
		return rc_err_set(err, EPROTO, "a control message says %u bytes but %zu came",
				  m->len, byte_len - hdr);
	return 0;
}

static int on_recv(struct rc_group *g, int j, const struct ibv_wc *wc, struct rc_err *err)
{
	struct gpeer *p = &g->peers[j];
	int s = (int)(wc->wr_id & 0xffff);

	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		uint32_t imm = ntohl(wc->imm_data);
		unsigned ch = imm >> 24;

		if (ch >= IMM_CHANNELS)
			return rc_err_set(err, EPROTO,
					  "rank %d sent immediate data 0x%x on no channel", j, imm);
		p->imm[ch]++;
	} else {
		const struct gmsg *m = recv_slot(g, j, s);
		struct rc_err e;

		/* the length that came, not the previous message's stale bytes */
		if (rc_group_msg_check(m, wc->byte_len, &e))
			return rc_err_set(err, EPROTO, "rank %d: %s", j, e.msg);
		if (m->magic == FIN_MAGIC) {
			p->fin = true;
			return rc_post_recv(p->c, recv_slot(g, j, s), GMSG_SLOT, g->mr->lkey,
					    wc->wr_id, err);
		}
		if (m->magic == ABORT_MAGIC) {
			if (!g->aborted)
				snprintf(g->abort_msg, sizeof(g->abort_msg),
					 "rank %d gave up: %.*s", j,
					 (int)(m->len < RC_GROUP_MSG_MAX ? m->len
									 : RC_GROUP_MSG_MAX),
					 (const char *)m->data);
			g->aborted = true;
			return rc_post_recv(p->c, recv_slot(g, j, s), GMSG_SLOT, g->mr->lkey,
					    wc->wr_id, err);
		}
		if (p->box_n >= g->o.recv_depth) {
			/* a full box: the message waits in its receive slot, and
			 * the slot is posted again only once the box has room, so
			 * a sender ahead of this rank is held back by the link
			 * (receiver not ready) instead of failing the group */
			p->held[(p->held_head + p->held_n++) % g->o.recv_depth] = s;
			return 0;
		}
		p->box[(p->box_head + p->box_n) % g->o.recv_depth] = *m;
		p->box_n++;
	}
	return rc_post_recv(p->c, recv_slot(g, j, s), GMSG_SLOT, g->mr->lkey, wc->wr_id, err);
}

int group_progress(struct rc_group *g, int timeout_ms, struct rc_err *err)
{
	struct ibv_wc wc[32];
	int which = 0, n, rc;

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
		p->send_busy = false;
		return 0;
	}
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		int j = g->conn_rank[which];
		struct gpeer *p = &g->peers[j];

		switch (wc[i].opcode) {
		case IBV_WC_RECV:
		case IBV_WC_RECV_RDMA_WITH_IMM:
			if ((rc = on_recv(g, j, &wc[i], err)))
				return rc;
			break;
		default:
			p->sends_out--;
			if (rc_wrid_op(wc[i].wr_id) == RC_OP_SEND)
				p->send_busy = false;
			else if (!(wc[i].wr_id & PIECE_NOT_LAST))
				p->writes_done++;
			break;
		}
	}
	if (n == 0)
		cm_events(g);
	if (g->aborted)
		return rc_err_set(err, ECONNABORTED, "%s", g->abort_msg);
	return 0;
}

/* One slice of waiting: reap, or fail at the deadline. */
static int wait_slice(struct rc_group *g, double deadline, struct rc_err *err)
{
	double left = deadline - rc_now();

	if (left <= 0)
		return -ETIMEDOUT;
	return group_progress(g, left * 1000 < SLICE_MS ? (int)(left * 1000) + 1 : SLICE_MS, err);
}

static int peer_gone(struct rc_group *g, int j, const char *what, struct rc_err *err)
{
	if (g->peers[j].failed)
		return rc_err_set(err, ECONNRESET, "%s failed while %s: %s", g->peers[j].c->peer,
				  what, g->peers[j].why);
	return rc_err_set(err, ECONNRESET, "%s left the group while %s", g->peers[j].c->peer, what);
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
	return peer_gone(g, peer, what, err);
}

struct write_pieces {
	struct rc_group *g;
	int j;
	uint8_t *laddr;
	uint32_t lkey;
	uint64_t raddr;
	uint32_t rkey;
	int channel;
	uint32_t seq;
	double deadline;
	struct rc_err *err;
};

static int sq_room(struct write_pieces *w)
{
	struct rc_group *g = w->g;
	struct gpeer *p = &g->peers[w->j];
	int rc;

	while (p->sends_out >= g->o.sq_depth - 2) {
		rc = wait_slice(g, w->deadline, w->err);
		if (rc == -ETIMEDOUT)
			return rc_err_set(w->err, ETIMEDOUT,
					  "writes to %s did not complete within %d ms", p->c->peer,
					  g->o.timeout_ms);
		if (rc)
			return rc;
	}
	return 0;
}

static int write_piece(void *arg, uint64_t off, uint32_t len, bool last)
{
	struct write_pieces *w = arg;
	struct rc_group *g = w->g;
	struct gpeer *p = &g->peers[w->j];
	bool imm = last && w->channel >= 0;
	int rc;

	if ((rc = sq_room(w)))
		return rc;
	rc = rc_post_rdma(p->c, imm ? RC_OP_WRITE_IMM : RC_OP_WRITE,
			  w->laddr ? w->laddr + off : NULL, len, w->lkey, w->raddr + off, w->rkey,
			  (uint32_t)w->channel << 24 | (w->seq & 0xffffff),
			  (uint64_t)w->j | (last ? 0 : PIECE_NOT_LAST), true, w->err);
	if (!rc)
		p->sends_out++;
	return rc;
}

int rc_group_write_imm(struct rc_group *g, int j, void *laddr, uint64_t len, uint32_t lkey,
		       uint64_t raddr, uint32_t rkey, int channel, uint32_t seq, struct rc_err *err)
{
	struct gpeer *p = &g->peers[j];
	struct write_pieces w = { .g = g,
				  .j = j,
				  .laddr = laddr,
				  .lkey = lkey,
				  .raddr = raddr,
				  .rkey = rkey,
				  .channel = channel,
				  .seq = seq,
				  .deadline = rc_now() + g->o.timeout_ms / 1000.0,
				  .err = err };

	if (!p->c || channel < -1 || channel >= IMM_CHANNELS)
		return rc_err_set(err, EINVAL, "no connection to rank %d", j);
	if (p->dead && g->o.keep_going)
		return peer_gone(g, j, "writing to it", err);
	if (!p->max_msg)
		p->max_msg = rc_conn_max_msg(p->c);
	/* a block larger than the port's largest message goes in pieces;
	 * only the last carries the immediate data, and RC lands them in order */
	return rc_split_len(len, p->max_msg, write_piece, &w);
}

int rc_group_read(struct rc_group *g, int j, void *laddr, uint32_t len, uint32_t lkey,
		  uint64_t raddr, uint32_t rkey, struct rc_err *err)
{
	struct write_pieces w = { .g = g,
				  .j = j,
				  .deadline = rc_now() + g->o.timeout_ms / 1000.0,
				  .err = err };
	struct gpeer *p;
	int rc;

	if (j < 0 || j >= g->o.world || !g->peers[j].c)
		return rc_err_set(err, EINVAL, "no connection to rank %d", j);
	p = &g->peers[j];
	if (p->dead && g->o.keep_going)
		return peer_gone(g, j, "reading from it", err);
	if ((rc = sq_room(&w)))
		return rc;
	rc = rc_post_rdma(p->c, RC_OP_READ, laddr, len, lkey, raddr, rkey, 0, (uint64_t)j, true,
			  err);
	if (!rc)
		p->sends_out++;
	return rc;
}

uint64_t rc_group_imm_count(const struct rc_group *g, int peer, int channel)
{
	return g->peers[peer].imm[channel];
}

static int wait_imm(struct rc_group *g, const int *peers, int n, int channel,
		    const uint64_t *target, bool *have, double deadline, struct rc_err *err)
{
	for (;;) {
		bool all = true;
		char missing[256];
		int rc;

		for (int j = 0; j < g->o.world; j++)
			have[j] = true;
		for (int k = 0; k < n; k++) {
			int j = peers[k];

			if (g->peers[j].imm[channel] >= target[k])
				continue;
			have[j] = false;
			all = false;
		}
		if (all)
			return 0;
		rc = wait_slice(g, deadline, err);
		if (rc == -ETIMEDOUT) {
			ranks_missing(have, g->o.world, missing, sizeof(missing));
			return rc_err_set(err, ETIMEDOUT,
					  "no data from rank %s within %d ms (is it still running?)",
					  missing, g->o.timeout_ms);
		}
		if (rc)
			return rc;
		for (int k = 0; k < n; k++)
			if (!have[peers[k]] && g->peers[peers[k]].dead &&
			    (rc = group_progress(g, 0, err)))
				return rc;
		for (int k = 0; k < n; k++)
			if (!have[peers[k]] && g->peers[peers[k]].dead &&
			    g->peers[peers[k]].imm[channel] < target[k])
				return peer_gone(g, peers[k], "data from it was awaited", err);
	}
}

int rc_group_wait_imm(struct rc_group *g, const int *peers, int n, int channel,
		      const uint64_t *target, struct rc_err *err)
{
	double deadline = rc_now() + g->o.timeout_ms / 1000.0;
	bool *have = malloc((size_t)g->o.world * sizeof(bool));
	int rc = have ? wait_imm(g, peers, n, channel, target, have, deadline, err)
		      : rc_err_set(err, ENOMEM, "out of memory");

	free(have);
	return rc;
}

int rc_group_flush(struct rc_group *g, struct rc_err *err)
{
	double deadline = rc_now() + g->o.timeout_ms / 1000.0;

	for (int k = 0; k < g->nconns; k++) {
		struct gpeer *p = &g->peers[g->conn_rank[k]];

		while (p->sends_out > 0) {
			int rc = wait_slice(g, deadline, err);

			if (rc == -ETIMEDOUT)
				return rc_err_set(err, ETIMEDOUT,
						  "writes to %s did not complete within %d ms",
						  p->c->peer, g->o.timeout_ms);
			if (rc)
				return rc;
		}
	}
	return 0;
}

int group_send_msg(struct rc_group *g, int j, const void *data, size_t len, double deadline,
		   struct rc_err *err)
{
	struct gpeer *p = &g->peers[j];
	struct gmsg *m = send_slot(g, j);
	int rc;

	while (p->send_busy || p->sends_out >= g->o.sq_depth - 2) {
		rc = wait_slice(g, deadline, err);
		if (rc == -ETIMEDOUT)
			return rc_err_set(err, ETIMEDOUT, "a message to %s did not go within %d ms",
					  p->c->peer, g->o.timeout_ms);
		if (rc)
			return rc;
	}
	m->magic = GROUP_MAGIC;
	m->seq = g->seq;
	m->from = (uint32_t)g->o.rank;
	m->len = (uint32_t)len;
	memcpy(m->data, data, len);
	rc = rc_post_send(p->c, m, (uint32_t)(offsetof(struct gmsg, data) + len), g->mr->lkey,
			  (uint64_t)j, err);
	if (rc)
		return rc;
	p->send_busy = true;
	p->sends_out++;
	return 0;
}

/* The message at the head of peer j's box, checked (kind, round, sender,
 * length) and copied to out: 1, 0 when the box is empty, or -errno. A
 * message held back by a full box moves in. */
static int pop_msg(struct rc_group *g, int j, void *out, size_t len, struct rc_err *err)
{
	struct gpeer *p = &g->peers[j];
	const struct gmsg *m = &p->box[p->box_head];

	if (!p->box_n)
		return 0;
	if (m->magic != GROUP_MAGIC || m->seq != g->seq || m->len != len || m->from != (uint32_t)j)
		return rc_err_set(err, EPROTO,
				  "%s is out of step (message %u of %u bytes, expected %u of %zu)",
				  p->c->peer, m->seq, m->len, g->seq, len);
	memcpy(out, m->data, len);
	p->box_head = (p->box_head + 1) % g->o.recv_depth;
	p->box_n--;
	if (p->held_n) {
		int s = p->held[p->held_head];
		int rc;

		p->held_head = (p->held_head + 1) % g->o.recv_depth;
		p->held_n--;
		p->box[(p->box_head + p->box_n) % g->o.recv_depth] = *recv_slot(g, j, s);
		p->box_n++;
		rc = rc_post_recv(p->c, recv_slot(g, j, s), GMSG_SLOT, g->mr->lkey,
				  (uint64_t)j << 16 | (uint64_t)s, err);
		if (rc)
			return rc;
	}
	return 1;
}

int group_take_msg(struct rc_group *g, int j, void *out, size_t len, double deadline,
		   struct rc_err *err)
{
	struct gpeer *p = &g->peers[j];
	int got;

	while (!(got = pop_msg(g, j, out, len, err))) {
		int rc = wait_slice(g, deadline, err);

		if (rc == -ETIMEDOUT)
			return rc_err_set(err, ETIMEDOUT,
					  "no word from %s within %d ms (is it still running?)",
					  p->c->peer, g->o.timeout_ms);
		if (rc)
			return rc;
		/* gone: what it sent before leaving may still sit in the queue */
		if (!p->box_n && p->dead && (rc = group_progress(g, 0, err)))
			return rc;
		if (!p->box_n && p->dead)
			return peer_gone(g, j, "a message from it was awaited", err);
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

		while (p->send_busy && !(p->dead && skip_dead)) {
			rc = wait_slice(g, deadline, err);
			if (rc == -ETIMEDOUT)
				return rc_err_set(err, ETIMEDOUT,
						  "a message to %s was not acknowledged within %d ms",
						  p->c->peer, g->o.timeout_ms);
			if (rc)
				return rc;
		}
	}
	return 0;
}

int rc_group_exchange(struct rc_group *g, const void *mine, size_t len, void *theirs,
		      struct rc_err *err)
{
	double deadline;
	int rc;

	if ((rc = group_msg_round(g, len, &deadline, err)))
		return rc;
	for (int k = 0; k < g->nconns; k++)
		if ((rc = group_send_msg(g, g->conn_rank[k], mine, len, deadline, err)))
			return rc;
	for (int k = 0; k < g->nconns; k++) {
		int j = g->conn_rank[k];

		if ((rc = group_take_msg(g, j, (char *)theirs + (size_t)j * len, len, deadline, err)))
			return rc;
	}
	/* Our messages landed before we go on: a peer may leave right after
	 * this exchange, and a message still in its send queue would be lost. */
	return group_sends_acked(g, deadline, false, err);
}

/*
 * The allgather and the barrier run on the group's tree (group_tree): up,
 * each rank adds its children's values (each rank fills its own slot, so
 * the sum of a subtree is its values) and sends the sum to its parent; down,
 * the root's full vector goes back to every rank. As many rounds as the
 * tree is deep, each rank talking to its parent and children only; values
 * travel in chunks of one control message each.
 */
#define CHUNK_VALS (RC_GROUP_MSG_MAX / sizeof(uint64_t))

static size_t nchunks(size_t n)
{
	return n ? (n + CHUNK_VALS - 1) / CHUNK_VALS : 1;
}

static size_t chunk_len(size_t n, size_t c)
{
	size_t left = n - c * CHUNK_VALS;

	return (left < CHUNK_VALS ? left : CHUNK_VALS) * sizeof(uint64_t);
}

/* This rank's children in the tree, into kids (world of room). */
static int tree_kids(const struct rc_group *g, int *kids)
{
	int nk = 0;

	for (int j = 0; j < g->o.world; j++)
		if (g->parent[j] == g->o.rank)
			kids[nk++] = j;
	return nk;
}

static int send_vals(struct rc_group *g, int j, const uint64_t *vals, size_t n, double deadline,
		     struct rc_err *err)
{
	for (size_t c = 0; c < nchunks(n); c++) {
		int rc = group_send_msg(g, j, vals + c * CHUNK_VALS, chunk_len(n, c), deadline, err);

		if (rc)
			return rc;
	}
	return 0;
}

/* The chunks of every child, added into vals in whatever order they come:
 * waiting on one child while another's pile up would hold that one back. */
static int take_kids(struct rc_group *g, const int *kids, int nk, size_t *got, uint64_t *vals,
		     size_t n, double deadline, struct rc_err *err)
{
	uint64_t part[CHUNK_VALS];
	size_t want = nchunks(n);
	int left = nk;

	while (left > 0) {
		bool moved = false;
		int rc;

		for (int k = 0; k < nk; k++)
			while (got[k] < want) {
				size_t c = got[k], len = chunk_len(n, c);

				if ((rc = pop_msg(g, kids[k], part, len, err)) < 0)
					return rc;
				if (!rc)
					break;
				for (size_t i = 0; i < len / sizeof(uint64_t); i++)
					vals[c * CHUNK_VALS + i] += part[i];
				moved = true;
				left -= ++got[k] == want;
			}
		if (moved || !left)
			continue;
		rc = wait_slice(g, deadline, err);
		for (int k = 0; k < nk && rc == -ETIMEDOUT; k++)
			if (got[k] < want)
				return rc_err_set(err, ETIMEDOUT,
						  "no word from %s within %d ms (is it still running?)",
						  g->peers[kids[k]].c->peer, g->o.timeout_ms);
		if (rc)
			return rc;
		for (int k = 0; k < nk; k++) {
			struct gpeer *p = &g->peers[kids[k]];

			/* gone: what it sent before leaving may still sit in the queue */
			if (got[k] < want && !p->box_n && p->dead &&
			    (rc = group_progress(g, 0, err)))
				return rc;
			if (got[k] < want && !p->box_n && p->dead)
				return peer_gone(g, kids[k], "a message from it was awaited", err);
		}
	}
	return 0;
}

static int tree_round(struct rc_group *g, uint64_t *vals, size_t n, struct rc_err *err)
{
	int *kids = malloc((size_t)g->o.world * sizeof(int)), nk, up = g->parent[g->o.rank];
	size_t *got = calloc((size_t)g->o.world, sizeof(size_t));
	double deadline;
	int rc;

	if (!kids || !got) {
		rc = rc_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	if (g->depth < 0) {
		rc = rc_err_set(err, EPROTO, "the connection plan leaves ranks unreachable");
		goto out;
	}
	if ((rc = group_msg_round(g, chunk_len(n, 0), &deadline, err)))
		goto out;
	nk = tree_kids(g, kids);
	rc = take_kids(g, kids, nk, got, vals, n, deadline, err);
	if (!rc && up >= 0)
		rc = send_vals(g, up, vals, n, deadline, err);
	for (size_t c = 0; !rc && up >= 0 && c < nchunks(n); c++)
		rc = group_take_msg(g, up, vals + c * CHUNK_VALS, chunk_len(n, c), deadline, err);
	/* down: chunk by chunk to every child, so they move on together */
	for (size_t c = 0; !rc && c < nchunks(n); c++)
		for (int k = 0; !rc && k < nk; k++)
			rc = group_send_msg(g, kids[k], vals + c * CHUNK_VALS, chunk_len(n, c),
					    deadline, err);
	/* landed before we go on: a peer may leave right after */
	if (!rc)
		rc = group_sends_acked(g, deadline, false, err);
out:
	free(kids);
	free(got);
	return rc;
}

int rc_group_allgather_u64(struct rc_group *g, uint64_t mine, uint64_t *all, struct rc_err *err)
{
	uint64_t *vals = calloc((size_t)g->o.world, sizeof(uint64_t));
	int rc;

	if (!vals)
		return rc_err_set(err, ENOMEM, "out of memory");
	vals[g->o.rank] = mine;
	rc = tree_round(g, vals, (size_t)g->o.world, err);
	if (!rc)
		memcpy(all, vals, (size_t)g->o.world * sizeof(*all));
	free(vals);
	return rc;
}

int rc_group_barrier(struct rc_group *g, struct rc_err *err)
{
	uint64_t token = 0;
	double t0 = rc_now();
	int rc = tree_round(g, &token, 1, err);

	if (!rc && g->barrier_s < 0)
		g->barrier_s = rc_now() - t0;
	return rc;
}

/* Best effort: a message of its own kind to every live peer whose send slot
 * is free; a peer missed learns it from the timeout instead. */
static void post_to_all(struct rc_group *g, uint32_t magic, const char *data, size_t len)
{
	for (int k = 0; k < g->nconns; k++) {
		struct gpeer *p = &g->peers[g->conn_rank[k]];
		struct gmsg *m = send_slot(g, g->conn_rank[k]);

		if (p->dead || p->send_busy || p->sends_out >= g->o.sq_depth - 2)
			continue;
		m->magic = magic;
		m->seq = g->seq;
		m->from = (uint32_t)g->o.rank;
		m->len = (uint32_t)len;
		memcpy(m->data, data, len);
		if (rc_post_send(p->c, m, (uint32_t)(offsetof(struct gmsg, data) + len),
				 g->mr->lkey, (uint64_t)g->conn_rank[k], NULL) == 0) {
			p->send_busy = true;
			p->sends_out++;
		}
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
		while (g->peers[g->conn_rank[k]].send_busy && rc_now() < deadline)
			if (group_progress(g, 50, NULL) == -EIO)
				break; /* a failed connection completes nothing more */
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

		while (!p->dead && (!p->fin || p->send_busy) && rc_now() < deadline)
			if (group_progress(g, 50, NULL) && g->aborted)
				break;
	}
	g->o.keep_going = keep;
}

int rc_group_gather(struct rc_group *g, int root, const void *mine, size_t len, void *theirs,
		    bool *got, struct rc_err *err)
{
	double deadline;
	int rc;

	if ((rc = group_msg_round(g, len, &deadline, err)))
		return rc;
	if (g->o.rank != root) {
		struct gpeer *p = &g->peers[root];

		if (!p->c)
			return rc_err_set(err, EINVAL, "no connection to rank %d", root);
		if (p->dead)
			return peer_gone(g, root, "a report to it was due", err);
		if ((rc = group_send_msg(g, root, mine, len, deadline, err)))
			return rc;
		while (p->send_busy && !p->dead) {
			rc = wait_slice(g, deadline, err);
			if (rc == -ETIMEDOUT)
				return rc_err_set(err, ETIMEDOUT,
						  "a message to %s was not acknowledged within %d ms",
						  p->c->peer, g->o.timeout_ms);
			if (rc)
				return rc;
		}
		return p->dead ? peer_gone(g, root, "a report to it was due", err) : 0;
	}
	memcpy((char *)theirs + (size_t)root * len, mine, len);
	for (int j = 0; j < g->o.world; j++)
		got[j] = j == root;
	for (int k = 0; k < g->nconns; k++) {
		int j = g->conn_rank[k];
		struct rc_err e;

		/* A late rank's report may sit in the queue still: each peer gets
		 * a short grace past the common deadline. */
		double until = deadline > rc_now() + 0.5 ? deadline : rc_now() + 0.5;

		rc = group_take_msg(g, j, (char *)theirs + (size_t)j * len, len, until, &e);
		if (rc == -ECONNABORTED)
			return rc_err_set(err, ECONNABORTED, "%s", e.msg);
		got[j] = rc == 0;
		if (rc)
			snprintf((char *)theirs + (size_t)j * len, len, "%s", e.msg);
	}
	return 0;
}

int rc_group_bcast(struct rc_group *g, int root, void *buf, size_t len, struct rc_err *err)
{
	double deadline;
	int rc;

	if ((rc = group_msg_round(g, len, &deadline, err)))
		return rc;
	if (g->o.rank != root) {
		if (!g->peers[root].c)
			return rc_err_set(err, EINVAL, "no connection to rank %d", root);
		return group_take_msg(g, root, buf, len, deadline, err);
	}
	for (int k = 0; k < g->nconns; k++) {
		int j = g->conn_rank[k];

		if (g->peers[j].dead && g->o.keep_going)
			continue;
		if ((rc = group_send_msg(g, j, buf, len, deadline, err)) &&
		    !(g->o.keep_going && g->peers[j].dead))
			return rc;
	}
	return group_sends_acked(g, deadline, g->o.keep_going, err);
}
