// SPDX-License-Identifier: MIT
/*
 * Many LIST requests back to back on one connection to `rdmactl register`:
 * each round posts COUNT requests at once, each from its own buffer and
 * with its own sequence number, before reading any reply; then every reply
 * must come back, be a whole region table equal to the first one, and
 * carry the sequence number of exactly one request. Only AHEAD receives
 * are posted at a time, each again once its reply is checked.
 *
 *   list_burst HOST PORT COUNT ROUNDS [TOKEN]
 *
 * With LIST_BURST_AHEAD=N, N receives are posted ahead instead (0: none,
 * a peer that never reads a reply: it waits for them until its timeout).
 * LIST_BURST_RNR_TIMER=T sets the RNR NAK delay this peer asks of the
 * server (the IB encoding: 0 is the longest, 655 ms).
 *
 * Prints "replies=N regions=K names=A,B,..." and exits 0 when every reply
 * was intact; prints what was wrong and exits 1 otherwise; 2 on usage.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/conn.h>
#include <rdmactl/ctrl.h>
#include <rdmactl/ops.h>
#include <rdmactl/parse.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/ctrl_core.h>
#include <rdmactl/client_core.h>

#define MAX_COUNT 256
/* Receives posted ahead: fewer than the requests, so that most replies meet
 * a receiver that is not ready and are sent again later, read again from
 * the server's memory (a server that reused a reply's buffer too early
 * would send another reply's bytes then). */
#define AHEAD 4

static int ahead = AHEAD;

struct bufs {
	unsigned char req[MAX_COUNT][RC_CTRL_HDR_LEN];
	unsigned char resp[MAX_COUNT][RC_CTRL_MSG_MAX];
};

static struct rc_region_desc first[RC_MAX_REGIONS];
static int nfirst = -1;

/* One reply: a LIST_RESP whose table equals the first reply's, and whose
 * sequence number is one of this round's not seen yet. */
static int check_reply(const unsigned char *msg, uint32_t len, uint32_t base, int count, bool *seen)
{
	struct rc_region_desc d[RC_MAX_REGIONS];
	struct rc_ctrl_hdr h;
	int n;

	if (rc_ctrl_decode_hdr(msg, len, &h) || h.type != RC_CTRL_LIST_RESP) {
		printf("a reply is not a region table (%u bytes)\n", len);
		return -1;
	}
	if (h.seq < base || h.seq >= base + (uint32_t)count || seen[h.seq - base]) {
		printf("a reply carries sequence %u: not one request's, or one answered twice\n",
		       h.seq);
		return -1;
	}
	seen[h.seq - base] = true;
	n = rc_ctrl_decode_list(msg, len, d, RC_MAX_REGIONS);
	if (n < 0) {
		printf("the reply to request %u does not decode\n", h.seq);
		return -1;
	}
	if (nfirst < 0) {
		memcpy(first, d, sizeof(d));
		nfirst = n;
		return 0;
	}
	if (n != nfirst) {
		printf("the reply to request %u lists %d regions, the first one %d\n", h.seq, n,
		       nfirst);
		return -1;
	}
	for (int i = 0; i < n; i++)
		if (strcmp(d[i].name, first[i].name) || d[i].addr != first[i].addr ||
		    d[i].length != first[i].length || d[i].rkey != first[i].rkey ||
		    d[i].access != first[i].access) {
			printf("the reply to request %u differs in region %d\n", h.seq, i);
			return -1;
		}
	return 0;
}

