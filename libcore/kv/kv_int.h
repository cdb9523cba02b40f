/* SPDX-License-Identifier: MIT */
/* Inside libcore: the control channel both kvxfer engines use. */
#ifndef RDMACTL_KV_INT_H
#define RDMACTL_KV_INT_H

#include <rdmactl/conn.h>
#include <rdmactl/kv.h>
#include <rdmactl/ops.h>
#include <rdmactl/kv_core.h>
#include <rdmactl/msgch_core.h>

#define KV_CHAN_RECVS 16
#define KV_CHAN_SENDS 32

/* The control QP's buffers (one connection of the verbs message channel):
 * receives always posted, a ring of sends. */
struct kv_chan {
	struct rc_conn *c;
	struct rc_msgch mc;
	uint32_t seq;
	double last_rx, last_tx;
};

int kv_chan_init(struct kv_chan *ch, struct rc_conn *c, struct rc_err *err);
void kv_chan_fini(struct kv_chan *ch);
/* No send of the channel outstanding (nor any channel yet). */
bool kv_chan_idle(const struct kv_chan *ch);
int kv_chan_send(struct kv_chan *ch, struct kv_msg *m, struct rc_err *err);
/* One successful completion of the channel's QP: 1 with *m filled for a
 * message (the receive is posted again), 0 for a send, -errno for a
 * malformed message. */
int kv_chan_wc(struct kv_chan *ch, const struct ibv_wc *wc, struct kv_msg *m, uint32_t *pages,
	       struct rc_err *err);

/*
 * Filling or checking a whole request in slices (kv_geom.c), so that an
 * event loop goes back to its completions between them: every layer half,
 * tokens in order; page(arg, layer, half, i) is the address of page i.
 */
struct kv_walk {
	const struct kv_geom *g;
	bool dst, check;
	uint32_t rank, req, tokens, npages;
	char *(*page)(void *arg, uint32_t layer, uint32_t half, uint32_t i);
	void *arg;
};
struct kv_cursor {
	uint32_t layer, half, token;
};
/* From *c on, for about budget_s: 1 when the walk is complete, 0 when there
 * is more, -EBADMSG (check) with err naming the first wrong element, or
 * -ENOMEM. */
int kv_walk_slice(const struct kv_walk *w, struct kv_cursor *c, double budget_s, struct rc_err *err);

#endif
