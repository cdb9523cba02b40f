// SPDX-License-Identifier: MIT
/*
 * A hostile kvxfer source: plain librdmacm and libibverbs for the QPs,
 * rdmactl's own encoders for the messages. It tries what a stranger on the
 * fabric, or a broken source, would try against `rdmactl kvxfer serve`,
 * and prints what came back, one line per finding, for the tests to read.
 *
 *   kv_hostile MODE HOST PORT [-T TOKEN] [-f FIELD=VALUE]... [-s SECONDS] [-R HOST]
 *
 * -T TOKEN answers the decode rank's challenge with TOKEN (protocol 7: the
 * proof in HELLO, the data QPs' proofs under the session's secret).
 *
 * The geometry is that of tests/rxe/kvxfer.bats (paged, nhd, bf16, 4
 * layers, 8 heads x 16 dims, 4 tokens a page, TP 1 -> 1), source rank 0;
 * -f changes one HELLO field (layers, kv_heads, head_dim, src_tp, dst_tp,
 * src_page_tokens, dst_page_tokens, dtype, layout, page_layout, rank,
 * nqps).
 *
 * MODE:
 *   hello       HELLO, print WELCOME (base, rkey) or ERROR, then whether the
 *               decode rank closed the connection
 *   hb-first    heartbeats instead of HELLO, every 100 ms, for -s seconds
 *   squat       connect the control QP and stay silent for -s seconds
 *   data-first  connect a data QP without any HELLO
 *   wrong-proof HELLO, then data QP 1 proven under a secret one bit off
 *               (print its rejection), then with the right one, then the
 *               wrong one again and the right one again (both rejected)
 *   dup-req     HELLO, one data QP, REQ, then the same REQ every 100 ms and
 *               never a write: print the CANCEL that ends it
 *   ctrl-imm    HELLO, then an RDMA WRITE with immediate on the control QP
 *               (print whether it completed)
 *   ctrl-rdma   HELLO, then an RDMA READ and an RDMA WRITE of the pool, from
 *               the WELCOME, each on a control QP of its own that sent no
 *               HELLO: print whether each completed
 *   one-qp      HELLO with 2 data QPs, REQ, then layer 0's two
 *               notifications both on data QP 1: print what ends it
 *   v2          connect as a source of kvxfer protocol 2 (an older rdmactl,
 *               its connect data marked "KVX2"): print the rejection
 *   other-rail  HELLO, then data QP 1 to the decode rank's other rail (-R
 *               HOST, an address it also listens on: print its rejection),
 *               then data QP 1 to the control QP's own address
 *
 * Lines: "welcome base=0x... rkey=0x...", "error code=N text=...",
 * "closed after MS ms", "open after MS ms", "rejected: ...", "alloc req=N",
 * "cancel req=N code=N text=...", "done req=N". Exit 0 when the exchange
 * ran (whatever the decode rank answered), 1 on a local failure, 2 usage.
 */
#include <endian.h>
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

#define NRECV 8

struct qp {
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	unsigned char *buf; /* NRECV receive slots, then one send slot */
	uint32_t seq;
};

static const char *host, *port;
static const char *rail2; /* -R: the decode rank's other rail */
static bool old_proto;    /* v2: the previous protocol's connect data */

/* Every QP opened, closed at exit, so that a sanitizer build reports only
 * what the decode rank leaks. */
static struct qp *opened[6];
static int nopened;

static void close_all(void)
{
	for (int i = 0; i < nopened; i++) {
		struct qp *q = opened[i];

		if (q->mr)
			rdma_dereg_mr(q->mr);
		if (q->id)
			rdma_destroy_ep(q->id);
		free(q->buf);
	}
	nopened = 0;
}
static char token[RC_TOKEN_MAX + 1];
static uint32_t session;
static struct rc_auth auth;           /* the control QP's exchange */
static uint8_t data_key[RC_AUTH_KEY]; /* the session's data-QP secret */

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int fail(const char *what)
{
	fprintf(stderr, "kv_hostile: %s: %s\n", what, strerror(errno));
	return -1;
}

