// SPDX-License-Identifier: MIT
/*
 * A foreign client: plain librdmacm and libibverbs for the connection and
 * the data, rdmactl's encoders and proofs (ctrl_core.h, auth_core.h) only
 * for the handshake's bytes. It proves the wire contract of `rdmactl
 * register`: connect with rdma_cm (RC, RDMA_PS_TCP, initiator depth and
 * responder resources of 1); with a token, protocol 2's handshake (a HELLO
 * in the connect request, the server's proof in its accept checked, AUTH
 * sent and answered; no private data without one); then RDMA WRITE (or
 * READ) with addr and rkey from the JSON descriptor. FOREIGN_CLIENT_RAW=1
 * sends TOKEN itself as the private data instead, as protocol 1 did;
 * FOREIGN_CLIENT_SILENT=1 checks the server's proof, then sends nothing and
 * moves nothing (a peer that never proves its token).
 *
 *   foreign_client write|read HOST PORT ADDR RKEY OFFSET LENGTH [TOKEN]
 *
 * write: fills LENGTH bytes with "foreign:" followed by a byte counter and
 * writes them at ADDR+OFFSET; read: reads them back and prints them as hex.
 * With FOREIGN_CLIENT_BIND=ADDR it connects from that address; with
 * FOREIGN_CLIENT_HOLD=SECONDS it stays connected that long afterwards; with
 * FOREIGN_CLIENT_CONNS=N it opens N connections one after the other, each
 * doing the same (many peers held by one process, as many hosts would).
 * With FOREIGN_CLIENT_OWN=1 as well, connection K writes bytes of its own
 * ("foreign:" with K and a counter) at OFFSET + K * LENGTH, and once all N
 * are connected and have written, each reads its own bytes back and
 * compares: "verified=N" on stdout, or what differed and exit 1.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <rdmactl/ctrl_core.h>

#define MAX_CONNS 1100

struct peer {
	struct rdma_cm_id *id;
	bool connected; /* rdma_disconnect only then: on an id whose connect was refused it waits for an event that never comes */
	struct ibv_mr *mr;
	char *buf;
};

struct job {
	const char *host, *port, *token;
	uint64_t raddr, off;
	uint32_t rkey;
	size_t len;
	bool wr;
	bool own; /* FOREIGN_CLIENT_OWN: each connection its own bytes */
};

static int die(const char *what)
{
	fprintf(stderr, "foreign_client: %s: %s\n", what, strerror(errno));
	return 1;
}

static void release(struct peer *p)
{
	if (p->mr)
		rdma_dereg_mr(p->mr);
	free(p->buf);
	if (p->id) {
		if (p->connected)
			rdma_disconnect(p->id);
		rdma_destroy_ep(p->id);
	}
	*p = (struct peer){ 0 };
}

/* What connection k writes: "foreign:", then (own bytes) k, then a counter. */
static void fill(char *buf, size_t len, int k)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = i < 8 ? "foreign:"[i] : (char)(i & 0xff);
	for (size_t i = 8; k >= 0 && i < 12 && i < len; i++)
		buf[i] = (char)((unsigned)k >> (8 * (i - 8)));
}

static uint64_t off_of(const struct job *j, int k)
{
	return j->off + (j->own ? (uint64_t)k * j->len : 0);
}

/* Connection k reads its own bytes back and compares them: 0 when equal. */
static int readback(const struct job *j, struct peer *p, int k)
{
	char *want = malloc(j->len);
	struct ibv_wc wc;
	int rc = 1;

	if (!want)
		return die("malloc");
	fill(want, j->len, k);
	memset(p->buf, 0, j->len);
	if (rdma_post_read(p->id, NULL, p->buf, j->len, p->mr, IBV_SEND_SIGNALED,
			   j->raddr + off_of(j, k), j->rkey))
		rc = die("rdma_post_read");
	else if (rdma_get_send_comp(p->id, &wc) <= 0)
		rc = die("rdma_get_send_comp");
	else if (wc.status != IBV_WC_SUCCESS)
		fprintf(stderr, "foreign_client: connection %d: READ failed: %s\n", k,
			ibv_wc_status_str(wc.status));
	else if (memcmp(want, p->buf, j->len))
		fprintf(stderr, "foreign_client: connection %d read back other bytes\n", k);
	else
		rc = 0;
	free(want);
	return rc;
}