static int round_trip(struct rc_conn *c, struct bufs *b, uint32_t lkey, uint32_t base, int count)
{
	bool seen[MAX_COUNT] = { false };
	struct ibv_wc wc[16];
	int replies = 0, sent = 0, posted = count < ahead ? count : ahead, n;
	struct rc_err e;

	for (int i = 0; i < posted; i++)
		if (rc_post_recv(c, b->resp[i], RC_CTRL_MSG_MAX, lkey, (uint64_t)i, &e)) {
			printf("%s\n", e.msg);
			return -1;
		}
	for (int i = 0; i < count; i++) {
		rc_ctrl_encode_hdr(b->req[i], RC_CTRL_HDR_LEN, RC_CTRL_LIST_REQ, 0,
				   base + (uint32_t)i);
		if (rc_post_send(c, b->req[i], RC_CTRL_HDR_LEN, lkey, (uint64_t)i, &e)) {
			printf("%s\n", e.msg);
			return -1;
		}
	}
	while (replies < count || sent < count) {
		n = rc_poll(c, wc, 16, -1, &e);
		if (n == -ETIMEDOUT) {
			printf("%d of %d replies and %d of %d sends within %d ms\n", replies, count,
			       sent, count, c->timeout_ms);
			return -1;
		}
		if (n < 0) {
			printf("%s\n", e.msg);
			return -1;
		}
		for (int i = 0; i < n; i++) {
			int slot = (int)(wc[i].wr_id & RC_WRID_MASK);

			if (rc_wrid_op(wc[i].wr_id) == RC_OP_SEND) {
				sent++;
				continue;
			}
			if (rc_wrid_op(wc[i].wr_id) != RC_OP_RECV || wc[i].opcode != IBV_WC_RECV ||
			    slot >= count) {
				printf("an unexpected completion (opcode %d)\n", (int)wc[i].opcode);
				return -1;
			}
			if (check_reply(b->resp[slot], wc[i].byte_len, base, count, seen))
				return -1;
			replies++;
			/* Checked: the buffer takes a later reply. */
			if (posted < count && ahead) {
				if (rc_post_recv(c, b->resp[slot], RC_CTRL_MSG_MAX, lkey,
						 (uint64_t)slot, &e)) {
					printf("%s\n", e.msg);
					return -1;
				}
				posted++;
			}
		}
	}
	return replies;
}

int main(int argc, char **argv)
{
	struct rc_conn_opts o = { .rq_depth = 0, .timeout_ms = 20000 };
	struct rc_conn *c = NULL;
	struct ibv_mr *mr = NULL;
	struct bufs *b = NULL;
	int count, rounds, total = 0, rc = 1;
	struct rc_auth a;
	struct rc_err e;

	if (argc < 5 || argc > 6)
		goto usage;
	count = atoi(argv[3]);
	rounds = atoi(argv[4]);
	if (count < 1 || count > MAX_COUNT || rounds < 1)
		goto usage;
	if (getenv("LIST_BURST_AHEAD"))
		ahead = atoi(getenv("LIST_BURST_AHEAD"));
	if (ahead < 0 || ahead > MAX_COUNT)
		goto usage;
	o.sq_depth = count;
	o.rq_depth = count;
	/* Protocol 2's handshake first: the server answers nothing before. */
	if (rc_region_connect(argv[1], argv[2], argc == 6 ? argv[5] : NULL, RC_ROLE_DATA, &o, &c,
			      &a, &e)) {
		printf("%s\n", e.msg);
		return 1;
	}
	if (getenv("LIST_BURST_RNR_TIMER")) {
		struct ibv_qp_attr qa = { .min_rnr_timer =
						  (uint8_t)atoi(getenv("LIST_BURST_RNR_TIMER")) };

		if (ibv_modify_qp(c->qp, &qa, IBV_QP_MIN_RNR_TIMER))
			printf("cannot set the RNR timer\n");
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		goto out;
	mr = ibv_reg_mr(c->pd, b, sizeof(*b), IBV_ACCESS_LOCAL_WRITE);
	if (!mr) {
		printf("cannot register the buffers: %s\n", strerror(errno));
		goto out;
	}
	for (int r = 0; r < rounds; r++) {
		int got = round_trip(c, b, mr->lkey, 1 + (uint32_t)(r * count), count);

		if (got < 0)
			goto out;
		total += got;
	}
	printf("replies=%d regions=%d names=", total, nfirst);
	for (int i = 0; i < nfirst; i++)
		printf("%s%s", i ? "," : "", first[i].name);
	printf("\n");
	rc = 0;
out:
	if (mr)
		ibv_dereg_mr(mr);
	free(b);
	rc_conn_close(c);
	return rc;
usage:
	fprintf(stderr, "usage: list_burst HOST PORT COUNT ROUNDS [TOKEN]\n");
	return 2;
}