/* The accept of control QP q: the session's nonces, the data QPs' secret. */
static void challenged(struct qp *q, const struct kv_hello_pd *pd)
{
	struct kv_accept_pd acc;

	kv_auth_start(&auth, pd, (uint16_t)atoi(port));
	if (q->id->event && !kv_acc_decode(q->id->event->param.conn.private_data,
					   q->id->event->param.conn.private_data_len, &acc))
		memcpy(auth.sn, acc.nonce, RC_AUTH_NONCE);
	kv_data_key(token, &auth, data_key);
}

/* Connect one QP with the kvxfer connect data; 1 when the decode rank
 * rejected it (printed), 0 connected, -1 a local failure. */
static int open_qp(struct qp *q, uint32_t qpi, uint32_t nqps)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct ibv_qp_init_attr attr = { .cap = { .max_send_wr = 16,
						  .max_recv_wr = NRECV,
						  .max_send_sge = 1,
						  .max_recv_sge = 1 },
					 .sq_sig_all = 1 };
	struct kv_hello_pd pd = { .rank = 0, .qp = qpi, .nqps = nqps, .session = session };
	unsigned char pdb[KV_PD_LEN];
	struct rdma_conn_param cp = { .initiator_depth = 1,
				      .responder_resources = 1,
				      .retry_count = 7,
				      .rnr_retry_count = 7,
				      .private_data = pdb,
				      .private_data_len = KV_PD_LEN };
	int rc;

	memset(q, 0, sizeof(*q));
	if (nopened < (int)(sizeof(opened) / sizeof(opened[0])))
		opened[nopened++] = q;
	if (qpi)
		kv_pd_data_prove(&pd, data_key);
	else
		memcpy(pd.nonce, auth.cn, RC_AUTH_NONCE);
	kv_pd_encode(&pd, pdb, sizeof(pdb));
	if (old_proto) {
		uint32_t v2 = htole32(KV_PD_MAGIC_V2);

		memcpy(pdb, &v2, sizeof(v2));
	}
	if (rdma_getaddrinfo(host, port, &hints, &res))
		return fail("rdma_getaddrinfo");
	rc = rdma_create_ep(&q->id, res, NULL, &attr);
	rdma_freeaddrinfo(res);
	if (rc)
		return fail("rdma_create_ep");
	q->buf = calloc(NRECV + 1, KV_MSG_MAX);
	if (!q->buf || !(q->mr = rdma_reg_msgs(q->id, q->buf, (NRECV + 1) * KV_MSG_MAX)))
		return fail("rdma_reg_msgs");
	for (int i = 0; i < NRECV; i++)
		if (rdma_post_recv(q->id, (void *)(uintptr_t)i, q->buf + i * KV_MSG_MAX, KV_MSG_MAX,
				   q->mr))
			return fail("rdma_post_recv");
	if (rdma_connect(q->id, &cp)) {
		printf("rejected: data QP %u: %s\n", qpi, strerror(errno));
		return 1;
	}
	if (!qpi) /* the decode rank's challenge: its nonce; its proof goes unchecked */
		challenged(q, &pd);
	/* The CM events (a disconnect) are read without blocking. */
	fcntl(q->id->channel->fd, F_SETFL, fcntl(q->id->channel->fd, F_GETFL) | O_NONBLOCK);
	return 0;
}

static bool disconnected(struct qp *q)
{
	struct rdma_cm_event *ev;
	bool gone = false;

	while (rdma_get_cm_event(q->id->channel, &ev) == 0) {
		gone |= ev->event == RDMA_CM_EVENT_DISCONNECTED;
		rdma_ack_cm_event(ev);
	}
	return gone;
}