/* Protocol 2, once connected: the server's proof in the accept checked,
 * then AUTH, and its answer awaited. */
static int handshake(const struct job *j, struct peer *p, struct rc_auth *a)
{
	struct rdma_cm_event *ev = p->id->event; /* ESTABLISHED, kept by rdma_connect */
	struct rc_ctrl_challenge ch;
	unsigned char msg[2][64];
	struct ibv_mr *mr;
	struct ibv_wc wc;
	int32_t status = -1;
	int rc = 1;

	if (!ev || rc_ctrl_decode_challenge(ev->param.conn.private_data,
					    ev->param.conn.private_data_len, &ch)) {
		fprintf(stderr, "foreign_client: the accept carries no challenge\n");
		return 1;
	}
	memcpy(a->sn, ch.sn, RC_AUTH_NONCE);
	if (!rc_auth_check(j->token, a, RC_AUTH_SERVER, ch.proof)) {
		fprintf(stderr, "foreign_client: the server did not prove the token\n");
		return 1;
	}
	if (getenv("FOREIGN_CLIENT_SILENT") && !strcmp(getenv("FOREIGN_CLIENT_SILENT"), "1"))
		return -1;
	mr = rdma_reg_msgs(p->id, msg, sizeof(msg));
	if (!mr)
		return die("rdma_reg_msgs");
	rc_ctrl_encode_auth(msg[0], sizeof(msg[0]), 1, (unsigned char[RC_AUTH_MAC]){ 0 });
	rc_auth_mac(j->token, a, RC_AUTH_CLIENT, msg[0] + RC_CTRL_HDR_LEN);
	if (rdma_post_recv(p->id, NULL, msg[1], sizeof(msg[1]), mr) ||
	    rdma_post_send(p->id, NULL, msg[0], RC_CTRL_HDR_LEN + RC_AUTH_MAC, mr,
			   IBV_SEND_SIGNALED))
		rc = die("rdma_post (AUTH)");
	else if (rdma_get_send_comp(p->id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS ||
		 rdma_get_recv_comp(p->id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS ||
		 rc_ctrl_decode_auth_resp(msg[1], wc.byte_len, &status) || status)
		fprintf(stderr, "foreign_client: the server refused our proof\n");
	else
		rc = 0;
	rdma_dereg_mr(mr);
	return rc;
}

/* Connect and move the bytes; on failure p holds what to release. */
static int one(const struct job *j, struct peer *p, int k)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res, *src = NULL;
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1
	};
	struct rdma_conn_param cp = { .initiator_depth = 1,
				      .responder_resources = 1,
				      .retry_count = 7,
				      .rnr_retry_count = 7 };
	struct rc_ctrl_hello h = { .version = RC_CTRL_PROTO, .role = RC_ROLE_DATA };
	unsigned char hello[RC_HELLO_LEN];
	bool raw = getenv("FOREIGN_CLIENT_RAW") && !strcmp(getenv("FOREIGN_CLIENT_RAW"), "1");
	struct rc_auth a;
	struct ibv_wc wc;
	int rc;

	if (j->token && raw) {
		cp.private_data = j->token;
		cp.private_data_len = (uint8_t)strlen(j->token);
	} else if (j->token) {
		rc_ctrl_auth_init(&a, RC_ROLE_DATA, (uint16_t)atoi(j->port));
		if (rc_auth_nonce(a.cn))
			return die("rc_auth_nonce");
		memcpy(h.cn, a.cn, RC_AUTH_NONCE);
		h.flags = RC_HELLO_TOKEN;
		cp.private_data = hello;
		cp.private_data_len = (uint8_t)rc_ctrl_encode_hello(hello, sizeof(hello), &h);
	}
	if (getenv("FOREIGN_CLIENT_BIND")) {
		hints.ai_flags = RAI_PASSIVE;
		if (rdma_getaddrinfo(getenv("FOREIGN_CLIENT_BIND"), NULL, &hints, &src))
			return die("rdma_getaddrinfo (bind)");
		hints.ai_flags = 0;
		hints.ai_src_addr = src->ai_src_addr;
		hints.ai_src_len = src->ai_src_len;
	}
	rc = rdma_getaddrinfo(j->host, j->port, &hints, &res);
	if (src)
		rdma_freeaddrinfo(src);
	if (rc)
		return die("rdma_getaddrinfo");
	rc = rdma_create_ep(&p->id, res, NULL, &attr);
	rdma_freeaddrinfo(res);
	if (rc) {
		p->id = NULL;
		return die("rdma_create_ep");
	}
	if (rdma_connect(p->id, &cp))
		return die("rdma_connect");
	p->connected = true;
	if (j->token && !raw && (rc = handshake(j, p, &a)))
		return rc < 0 ? 0 : 1; /* silent: connected, nothing more */
	p->buf = calloc(1, j->len);
	if (!p->buf)
		return die("calloc");
	if (j->wr)
		fill(p->buf, j->len, j->own ? k : -1);
	p->mr = rdma_reg_write(p->id, p->buf, j->len); /* local write access: the READ lands here */
	if (!p->mr)
		return die("rdma_reg_write");
	if (j->wr ? rdma_post_write(p->id, NULL, p->buf, j->len, p->mr, IBV_SEND_SIGNALED,
				    j->raddr + off_of(j, k), j->rkey)
		  : rdma_post_read(p->id, NULL, p->buf, j->len, p->mr, IBV_SEND_SIGNALED,
				   j->raddr + off_of(j, k), j->rkey))
		return die("rdma_post");
	if (rdma_get_send_comp(p->id, &wc) <= 0)
		return die("rdma_get_send_comp");
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "foreign_client: RDMA %s failed: %s\n", j->wr ? "WRITE" : "READ",
			ibv_wc_status_str(wc.status));
		return 1;
	}
	if (!j->wr) {
		for (size_t i = 0; i < j->len; i++)
			printf("%02x", (unsigned char)p->buf[i]);
		printf("\n");
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct peer peers[MAX_CONNS];
	struct job j;
	int n = 1, rc = 0, done = 0;

	if (argc < 8 || argc > 9) {
		fprintf(stderr,
			"usage: foreign_client write|read HOST PORT ADDR RKEY OFFSET LENGTH [TOKEN]\n");
		return 2;
	}
	j = (struct job){ .wr = !strcmp(argv[1], "write"),
			  .host = argv[2],
			  .port = argv[3],
			  .raddr = strtoull(argv[4], NULL, 0),
			  .rkey = (uint32_t)strtoul(argv[5], NULL, 0),
			  .off = strtoull(argv[6], NULL, 0),
			  .len = strtoull(argv[7], NULL, 0),
			  .token = argc == 9 ? argv[8] : NULL };
	j.own = getenv("FOREIGN_CLIENT_OWN") && !strcmp(getenv("FOREIGN_CLIENT_OWN"), "1");
	if (getenv("FOREIGN_CLIENT_CONNS"))
		n = atoi(getenv("FOREIGN_CLIENT_CONNS"));
	if (n < 1 || n > MAX_CONNS) {
		fprintf(stderr, "foreign_client: FOREIGN_CLIENT_CONNS: 1 to %d\n", MAX_CONNS);
		return 2;
	}
	while (done < n && !rc) {
		rc = one(&j, &peers[done], done);
		done++;
	}
	if (!rc && j.own && j.wr) {
		int good = 0;

		for (int k = 0; k < n; k++)
			good += readback(&j, &peers[k], k) == 0;
		printf("verified=%d\n", good);
		fflush(stdout);
		rc = good != n;
	}
	if (!rc && getenv("FOREIGN_CLIENT_HOLD"))
		sleep((unsigned)atoi(getenv("FOREIGN_CLIENT_HOLD")));
	/* Every way out releases what was set up, last first. */
	while (done > 0)
		release(&peers[--done]);
	return rc ? 1 : 0;
}
