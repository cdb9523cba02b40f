// SPDX-License-Identifier: MIT
/*
 * What a host that saw one honest kvxfer exchange on the wire can do with
 * its bytes (tests/rxe/kvxfer.bats): plain librdmacm and libibverbs.
 *
 *   kv_replay record HOST PORT FILE
 *   kv_replay replay HOST PORT FILE [SECONDS]
 *
 * record plays the decode rank at HOST:PORT for one connection as
 * `kvxfer serve` would, holding the token of $KV_REPLAY_TOKEN (its
 * challenge and proof in the accept, rdmactl's own encoders), and writes
 * the connect request's private data and the HELLO that follows, byte for
 * byte, to FILE; then it hangs up. It stands for a sniffer on the path:
 * the bytes are those an honest sender puts on the wire.
 *
 * replay sends FILE's connect request and HELLO to HOST:PORT byte for
 * byte, without the token, and prints what came back; after a WELCOME it
 * RDMA-writes 4 KiB at the pool's base on the control QP, with the rkey
 * it was given, and holds the connection SECONDS (5 by default).
 *
 * Lines: "listening", "recorded connect=N hello=M", "rejected: ...",
 * "accepted", "welcome base=0x... rkey=0x...", "error code=N text=...",
 * "wrote 4096 bytes at 0x...", "closed after MS ms", "open after MS ms",
 * "no answer to HELLO". Exit 0 when the exchange ran, 1 on a local
 * failure, 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdmactl/kv.h>
#include <rdmactl/kv_core.h>

#define NRECV 4
#define WRITE_LEN 4096

struct rec {
	uint32_t pd_len, hello_len;
	unsigned char pd[256];
	unsigned char hello[KV_MSG_MAX];
};

struct ep {
	struct rdma_cm_id *listen, *id;
	struct ibv_mr *mr;
	unsigned char *buf; /* NRECV receive slots, then one send slot */
};

static struct ep ep;

static void close_ep(void)
{
	if (ep.mr)
		rdma_dereg_mr(ep.mr);
	if (ep.id)
		rdma_destroy_ep(ep.id);
	if (ep.listen)
		rdma_destroy_ep(ep.listen);
	free(ep.buf);
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int fail(const char *what)
{
	fprintf(stderr, "kv_replay: %s: %s\n", what, strerror(errno));
	return 1;
}

static struct ibv_qp_init_attr qp_attr(void)
{
	return (struct ibv_qp_init_attr){ .cap = { .max_send_wr = 8,
						   .max_recv_wr = NRECV,
						   .max_send_sge = 1,
						   .max_recv_sge = 1 },
					  .sq_sig_all = 1 };
}

static int buffers(void)
{
	ep.buf = calloc(NRECV + 1, KV_MSG_MAX);
	if (!ep.buf || !(ep.mr = rdma_reg_msgs(ep.id, ep.buf, (NRECV + 1) * KV_MSG_MAX)))
		return fail("rdma_reg_msgs");
	for (int i = 0; i < NRECV; i++)
		if (rdma_post_recv(ep.id, (void *)(uintptr_t)i, ep.buf + i * KV_MSG_MAX, KV_MSG_MAX,
				   ep.mr))
			return fail("rdma_post_recv");
	return 0;
}

/* The next receive within ms: its bytes and length (0: none, -1: failed). */
static int recv_raw(double ms, unsigned char **at)
{
	double end = now_ms() + ms;
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(ep.id->recv_cq, 1, &wc)) == 0 && now_ms() < end)
		usleep(1000);
	if (n <= 0)
		return 0;
	if (wc.status != IBV_WC_SUCCESS)
		return -1;
	*at = ep.buf + (uintptr_t)wc.wr_id * KV_MSG_MAX;
	return (int)wc.byte_len;
}

