/* SPDX-License-Identifier: MIT */
/* Inside libcore: the control channel both kvxfer engines use. */
#ifndef RDMACTL_KV_INT_H
#define RDMACTL_KV_INT_H

#include <rdmactl/conn.h>
#include <rdmactl/kv.h>
#include <rdmactl/ops.h>

#define KV_CHAN_RECVS 16
#define KV_CHAN_SENDS 32

/* The control QP's buffers: receives always posted, a ring of sends. */
struct kv_chan {
	struct rc_conn *c;
	struct ibv_mr *mr;
	unsigned char *mem;
	uint64_t sent, send_done;
	uint32_t seq;
	double last_rx, last_tx;
};

int kv_chan_init(struct kv_chan *ch, struct rc_conn *c, struct rc_err *err);
void kv_chan_fini(struct kv_chan *ch);
int kv_chan_send(struct kv_chan *ch, struct kv_msg *m, struct rc_err *err);
/* One successful completion of the channel's QP: 1 with *m filled for a
 * message (the receive is posted again), 0 for a send, -errno for a
 * malformed message. */
int kv_chan_wc(struct kv_chan *ch, const struct ibv_wc *wc, struct kv_msg *m, uint32_t *pages,
	       struct rc_err *err);

#endif
