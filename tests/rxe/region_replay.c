// SPDX-License-Identifier: MIT
/*
 * A replay of real bytes against `rdmactl register` (tests/rxe/auth.bats).
 *
 *   region_replay record ADDR PORT DIR [TOKEN]
 *   region_replay replay ADDR PORT DIR
 *   region_replay prove ADDR PORT TOKEN
 *
 * record: listen on ADDR:PORT, take one connect request and keep its
 * private data (DIR/req.bin), accept it, and keep the first message the
 * client sends (DIR/msg.bin, within 10 s). With TOKEN it answers as a
 * server holding that token would (the challenge of protocol 2, its proof
 * right), so an honest client sends its proof: the bytes an eavesdropper
 * of that exchange holds. Without, it is a listener that holds no token
 * (one a forged etcd record names): what it got is all a client gave away.
 * Prints "request: N bytes" and "first message: N bytes" (or "none"); it
 * waits $REPLAY_WAIT seconds for the request (default 60). SIGUSR1 says the
 * client has exited: each wait then ends half a second later at most.
 *
 * replay: connect to ADDR:PORT with DIR/req.bin as the request's private
 * data, send DIR/msg.bin, then a LIST request, and wait up to 5 s for answers (less once the server hung up).
 * With REPLAY_READ="ADDR RKEY" it first READs 8 bytes there, as a peer
 * that knows a region's descriptor would.
 *
 * prove: an honest client with TOKEN: the handshake, then LIST.
 *
 * Exit 0 when the server revealed something ("revealed: regions=N
 * names=...", or a READ that succeeded), 1 when it revealed nothing (it
 * refused the request, dropped the connection or did not answer), 2 on a
 * usage or local error.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/client.h>
#include <rdmactl/ops.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/ctrl_core.h>
#include <rdmactl/client_core.h>

/* SIGUSR1: the test's client has exited (tests/rxe/auth.bats's recorded()).
 * What it sent is on its way by then, so record's waits end GRACE after
 * the signal instead of at their full length. */
#define GRACE 0.5
static volatile sig_atomic_t client_gone;

static void on_usr1(int sig)
{
	(void)sig;
	client_gone = 1;
}

/* Whether a wait that ends at end is over: end passed, or GRACE since the
 * client was known to be gone. */
static bool over(double end)
{
	static double gone_at;
	double now = rc_now();

	if (client_gone && gone_at == 0)
		gone_at = now;
	return now >= end || (gone_at > 0 && now >= gone_at + GRACE);
}

struct buf {
	unsigned char in[2][RC_CTRL_MSG_MAX];
	unsigned char out[2][256];
	unsigned char rd[8];
	struct ibv_mr *mr;
};

static size_t slurp(const char *dir, const char *name, unsigned char *p, size_t cap)
{
	char path[512];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	if (!f)
		return 0;
	n = fread(p, 1, cap, f);
	fclose(f);
	return n;
}

static void spill(const char *dir, const char *name, const void *p, size_t n)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f) {
		fwrite(p, 1, n, f);
		fclose(f);
	}
}

static int post_recv_first(struct rc_conn *c, void *arg)
{
	struct buf *b = arg;

	b->mr = ibv_reg_mr(c->pd, b, sizeof(*b), IBV_ACCESS_LOCAL_WRITE);
	if (!b->mr)
		return -errno;
	return rc_post_recv(c, b->in[0], RC_CTRL_MSG_MAX, b->mr->lkey, 0, NULL);
}

/* The accept's private data: a challenge as a server with token makes it
 * (proof zeros without one); none for a request of protocol 1. */
static size_t challenge(const struct rc_cm_event *ev, uint16_t port, const char *token,
			unsigned char *out)
{
	struct rc_ctrl_challenge c = { 0 };
	struct rc_ctrl_hello h;
	struct rc_auth a;

	if (rc_ctrl_decode_hello(ev->param.private_data, ev->param.private_data_len, &h))
		return 0;
	rc_ctrl_auth_init(&a, (enum rc_ctrl_role)h.role, port);
	memcpy(a.cn, h.cn, RC_AUTH_NONCE);
	rc_auth_nonce(a.sn);
	memcpy(c.sn, a.sn, RC_AUTH_NONCE);
	c.flags = token ? RC_CHALLENGE_PROVES : 0;
	rc_auth_mac(token, &a, RC_AUTH_SERVER, c.proof);
	return (size_t)rc_ctrl_encode_challenge(out, RC_CHALLENGE_LEN, &c);
}