/* The accept's private data, as `kvxfer serve` sends it for this request. */
static size_t challenge(const unsigned char *req, size_t len, unsigned char *out)
{
#ifdef KV_ACC_LEN
	const char *token = getenv("KV_REPLAY_TOKEN");
	struct kv_accept_pd acc;
	struct kv_hello_pd pd;
	struct rc_auth a;

	if (kv_pd_decode(req, len, &pd))
		return 0;
	kv_auth_start(&a, &pd, (uint16_t)atoi(getenv("KV_REPLAY_PORT")));
	rc_auth_nonce(a.sn);
	memcpy(acc.nonce, a.sn, sizeof(acc.nonce));
	rc_auth_mac(token, &a, RC_AUTH_SERVER, acc.proof);
	return (size_t)kv_acc_encode(&acc, out, KV_ACC_LEN);
#else
	(void)req, (void)len, (void)out; /* protocol 6 and before: no challenge */
	return 0;
#endif
}

static int record(const char *host, const char *port, const char *file)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP }, *res;
	struct ibv_qp_init_attr attr = qp_attr();
	struct rdma_conn_param cp = { .initiator_depth = 1, .responder_resources = 1 };
	static struct rec r;
	unsigned char acc[64], *hello = NULL;
	FILE *f;
	int n;

	setenv("KV_REPLAY_PORT", port, 1);
	if (rdma_getaddrinfo(host, port, &hints, &res))
		return fail("rdma_getaddrinfo");
	n = rdma_create_ep(&ep.listen, res, NULL, &attr);
	rdma_freeaddrinfo(res);
	if (n || rdma_listen(ep.listen, 1))
		return fail("rdma_listen");
	printf("listening\n");
	fflush(stdout);
	if (rdma_get_request(ep.listen, &ep.id))
		return fail("rdma_get_request");
	r.pd_len = ep.id->event->param.conn.private_data_len;
	if (r.pd_len > sizeof(r.pd))
		r.pd_len = sizeof(r.pd);
	memcpy(r.pd, ep.id->event->param.conn.private_data, r.pd_len);
	cp.private_data = acc;
	cp.private_data_len = (uint8_t)challenge(r.pd, r.pd_len, acc);
	if (buffers() || rdma_accept(ep.id, &cp))
		return fail("rdma_accept");
	if ((n = recv_raw(10000, &hello)) <= 0) {
		printf("no HELLO\n");
		return 0;
	}
	r.hello_len = (uint32_t)n;
	memcpy(r.hello, hello, (size_t)n);
	if (!(f = fopen(file, "wb")) || fwrite(&r, sizeof(r), 1, f) != 1 || fclose(f))
		return fail(file);
	printf("recorded connect=%u hello=%u\n", r.pd_len, r.hello_len);
	return 0;
}

static void print_msg(const struct kv_msg *m)
{
	if (m->type == KV_MSG_WELCOME)
		printf("welcome base=0x%" PRIx64 " rkey=0x%x\n", m->u.welcome.base,
		       m->u.welcome.rkey);
	else if (m->type == KV_MSG_ERROR)
		printf("error code=%d text=%s\n", m->u.cancel.code, m->u.cancel.text);
	else
		printf("answered %s\n", kv_msg_name(m->type));
	fflush(stdout);
}

/* Post one work request and wait for its completion (5 s). */
static int post_wait(struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	double end = now_ms() + 5000;
	int n;

	if (ibv_post_send(ep.id->qp, wr, &bad))
		return -1;
	while ((n = ibv_poll_cq(ep.id->send_cq, 1, &wc)) == 0 && now_ms() < end)
		usleep(1000);
	return n == 1 && wc.status == IBV_WC_SUCCESS ? 0 : -1;
}

/* 4 KiB of 0xee at the pool's base, with the rkey WELCOME gave. */
static void write_pool(const struct kv_msg *w)
{
	unsigned char *b = ep.buf + NRECV * KV_MSG_MAX;
	struct ibv_sge sge = { (uintptr_t)b, WRITE_LEN, ep.mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = w->u.welcome.base,
					       .rkey = w->u.welcome.rkey } };

	memset(b, 0xee, WRITE_LEN);
	if (post_wait(&wr) == 0)
		printf("wrote %d bytes at 0x%" PRIx64 "\n", WRITE_LEN, w->u.welcome.base);
	else
		printf("write failed\n");
	fflush(stdout);
}