static int send_msg(struct qp *q, struct kv_msg *m)
{
	unsigned char *b = q->buf + NRECV * KV_MSG_MAX;
	struct ibv_wc wc;
	int len, n;
	double end = now_ms() + 5000;

	m->seq = ++q->seq;
	len = kv_msg_encode(m, b, KV_MSG_MAX);
	if (len < 0 || rdma_post_send(q->id, NULL, b, (size_t)len, q->mr, 0))
		return fail("rdma_post_send");
	while ((n = ibv_poll_cq(q->id->send_cq, 1, &wc)) == 0 && now_ms() < end)
		usleep(1000);
	return n == 1 && wc.status == IBV_WC_SUCCESS ? 0 : -1;
}

/* The next control message within ms: 1 with *m, 0 none, -1 the QP failed. */
static int recv_msg(struct qp *q, struct kv_msg *m, uint32_t *pages, double ms)
{
	double end = now_ms() + ms;
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(q->id->recv_cq, 1, &wc)) == 0 && now_ms() < end)
		usleep(1000);
	if (n <= 0)
		return 0;
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "kv_hostile: receive: %s\n", ibv_wc_status_str(wc.status));
		return -1;
	}
	n = (int)(uintptr_t)wc.wr_id;
	if (kv_msg_decode(q->buf + n * KV_MSG_MAX, wc.byte_len, m, pages, KV_MAX_REQ_PAGES)) {
		fprintf(stderr, "kv_hostile: a control message that does not decode\n");
		return -1;
	}
	rdma_post_recv(q->id, (void *)(uintptr_t)n, q->buf + n * KV_MSG_MAX, KV_MSG_MAX, q->mr);
	return 1;
}

static void print_msg(const struct kv_msg *m)
{
	switch (m->type) {
	case KV_MSG_WELCOME:
		printf("welcome base=0x%" PRIx64 " rkey=0x%x pool_pages=%u\n", m->u.welcome.base,
		       m->u.welcome.rkey, m->u.welcome.pool_pages);
		break;
	case KV_MSG_ERROR:
		printf("error code=%d text=%s\n", m->u.cancel.code, m->u.cancel.text);
		break;
	case KV_MSG_ALLOC:
		printf("alloc req=%u pages=%u\n", m->req, m->u.alloc.npages);
		break;
	case KV_MSG_CANCEL:
		printf("cancel req=%u code=%d text=%s\n", m->req, m->u.cancel.code,
		       m->u.cancel.text);
		break;
	case KV_MSG_DONE:
		printf("done req=%u status=%d\n", m->req, m->u.done.status);
		break;
	default:
		break;
	}
	fflush(stdout);
}

/* Wait (ms at most) for the decode rank to close the QP; heartbeats and
 * other messages are read meanwhile. */
static void wait_closed(struct qp *q, double t0, double ms)
{
	double end = now_ms() + ms;
	uint32_t pages[KV_MAX_REQ_PAGES];
	struct kv_msg m;

	while (now_ms() < end) {
		if (disconnected(q)) {
			printf("closed after %.0f ms\n", now_ms() - t0);
			return;
		}
		if (recv_msg(q, &m, pages, 10) == 1)
			print_msg(&m);
	}
	printf("open after %.0f ms\n", now_ms() - t0);
}

static int set_field(struct kv_msg *m, const char *fv)
{
	struct kv_geom *g = &m->u.hello.g;
	const char *eq = strchr(fv, '=');
	uint32_t v;

	if (!eq)
		return -1;
	v = (uint32_t)strtoul(eq + 1, NULL, 0);
#define F(name, lv) \
	if (!strncmp(fv, name "=", strlen(name) + 1)) { \
		lv = v; \
		return 0; \
	}
	F("layers", g->layers);
	F("kv_heads", g->kv_heads);
	F("head_dim", g->head_dim);
	F("src_tp", g->src_tp);
	F("dst_tp", g->dst_tp);
	F("src_page_tokens", g->src_page_tokens);
	F("dst_page_tokens", g->dst_page_tokens);
	F("dtype", g->dtype);
	F("layout", g->layout);
	F("page_layout", g->page_layout);
	F("rank", m->u.hello.rank);
	F("nqps", m->u.hello.nqps);
#undef F
	return -1;
}