/* Whether the server hung up: its disconnect came (a dropped QP posts no
 * completion here until this side disconnects too). */
static bool hung_up(struct rc_conn *c)
{
	struct rdma_cm_event *ev;
	bool gone;

	if (rc_conn_event(c, 0, &ev))
		return false;
	gone = ev->event == RDMA_CM_EVENT_DISCONNECTED;
	rdma_ack_cm_event(ev);
	return gone;
}

static int record(const char *addr, const char *port, const char *dir, const char *token)
{
	static struct buf b;
	unsigned char chal[RC_CHALLENGE_LEN];
	struct rc_conn_opts o = { .sq_depth = 4, .rq_depth = 4, .timeout_ms = 10000 };
	struct rc_listener *l;
	struct rc_conn *c = NULL;
	struct rc_cm_event ev;
	struct ibv_wc wc;
	struct rc_err e;
	int n = -ETIMEDOUT, wait_s = getenv("REPLAY_WAIT") ? atoi(getenv("REPLAY_WAIT")) : 60;
	struct sigaction sa = { .sa_handler = on_usr1 };
	double end;
	bool got = false;

	if (rc_listen(addr, port, NULL, &l, &e)) {
		fprintf(stderr, "region_replay: %s\n", e.msg);
		return 2;
	}
	sigaction(SIGUSR1, &sa, NULL);
	printf("listening\n");
	fflush(stdout);
	end = rc_now() + wait_s;
	do
		got = !rc_listener_next(l, 100, &ev) && ev.kind == RC_CM_REQUEST;
	while (!got && !over(end));
	if (!got) {
		printf("request: none\n");
		rc_listener_close(l);
		return 1;
	}
	spill(dir, "req.bin", ev.param.private_data, ev.param.private_data_len);
	printf("request: %u bytes\n", (unsigned)ev.param.private_data_len);
	o.private_len = (uint8_t)challenge(&ev, l->port, token, chal);
	o.private_data = o.private_len ? chal : NULL;
	o.on_qp = post_recv_first;
	o.on_qp_arg = &b;
	if (rc_cm_accept(l, &ev, &o, &c, &e)) {
		rc_cm_refuse(&ev, "region_replay: accept failed");
		printf("accept failed: %s\n", e.msg);
	} else {
		end = rc_now() + 10;
		do
			n = rc_poll(c, &wc, 1, 100, &e);
		while (n == -ETIMEDOUT && !over(end));
	}
	if (n == 1 && wc.status == IBV_WC_SUCCESS) {
		spill(dir, "msg.bin", b.in[0], wc.byte_len);
		printf("first message: %u bytes\n", wc.byte_len);
	} else {
		printf("first message: none\n");
	}
	fflush(stdout);
	rc_conn_close(c);
	if (b.mr)
		ibv_dereg_mr(b.mr);
	rc_listener_close(l);
	return 0;
}

/* What came back: 0 once a region table did (printed), 1 when nothing
 * did before the connection went (the server hung up, its completions
 * read once more after) or 5 s passed. */
static int answers(struct rc_conn *c, struct buf *b)
{
	struct rc_region_desc d[RC_MAX_REGIONS];
	double end = rc_now() + 5;
	struct ibv_wc wc[4];
	struct rc_err e;
	bool gone = false;

	for (;;) {
		int n = rc_poll(c, wc, 4, gone ? 0 : 200, &e);

		if (n < 0 && n != -ETIMEDOUT && n != -EAGAIN) {
			printf("dropped: %s; nothing revealed\n", e.msg);
			return 1;
		}
		for (int i = 0; i < n; i++) {
			const unsigned char *m = b->in[(wc[i].wr_id & RC_WRID_MASK) & 1];
			int k;

			if (rc_wrid_op(wc[i].wr_id) != RC_OP_RECV)
				continue;
			k = rc_ctrl_decode_list(m, wc[i].byte_len, d, RC_MAX_REGIONS);
			if (k < 0) {
				printf("an answer of %u bytes, no region table\n", wc[i].byte_len);
				continue;
			}
			printf("revealed: regions=%d names=", k);
			for (int r = 0; r < k; r++)
				printf("%s%s", r ? "," : "", d[r].name);
			printf("\n");
			return 0;
		}
		if (gone) {
			printf("dropped: the server hung up; nothing revealed\n");
			return 1;
		}
		if (rc_now() >= end)
			break;
		gone = hung_up(c);
	}
	printf("no answer within 5 s; nothing revealed\n");
	return 1;
}