static bool gone(void)
{
	struct rdma_cm_event *ev;
	bool g = false;

	while (rdma_get_cm_event(ep.id->channel, &ev) == 0) {
		g |= ev->event == RDMA_CM_EVENT_DISCONNECTED;
		rdma_ack_cm_event(ev);
	}
	return g;
}

/* After the answer: closed by the decode rank, or still open, within ms. */
static void hold(double t0, double ms)
{
	unsigned char *at;

	fcntl(ep.id->channel->fd, F_SETFL, fcntl(ep.id->channel->fd, F_GETFL) | O_NONBLOCK);
	while (now_ms() < t0 + ms) {
		if (gone()) {
			printf("closed after %.0f ms\n", now_ms() - t0);
			return;
		}
		if (recv_raw(10, &at) < 0) {
			printf("closed after %.0f ms\n", now_ms() - t0);
			return;
		}
	}
	printf("open after %.0f ms\n", now_ms() - t0);
}

static int replay_rec(const struct rec *r, const char *host, const char *port, double secs)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct ibv_qp_init_attr attr = qp_attr();
	struct rdma_conn_param cp = { .initiator_depth = 1,
				      .responder_resources = 1,
				      .retry_count = 7,
				      .rnr_retry_count = 7,
				      .private_data = r->pd,
				      .private_data_len = (uint8_t)r->pd_len };
	unsigned char *b, *at = NULL;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND };
	struct kv_msg m;
	static uint32_t pages[KV_MAX_REQ_PAGES];
	double t0;
	int n;

	if (rdma_getaddrinfo(host, port, &hints, &res))
		return fail("rdma_getaddrinfo");
	n = rdma_create_ep(&ep.id, res, NULL, &attr);
	rdma_freeaddrinfo(res);
	if (n || buffers())
		return fail("rdma_create_ep");
	if (rdma_connect(ep.id, &cp)) {
		printf("rejected: %s\n", strerror(errno));
		return 0;
	}
	printf("accepted\n");
	b = ep.buf + NRECV * KV_MSG_MAX;
	memcpy(b, r->hello, r->hello_len);
	sge = (struct ibv_sge){ (uintptr_t)b, r->hello_len, ep.mr->lkey };
	t0 = now_ms();
	if (post_wait(&wr))
		fprintf(stderr, "kv_replay: HELLO not acknowledged; reading the answer anyway\n");
	do {
		n = recv_raw(10000 - (now_ms() - t0), &at);
	} while (n > 0 && !kv_msg_decode(at, (size_t)n, &m, pages, KV_MAX_REQ_PAGES) &&
		 m.type == KV_MSG_HB);
	if (n <= 0 || kv_msg_decode(at, (size_t)n, &m, pages, KV_MAX_REQ_PAGES)) {
		if (n < 0)
			printf("closed after %.0f ms\n", now_ms() - t0);
		else
			printf("no answer to HELLO\n");
		return 0;
	}
	print_msg(&m);
	if (m.type == KV_MSG_WELCOME)
		write_pool(&m);
	hold(t0, secs * 1000);
	return 0;
}

int main(int argc, char **argv)
{
	static struct rec r;
	FILE *f;

	atexit(close_ep);
	if (argc == 5 && !strcmp(argv[1], "record"))
		return record(argv[2], argv[3], argv[4]);
	if ((argc != 5 && argc != 6) || strcmp(argv[1], "replay")) {
		fprintf(stderr, "usage: kv_replay record|replay HOST PORT FILE [SECONDS]\n");
		return 2;
	}
	if (!(f = fopen(argv[4], "rb")) || fread(&r, sizeof(r), 1, f) != 1)
		return fail(argv[4]);
	fclose(f);
	if (r.pd_len > sizeof(r.pd) || r.hello_len > sizeof(r.hello))
		return 2;
	return replay_rec(&r, argv[2], argv[3], argc == 6 ? atof(argv[5]) : 5);
}