static struct kv_msg hello_msg(uint32_t nqps)
{
	struct kv_msg m = { .type = KV_MSG_HELLO };

	m.u.hello.nqps = nqps;
	m.u.hello.session = session;
	m.u.hello.g = (struct kv_geom){ .layout = KV_LAYOUT_PAGED,
					.page_layout = KV_PAGE_NHD,
					.dtype = KV_DT_BF16,
					.layers = 4,
					.kv_heads = 8,
					.head_dim = 16,
					.src_tp = 1,
					.dst_tp = 1,
					.src_page_tokens = 4,
					.dst_page_tokens = 4 };
	return m;
}

/* HELLO and its answer; 1 welcomed (*w filled), 0 refused or silent. */
static int handshake(struct qp *c, struct kv_msg *hello, struct kv_msg *w)
{
	uint32_t pages[KV_MAX_REQ_PAGES];
	double end = now_ms() + 10000;

	/* Not acknowledged is not lost: the decode rank may have read it, answered
	 * and closed before its acknowledgement came back. The answer decides. */
	if (send_msg(c, hello))
		fprintf(stderr, "kv_hostile: HELLO not acknowledged; reading the answer anyway\n");
	while (now_ms() < end) {
		int n = recv_msg(c, w, pages, 100);

		if (n < 0) {
			fprintf(stderr,
				"kv_hostile: the connection failed after HELLO, before an answer (%.0f ms)\n",
				now_ms() - (end - 10000));
			return -1;
		}
		if (n == 0 || w->type == KV_MSG_HB)
			continue;
		print_msg(w);
		return w->type == KV_MSG_WELCOME;
	}
	printf("no answer to HELLO\n");
	return 0;
}

/* Post an RDMA WRITE with immediate of no bytes. */
static int write_imm(struct qp *q, uint64_t raddr, uint32_t rkey, uint32_t imm)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htobe32(imm),
				  .wr.rdma = { .remote_addr = raddr, .rkey = rkey } },
			   *bad;

	return ibv_post_send(q->id->qp, &wr, &bad) ? fail("ibv_post_send") : 0;
}

/* q's one signalled work request's completion, within 5 s, printed as
 * "WHAT completed" or "WHAT refused: STATUS". */
static void print_completion(struct qp *q, const char *what)
{
	struct ibv_wc wc;
	double end = now_ms() + 5000;
	int n;

	while ((n = ibv_poll_cq(q->id->send_cq, 1, &wc)) == 0 && now_ms() < end)
		usleep(1000);
	if (n != 1)
		printf("%s: no completion\n", what);
	else if (wc.status == IBV_WC_SUCCESS)
		printf("%s completed\n", what);
	else
		printf("%s refused: %s\n", what, ibv_wc_status_str(wc.status));
	fflush(stdout);
}

/* ctrl-rdma: an RDMA READ, then an RDMA WRITE, of the pool's first 8 bytes
 * (base and rkey from the WELCOME of a proven control QP) on a control QP
 * of its own that never sent a HELLO. */
static int ctrl_rdma(struct qp *d, uint64_t base, uint32_t rkey)
{
	for (int k = 0; k < 2; k++) {
		struct ibv_sge sge;
		struct ibv_send_wr wr = { .sg_list = &sge,
					  .num_sge = 1,
					  .opcode = k ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
					  .send_flags = IBV_SEND_SIGNALED,
					  .wr.rdma = { .remote_addr = base, .rkey = rkey } },
				   *bad;
		int rc = open_qp(&d[k], 0, 1);

		if (rc)
			return rc < 0;
		sge = (struct ibv_sge){ .addr = (uintptr_t)(d[k].buf + NRECV * KV_MSG_MAX),
					.length = 8,
					.lkey = d[k].mr->lkey };
		if (ibv_post_send(d[k].id->qp, &wr, &bad))
			return fail("ibv_post_send") < 0;
		print_completion(&d[k], k ? "RDMA WRITE on an unproven control QP"
					  : "RDMA READ on an unproven control QP");
	}
	return 0;
}