/* REPLAY_READ: 8 bytes READ at "ADDR RKEY": 0 when they came. */
static int read_first(struct rc_conn *c, struct buf *b)
{
	unsigned long long at;
	unsigned rkey;
	struct ibv_wc wc;
	struct rc_err e;
	int n;

	if (sscanf(getenv("REPLAY_READ"), "%llx %x", &at, &rkey) != 2)
		return 1;
	if (rc_post_rdma(c, RC_OP_READ, b->rd, 8, b->mr->lkey, at, rkey, 0, 0, true, &e))
		return 1;
	n = rc_poll(c, &wc, 1, 5000, &e);
	printf("read before the proof: %s\n", n == 1 ? "done" : e.msg);
	return n == 1 ? 0 : 1;
}

static int replay(const char *addr, const char *port, const char *dir)
{
	static struct buf b;
	unsigned char req[RC_TOKEN_MAX];
	size_t rn = slurp(dir, "req.bin", req, sizeof(req)),
	       mn = slurp(dir, "msg.bin", b.out[0], sizeof(b.out[0]));
	struct rc_conn_opts o = { .sq_depth = 4, .rq_depth = 4, .timeout_ms = 5000 };
	struct rc_conn *c;
	struct rc_err e;
	int rc = 1;

	o.private_data = rn ? req : NULL;
	o.private_len = (uint8_t)rn;
	if (rc_connect(addr, port, &o, &c, &e)) {
		printf("refused at connect: %s; nothing revealed\n", e.msg);
		return 1;
	}
	b.mr = ibv_reg_mr(c->pd, &b, sizeof(b), IBV_ACCESS_LOCAL_WRITE);
	if (!b.mr) {
		rc_conn_close(c);
		return 2;
	}
	if (getenv("REPLAY_READ") && !read_first(c, &b)) {
		rc = 0;
		goto out;
	}
	rc_ctrl_encode_hdr(b.out[1], RC_CTRL_HDR_LEN, RC_CTRL_LIST_REQ, 0, 77);
	if (rc_post_recv(c, b.in[0], RC_CTRL_MSG_MAX, b.mr->lkey, 0, &e) ||
	    rc_post_recv(c, b.in[1], RC_CTRL_MSG_MAX, b.mr->lkey, 1, &e) ||
	    (mn && rc_post_send(c, b.out[0], (uint32_t)mn, b.mr->lkey, 0, &e)) ||
	    rc_post_send(c, b.out[1], RC_CTRL_HDR_LEN, b.mr->lkey, 1, &e))
		printf("dropped: %s; nothing revealed\n", e.msg);
	else
		rc = answers(c, &b);
out:
	ibv_dereg_mr(b.mr);
	rc_conn_close(c);
	return rc;
}

static int prove(const char *addr, const char *port, const char *token)
{
	struct rc_client_opts o = { .token = token, .nconns = 1 };
	struct rc_target t = { 0 };
	struct rc_client *cl;
	struct rc_err e;
	int n;
	const struct rc_region_desc *d;

	snprintf(t.host, sizeof(t.host), "%s", addr);
	snprintf(t.port, sizeof(t.port), "%s", port);
	o.conn.timeout_ms = 5000;
	if (rc_client_open(&t, &o, &cl, &e)) {
		printf("refused: %s; nothing revealed\n", e.msg);
		return 1;
	}
	d = rc_client_regions(cl, &n);
	printf("revealed: regions=%d names=", n);
	for (int r = 0; r < n; r++)
		printf("%s%s", r ? "," : "", d[r].name);
	printf("\n");
	rc_client_close(cl);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 5 && !strcmp(argv[1], "record"))
		return record(argv[2], argv[3], argv[4], argc > 5 ? argv[5] : NULL);
	if (argc == 5 && !strcmp(argv[1], "replay"))
		return replay(argv[2], argv[3], argv[4]);
	if (argc == 5 && !strcmp(argv[1], "prove"))
		return prove(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: region_replay record ADDR PORT DIR [TOKEN]\n"
			"       region_replay replay ADDR PORT DIR\n"
			"       region_replay prove ADDR PORT TOKEN\n");
	return 2;
}