/* After REQ 0: what ends the request (CANCEL, DONE, or nothing in ms). */
static void until_end(struct qp *c, double ms, int resend_every_ms, struct kv_msg *req)
{
	uint32_t pages[KV_MAX_REQ_PAGES];
	double t0 = now_ms(), end = t0 + ms, next = t0 + resend_every_ms;
	struct kv_msg m;
	int dups = 0;

	while (now_ms() < end) {
		int n = recv_msg(c, &m, pages, 10);

		if (n < 0 || disconnected(c)) {
			printf("closed after %.0f ms\n", now_ms() - t0);
			return;
		}
		if (n == 1 && m.type != KV_MSG_HB && m.type != KV_MSG_ALLOC) {
			print_msg(&m);
			if (m.type == KV_MSG_CANCEL || m.type == KV_MSG_DONE) {
				printf("ended after %.0f ms, %d duplicate REQs\n", now_ms() - t0,
				       dups);
				return;
			}
		}
		if (resend_every_ms && now_ms() >= next) {
			struct kv_msg hb = { .type = KV_MSG_HB };

			next += resend_every_ms;
			send_msg(c, req);
			send_msg(c, &hb); /* alive, and holding the request */
			dups++;
		}
	}
	printf("not ended after %.0f ms, %d duplicate REQs\n", now_ms() - t0, dups);
}

/* Welcomed: data QP 1 proven under a secret one bit off, then the right
 * one, then each again (the slot taken: the wrong one refused all the same). */
static int wrong_proof(struct qp *d)
{
	static struct qp more[2];
	struct qp *q[4] = { &d[0], &d[1], &more[0], &more[1] };
	int rc;

	for (int i = 0; i < 4; i++) {
		bool wrong = i % 2 == 0;

		data_key[RC_AUTH_KEY - 1] ^= wrong;
		rc = open_qp(q[i], 1, 1);
		data_key[RC_AUTH_KEY - 1] ^= wrong;
		if (rc < 0)
			return 1;
		if (rc == 0)
			printf("data QP 1 accepted %s\n",
			       wrong ? "with a wrong proof" : "with the proof");
		fflush(stdout);
	}
	return 0;
}

/* Welcomed on one rail; data QP 1 to the other (-R), then to this one. */
static int other_rail(struct qp *d)
{
	const char *mine = host;
	int rc;

	if (!rail2) {
		fprintf(stderr, "kv_hostile: other-rail needs -R HOST\n");
		return 2;
	}
	host = rail2;
	rc = open_qp(&d[0], 1, 1);
	host = mine;
	if (rc < 0)
		return 1;
	if (rc == 0)
		printf("data QP 1 accepted on the other rail\n");
	if ((rc = open_qp(&d[1], 1, 1)) < 0)
		return 1;
	if (rc == 0)
		printf("data QP 1 accepted on the control QP's rail\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct kv_msg hello, w, m, req = { .type = KV_MSG_REQ, .req = 0, .u.request.tokens = 10 };
	uint32_t pages[KV_MAX_REQ_PAGES];
	const char *fields[16];
	int nf = 0, opt, rc;
	double secs = 3, t0;
	static struct qp c, d[2]; /* static: close_all runs after main returns */
	const char *mode;

	atexit(close_all);
	while ((opt = getopt(argc, argv, "T:f:s:R:")) != -1) {
		if (opt == 'T')
			snprintf(token, sizeof(token), "%s", optarg);
		else if (opt == 'f' && nf < 16)
			fields[nf++] = optarg;
		else if (opt == 's')
			secs = atof(optarg);
		else if (opt == 'R')
			rail2 = optarg;
		else
			goto usage;
	}
	if (argc - optind != 3)
		goto usage;
	mode = argv[optind];
	host = argv[optind + 1];
	port = argv[optind + 2];
	session = (uint32_t)getpid() * 2654435761u;
	if (rc_auth_nonce(auth.cn))
		return 1;
	hello = hello_msg(!strcmp(mode, "one-qp") ? 2 : 1);
	for (int i = 0; i < nf; i++)
		if (set_field(&hello, fields[i]))
			goto usage;

	if (!strcmp(mode, "data-first"))
		return open_qp(&d[0], 1, 1) < 0;
	old_proto = !strcmp(mode, "v2");
	/* The connect data keeps the mode's QPs: -f nqps= makes HELLO disagree. */
	if ((rc = open_qp(&c, 0, !strcmp(mode, "one-qp") ? 2 : 1)))
		return rc < 0;
	if (old_proto) {
		printf("accepted\n");
		return 0;
	}
	t0 = now_ms();
	if (!strcmp(mode, "squat") || !strcmp(mode, "hb-first")) {
		double end = t0 + secs * 1000;
		struct kv_msg hb = { .type = KV_MSG_HB };

		printf("connected\n");
		fflush(stdout);
		while (now_ms() < end && !disconnected(&c)) {
			if (!strcmp(mode, "hb-first"))
				send_msg(&c, &hb);
			usleep(100000);
		}
		printf("%s after %.0f ms\n", now_ms() < end ? "closed" : "open", now_ms() - t0);
		return 0;
	}
	rc_auth_mac(token, &auth, RC_AUTH_CLIENT, hello.u.hello.proof);
	rc = handshake(&c, &hello, &w);
	if (rc < 0)
		return 1;
	if (!strcmp(mode, "hello") || rc == 0) {
		wait_closed(&c, t0, 3000);
		return 0;
	}
	if (!strcmp(mode, "wrong-proof"))
		return wrong_proof(d);
	if (!strcmp(mode, "other-rail"))
		return other_rail(d);
	if (!strcmp(mode, "ctrl-rdma"))
		return ctrl_rdma(d, w.u.welcome.base, w.u.welcome.rkey);
	if (!strcmp(mode, "ctrl-imm")) {
		if (write_imm(&c, w.u.welcome.base, w.u.welcome.rkey, kv_imm(0, 0, 0, 0)))
			return 1;
		print_completion(&c, "RDMA WRITE with immediate on the control QP");
		wait_closed(&c, now_ms(), 5000);
		return 0;
	}
	for (uint32_t k = 0; k < hello.u.hello.nqps; k++)
		if (open_qp(&d[k], k + 1, hello.u.hello.nqps))
			return 1;
	if (send_msg(&c, &req))
		return 1;
	/* The pages: the request's slot and generation. */
	for (double end = now_ms() + 10000; now_ms() < end;) {
		if ((rc = recv_msg(&c, &m, pages, 100)) < 0)
			return 1;
		if (rc == 1 && m.type == KV_MSG_ALLOC)
			break;
		if (rc == 1 && m.type == KV_MSG_CANCEL) {
			print_msg(&m);
			return 0;
		}
	}
	if (m.type != KV_MSG_ALLOC) {
		printf("no ALLOC\n");
		return 0;
	}
	print_msg(&m);
	if (!strcmp(mode, "dup-req")) {
		until_end(&c, secs * 1000, 100, &req);
		return 0;
	}
	if (!strcmp(mode, "one-qp")) {
		uint32_t imm = kv_imm(m.u.alloc.gen, m.u.alloc.slot, 0, 0);

		if (write_imm(&d[0], w.u.welcome.base, w.u.welcome.rkey, imm) ||
		    write_imm(&d[0], w.u.welcome.base, w.u.welcome.rkey, imm))
			return 1;
		until_end(&c, secs * 1000, 0, &req);
		return 0;
	}
usage:
	fprintf(stderr,
		"usage: kv_hostile hello|hb-first|squat|data-first|dup-req|ctrl-imm|one-qp "
		"wrong-proof|v2|other-rail HOST PORT [-T TOKEN] [-f FIELD=VALUE]... [-s SECONDS] [-R HOST]\n");
	return 2;
}
