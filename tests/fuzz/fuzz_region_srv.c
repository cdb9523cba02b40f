// SPDX-License-Identifier: MIT
/*
 * The region server (libcore/region/server.c) and its migration handlers
 * (srv_mig.c), the real code, fed arbitrary sequences of connections,
 * control messages, error completions and disconnects from several clients.
 * The verbs layer under them is replaced by the stubs below: connections
 * are plain memory, the shared completion queue is a queue this harness
 * fills (a closed connection's completions stay in it, as on a device), the
 * shared receive queue a list of the buffers posted, and a send is recorded (its bytes read, so that ASan sees a buffer already
 * freed). srv_mig.c is built without its worker thread: a PULL or HASH runs
 * on the loop, and an input replays the same way.
 *
 * The input is a script of one-byte opcodes with their operands:
 *   connect KIND, message CONN ..., error CONN, gone CONN, step.
 * A connect request is protocol 2's HELLO (data or admin, with or without
 * a token, another version) or protocol 1's (none, the raw token). A message
 * is AUTH (the proof over the nonces the accept's challenge carried, right
 * or one bit wrong), a migration step (TRACK ... WHERE, INTENT, DONE) on one
 * of the regions with the move id the last TRACK answered (or a wrong one),
 * a PULL, a HASH, a LIST, or raw bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rdmactl/client.h>
#include <rdmactl/ctrl.h>
#include <rdmactl/mem.h>
#include <rdmactl/ops.h>
#include <rdmactl/server.h>
#include <rdmactl/dev_core.h>
#include <rdmactl/mem_core.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/ctrl_core.h>
#include <rdmactl/client_core.h>
#include <rdmactl/server_core.h>

#include "fuzz.h"

#undef ibv_reg_mr

#define MAX_CONNS 8
#define SRQ_MAX 1024
#define WCS 512
#define TOKEN "data-tok"
#define AUTO_AT 200 /* where a request's event keeps its auto_auth, past its private data */
#define ADMIN "admin-tok"

/* A connection: its QP number names its completions. */
struct fconn {
	struct rc_conn c;
	uint32_t qpn;
	struct rc_auth auth; /* its hello's and the accept's nonces */
	uint8_t role;
	uint8_t auto_auth; /* its AUTH goes at the next step: 1 right, 2 one bit off */
};

static struct {
	struct fconn *conns[MAX_CONNS]; /* accepted, in order, NULL once closed */
	int nconns;
	struct rc_cm_event ev[16]; /* CM events waiting for the listener */
	struct {
		void *buf;
		uint32_t len;
		uint64_t wr_id;
	} srq[SRQ_MAX]; /* the receives posted */
	int nsrq;
	struct ibv_wc wc[WCS]; /* the shared CQ */
	int head, nwc;
	uint32_t qpn; /* the last one given */
	struct rc_shared *sh;
	int nev;
	uint32_t move; /* what the last TRACK answered */
	uint32_t key;
	int efd;
} H;

/* ---- the stubs ---- */

double rc_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* srv_auth.c gives a QP the remote access its accept withheld once it
 * proved its token: the harness's connections have no QP to change. */
int rc_conn_release_access(struct rc_conn *c)
{
	(void)c;
	return 0;
}

int rc_access_ibv(enum rc_access a)
{
	return (int)a + 1;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	struct ibv_mr *mr = calloc(1, sizeof(*mr));

	(void)access;
	if (!mr)
		return NULL;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->lkey = mr->rkey = ++H.key;
	return mr;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	(void)iova;
	return ibv_reg_mr(pd, addr, length, (int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	free(mr);
	return 0;
}

int rc_mem_alloc_spec(struct rc_mem *m, const struct rc_mem_spec *spec, bool writable,
		      struct rc_err *err)
{
	memset(m, 0, sizeof(*m));
	m->kind = spec->kind;
	m->len = m->map_len = spec->len;
	m->fd = m->dmabuf_fd = -1;
	m->writable = writable;
	m->buf = calloc(1, spec->len ? spec->len : 1);
	if (!m->buf)
		return rc_err_set(err, ENOMEM, "out of memory");
	m->mr_addr = (uintptr_t)m->buf;
	return 0;
}

int rc_mem_register(struct rc_mem *m, struct ibv_pd *pd, int access, struct ibv_mr **mr,
		    struct rc_err *err)
{
	*mr = ibv_reg_mr(pd, m->buf, m->len, access);
	if (!*mr)
		return rc_err_set(err, ENOMEM, "out of memory");
	m->mr_addr = (uintptr_t)m->buf;
	return 0;
}

int rc_mem_free(struct rc_mem *m)
{
	free(m->buf);
	m->buf = NULL;
	return 0;
}

int rc_mem_sync(struct rc_mem *m, struct rc_err *err)
{
	(void)m;
	(void)err;
	return 0;
}

int rc_mem_sync_range(struct rc_mem *m, size_t off, size_t len, struct rc_err *err)
{
	(void)m;
	(void)off;
	(void)len;
	(void)err;
	return 0;
}

int rc_listen(const char *addr, const char *port, const char *dev_name, struct rc_listener **out,
	      struct rc_err *err)
{
	struct rc_listener *l = calloc(1, sizeof(*l));

	(void)port;
	(void)dev_name;
	if (!l)
		return rc_err_set(err, ENOMEM, "out of memory");
	l->ech = calloc(1, sizeof(*l->ech));
	l->pd = calloc(1, sizeof(*l->pd));
	l->ech->fd = H.efd;
	snprintf(l->addr, sizeof(l->addr), "%s", addr);
	snprintf(l->dev_name, sizeof(l->dev_name), "fuzz0");
	*out = l;
	return 0;
}

int rc_listener_close(struct rc_listener *l)
{
	free(l->ech);
	free(l->pd);
	free(l);
	return 0;
}

int rc_gid_find_addr(struct ibv_context *ctx, uint8_t port, const struct sockaddr *addr,
		     struct rc_gid_info *out)
{
	(void)ctx;
	(void)port;
	(void)addr;
	memset(out, 0, sizeof(*out));
	return 0;
}

int rc_gid_pick(struct ibv_context *ctx, uint8_t port, int override, struct rc_gid_info *out,
		struct rc_err *err)
{
	(void)ctx;
	(void)port;
	(void) override;
	(void)err;
	memset(out, 0, sizeof(*out));
	return 0;
}

int rc_listener_next(struct rc_listener *l, int timeout_ms, struct rc_cm_event *ev)
{
	(void)l;
	(void)timeout_ms;
	if (!H.nev)
		return -EAGAIN;
	*ev = H.ev[0];
	if (ev->param.private_data)
		ev->param.private_data = ev->private_data;
	memmove(H.ev, H.ev + 1, (size_t)--H.nev * sizeof(H.ev[0]));
	return 0;
}

int rc_cm_accept(struct rc_listener *l, struct rc_cm_event *ev, const struct rc_conn_opts *o,
		 struct rc_conn **out, struct rc_err *err)
{
	struct fconn *f;
	int rc;

	if (H.nconns == MAX_CONNS)
		return rc_err_set(err, ENOSPC, "the harness holds %d connections", MAX_CONNS);
	f = calloc(1, sizeof(*f));
	if (!f)
		return rc_err_set(err, ENOMEM, "out of memory");
	f->c.pd = l->pd;
	f->c.shared = o->shared;
	f->c.cch = o->shared->cch;
	f->qpn = ++H.qpn; /* never one again: a stale completion maps to nothing */
	{
		struct rc_ctrl_hello h;
		struct rc_ctrl_challenge ch;

		if (!rc_ctrl_decode_hello(ev->param.private_data, ev->param.private_data_len, &h)) {
			f->role = h.role;
			rc_ctrl_auth_init(&f->auth, (enum rc_ctrl_role)h.role, l->port);
			memcpy(f->auth.cn, h.cn, RC_AUTH_NONCE);
		}
		if (!rc_ctrl_decode_challenge(o->private_data, o->private_len, &ch))
			memcpy(f->auth.sn, ch.sn, RC_AUTH_NONCE);
		f->auto_auth = ev->private_data[AUTO_AT];
	}
	f->c.established = true;
	snprintf(f->c.peer, sizeof(f->c.peer), "%s", ev->peer);
	rc = o->on_qp ? o->on_qp(&f->c, o->on_qp_arg) : 0;
	if (rc) {
		free(f);
		return rc_err_set(err, -rc, "on_qp failed");
	}
	H.conns[H.nconns++] = f;
	*out = &f->c;
	return 0;
}

void rc_cm_refuse(struct rc_cm_event *ev, const char *why)
{
	(void)ev;
	(void)why;
}

int rc_conn_close(struct rc_conn *c)
{
	/* Its id is destroyed: no event of it comes any more. */
	for (int i = 0; i < H.nev; i++)
		if (H.ev[i].conn == c) {
			memmove(H.ev + i, H.ev + i + 1, (size_t)(H.nev - i - 1) * sizeof(H.ev[0]));
			H.nev--;
			i--;
		}
	for (int i = 0; i < H.nconns; i++)
		if (H.conns[i] && &H.conns[i]->c == c)
			H.conns[i] = NULL;
	free((struct fconn *)c);
	return 0;
}

int rc_shared_create(struct ibv_pd *pd, int cqe, int srq_depth, struct rc_shared **out,
		     struct rc_err *err)
{
	struct rc_shared *sh = calloc(1, sizeof(*sh));

	(void)pd;
	if (!sh || !(sh->cch = calloc(1, sizeof(*sh->cch)))) {
		free(sh);
		return rc_err_set(err, ENOMEM, "out of memory");
	}
	if (srq_depth > SRQ_MAX)
		abort(); /* the harness holds fewer */
	sh->cch->fd = H.efd;
	sh->cqe = cqe;
	sh->srq_depth = srq_depth;
	H.sh = sh;
	*out = sh;
	return 0;
}

int rc_shared_destroy(struct rc_shared *sh)
{
	if (sh)
		free(sh->cch);
	free(sh);
	return 0;
}

int rc_shared_post_recv(struct rc_shared *sh, void *buf, uint32_t len, uint32_t lkey, uint64_t user,
			struct rc_err *err)
{
	(void)lkey;
	if (H.nsrq >= sh->srq_depth)
		abort();     /* the server posted more than its queue holds */
	memset(buf, 0, len); /* ASan: the buffer is the server's still */
	H.srq[H.nsrq].buf = buf;
	H.srq[H.nsrq].len = len;
	H.srq[H.nsrq].wr_id = rc_wrid(RC_OP_RECV, user);
	H.nsrq++;
	return 0;
}

struct rc_conn *rc_shared_conn(struct rc_shared *sh, uint32_t qpn)
{
	(void)sh;
	for (int i = 0; i < H.nconns; i++)
		if (H.conns[i] && H.conns[i]->qpn == qpn)
			return &H.conns[i]->c;
	return NULL;
}

/* One at a time: a handler's own drain then finds the rest. */
int rc_shared_take(struct rc_shared *sh, struct ibv_wc *wc, int max)
{
	if (!H.nwc || max < 1) {
		sh->armed = true;
		return 0;
	}
	sh->armed = false;
	*wc = H.wc[H.head];
	H.head = (H.head + 1) % WCS;
	H.nwc--;
	return 1;
}

static void push_wc(struct fconn *f, const struct ibv_wc *wc)
{
	if (H.nwc < WCS) {
		H.wc[(H.head + H.nwc) % WCS] = *wc;
		H.wc[(H.head + H.nwc++) % WCS].qp_num = f->qpn;
	}
}

/* The message channel's per-connection receives: the server has none (its
 * pool posts to the shared receive queue). */
int rc_post_recv(struct rc_conn *c, void *buf, uint32_t len, uint32_t lkey, uint64_t user,
		 struct rc_err *err)
{
	(void)c;
	(void)buf;
	(void)len;
	(void)lkey;
	(void)user;
	(void)err;
	abort();
}

int rc_post_send(struct rc_conn *c, const void *buf, uint32_t len, uint32_t lkey, uint64_t user,
		 struct rc_err *err)
{
	struct fconn *f = (struct fconn *)c;
	unsigned char copy[RC_CTRL_MSG_MAX];
	struct rc_ctrl_hdr h;
	struct rc_mig_resp r;

	(void)lkey;
	(void)err;
	if (len > sizeof(copy))
		abort();        /* a reply is never larger than a control message */
	memcpy(copy, buf, len); /* ASan: what the server sends is its memory still */
	/* A TRACK's answer (its seq: the step): the move id later steps carry. */
	if (!rc_ctrl_decode_mig_resp(copy, len, &r) && !rc_ctrl_decode_hdr(copy, len, &h) &&
	    h.seq == RC_MIG_TRACK && !r.status && r.bytes && r.bytes < (1ull << 32))
		H.move = (uint32_t)r.bytes;
	if (getenv("FUZZ_TRACE") && !rc_ctrl_decode_mig_resp(copy, len, &r))
		fprintf(stderr, "reply on %s: %d %llu %s\n", c->peer, r.status,
			(unsigned long long)r.bytes, r.msg);
	/* It went: the slot is the server's again. */
	push_wc(f, &(struct ibv_wc){ .wr_id = rc_wrid(RC_OP_SEND, user),
				     .status = IBV_WC_SUCCESS,
				     .opcode = IBV_WC_SEND });
	return 0;
}

int rc_post_rdma(struct rc_conn *c, enum rc_op op, void *laddr, uint32_t len, uint32_t lkey,
		 uint64_t raddr, uint32_t rkey, uint32_t imm, uint64_t user, bool signaled,
		 struct rc_err *err)
{
	(void)c;
	(void)op;
	(void)laddr;
	(void)len;
	(void)lkey;
	(void)raddr;
	(void)rkey;
	(void)imm;
	(void)user;
	(void)signaled;
	(void)err;
	return 0;
}

int rc_wc_error(const struct rc_conn *c, const struct ibv_wc *wc, struct rc_err *err)
{
	(void)c;
	return rc_err_set(err, EIO, "completion error %d", (int)wc->status);
}

int rc_client_open(const struct rc_target *t, const struct rc_client_opts *o,
		   struct rc_client **out, struct rc_err *err)
{
	struct rc_client *cl;

	(void)o;
	if (t->host[0] == 'x')
		return rc_err_set(err, EHOSTUNREACH, "unreachable");
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return rc_err_set(err, ENOMEM, "out of memory");
	cl->region.length = 256 << 10;
	*out = cl;
	return 0;
}

int rc_client_close(struct rc_client *cl)
{
	free(cl);
	return 0;
}

int rc_copy_run(const struct rc_copy *c, uint64_t *bytes, struct rc_err *err)
{
	(void)err;
	*bytes = 0;
	for (size_t i = 0; i < c->n; i++) {
		/* The local end: the region the server checked it against. */
		volatile unsigned char *p = (unsigned char *)(uintptr_t)c->local + c->ext[i].dst;

		if (c->ext[i].len) {
			p[0] = 1;
			p[c->ext[i].len - 1] = 1;
		}
		*bytes += c->ext[i].len;
	}
	return 0;
}

/* ---- the script ---- */

struct in {
	const uint8_t *p;
	size_t n;
};

static uint8_t byte(struct in *in)
{
	uint8_t b = 0;

	if (in->n) {
		b = *in->p++;
		in->n--;
	}
	return b;
}

static uint64_t u64(struct in *in)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | byte(in);
	return v;
}

static const char *regions[] = { "kv", "ro", "cnt", "nope" };

static struct fconn *conn_at(uint8_t k)
{
	int live = 0;

	for (int i = 0; i < H.nconns; i++)
		live += H.conns[i] != NULL;
	if (!live)
		return NULL;
	k %= live;
	for (int i = 0; i < H.nconns; i++)
		if (H.conns[i] && !k--)
			return H.conns[i];
	return NULL;
}

/* KIND: no private data (0), a HELLO that proves its token at the next
 * step (1: data, 2: admin, 3: admin with a proof one bit off), a HELLO
 * without a token (4), of another version (5), protocol 1's raw token (6),
 * a HELLO whose AUTH is the input's to send (7: data, admin with bit 3). */
static void connect_req(uint8_t kind)
{
	struct rc_ctrl_hello h = { .version = RC_CTRL_PROTO, .role = RC_ROLE_DATA };
	struct rc_cm_event *ev;

	if (H.nev == 16)
		return;
	ev = &H.ev[H.nev++];
	memset(ev, 0, sizeof(*ev));
	ev->kind = RC_CM_REQUEST;
	snprintf(ev->peer, sizeof(ev->peer), "198.18.0.%d:1", H.nev);
	ev->param.private_data = ev->private_data;
	ev->param.private_data_len = 56;
	switch (kind % 8) {
	case 0:
		ev->param.private_data = NULL;
		return;
	case 6:
		memcpy(ev->private_data, TOKEN, strlen(TOKEN));
		return;
	case 1:
	case 2:
	case 3:
		ev->private_data[AUTO_AT] = kind % 8 == 3 ? 2 : 1;
		break;
	case 5:
		h.version = (uint16_t)(RC_CTRL_PROTO + 1 + (kind >> 4));
		break;
	default:
		break;
	}
	if (kind % 8 == 2 || kind % 8 == 3 || (kind % 8 == 7 && (kind & 8)))
		h.role = RC_ROLE_ADMIN;
	h.flags = kind % 8 == 4 ? 0 : RC_HELLO_TOKEN;
	memset(h.cn, kind, sizeof(h.cn));
	rc_ctrl_encode_hello(ev->private_data, sizeof(ev->private_data), &h);
}

/* A message of f lands in shared receive slot (slot % what is posted). */
static void push_msg(struct fconn *f, const void *msg, int len, uint8_t slot)
{
	slot %= H.nsrq;
	if ((uint32_t)len > H.srq[slot].len)
		len = (int)H.srq[slot].len;
	memcpy(H.srq[slot].buf, msg, (size_t)len);
	push_wc(f, &(struct ibv_wc){ .wr_id = H.srq[slot].wr_id,
				     .status = IBV_WC_SUCCESS,
				     .opcode = IBV_WC_RECV,
				     .byte_len = (uint32_t)len });
	H.srq[slot] = H.srq[--H.nsrq];
}

static void deliver(struct fconn *f, struct in *in)
{
	unsigned char msg[RC_CTRL_MSG_MAX];
	struct rc_extent ext[8];
	uint8_t what = byte(in), slot = byte(in);
	int len = -1;

	if (!H.nsrq)
		return;
	switch (what % 7) {
	case 4: { /* AUTH: the proof the role's token makes, or one bit off */
		unsigned char proof[RC_AUTH_MAC];

		rc_auth_mac(f->role == RC_ROLE_ADMIN ? ADMIN : TOKEN, &f->auth, RC_AUTH_CLIENT,
			    proof);
		proof[0] ^= (unsigned char)((what >> 6) & 1);
		len = rc_ctrl_encode_auth(msg, sizeof(msg), 5, proof);
		break;
	}
	case 0: {
		struct rc_mig_cmd c = { .step = 1 + byte(in) % 10 };
		uint8_t mv = byte(in);

		c.move = mv & 1 ? H.move : mv;
		snprintf(c.region, sizeof(c.region), "%s", regions[byte(in) % 4]);
		c.off = u64(in) % (512 << 10);
		c.len = byte(in) * 4096ull;
		if (c.step == RC_MIG_CUTOVER)
			snprintf(c.arg, sizeof(c.arg), "%s", mv & 2 ? "198.18.0.9:7471" : "");
		len = rc_ctrl_encode_mig_cmd(msg, sizeof(msg), c.step, &c); /* seq: the step */
		break;
	}
	case 1:
	case 2: {
		uint8_t n = byte(in) % 9, fl = byte(in);

		for (int i = 0; i < n; i++)
			ext[i] = (struct rc_extent){ .src = byte(in) * 4096ull,
						     .dst = byte(in) * 4096ull,
						     .len = byte(in) * 4096ull };
		if (what % 7 == 1) {
			struct rc_pull_req r = { .n = n, .ext = ext, .flags = fl & 15, .rkey = 7 };

			snprintf(r.host, sizeof(r.host), "%s", fl & 16 ? "x" : "198.18.0.2");
			snprintf(r.port, sizeof(r.port), "7471");
			snprintf(r.src_region, sizeof(r.src_region), "kv");
			snprintf(r.dst_region, sizeof(r.dst_region), "%s", regions[(fl >> 5) % 4]);
			len = rc_ctrl_encode_pull(msg, sizeof(msg), 2, &r);
		} else {
			struct rc_hash_req r = { .n = n, .ext = ext, .flags = fl & 7 };

			snprintf(r.region, sizeof(r.region), "%s", regions[(fl >> 3) % 4]);
			len = rc_ctrl_encode_hash(msg, sizeof(msg), 2, &r);
		}
		break;
	}
	case 3:
		rc_ctrl_encode_hdr(msg, sizeof(msg), RC_CTRL_LIST_REQ, 0, 3);
		len = RC_CTRL_HDR_LEN;
		break;
	default: {
		uint8_t n = byte(in);

		len = n < in->n ? n : (int)in->n;
		memcpy(msg, in->p, (size_t)len);
		in->p += len;
		in->n -= (size_t)len;
		/* A header that says so, now and then. */
		if (len >= RC_CTRL_HDR_LEN && (what & 0x80))
			rc_ctrl_encode_hdr(msg, sizeof(msg), 1 + what % 7,
					   (uint32_t)(len - RC_CTRL_HDR_LEN), 4);
		break;
	}
	}
	if (len >= 0)
		push_msg(f, msg, len, slot);
}

/* Each connection's AUTH its request asked for, now. */
static void auto_auth(void)
{
	unsigned char msg[RC_CTRL_HDR_LEN + RC_AUTH_MAC], proof[RC_AUTH_MAC];

	for (int i = 0; i < H.nconns; i++) {
		struct fconn *f = H.conns[i];

		if (!f || !f->auto_auth || !H.nsrq)
			continue;
		rc_auth_mac(f->role == RC_ROLE_ADMIN ? ADMIN : TOKEN, &f->auth, RC_AUTH_CLIENT,
			    proof);
		proof[0] ^= (unsigned char)(f->auto_auth == 2);
		f->auto_auth = 0;
		push_msg(f, msg, rc_ctrl_encode_auth(msg, sizeof(msg), 5, proof), 0);
	}
}

static void gone(struct fconn *f)
{
	struct rc_cm_event *ev;

	if (H.nev == 16)
		return;
	ev = &H.ev[H.nev++];
	memset(ev, 0, sizeof(*ev));
	ev->kind = RC_CM_GONE;
	ev->conn = &f->c;
	ev->was_established = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rc_server_opts o = { .addr = "127.0.0.1",
				    .port = "7471",
				    .gid_index = 0,
				    .token = TOKEN,
				    .keepalive_ms = -1 };
	struct in in = { data, size };
	struct rc_server *s;
	struct rc_err e;

	memset(&H, 0, sizeof(H));
	H.efd = eventfd(0, EFD_NONBLOCK);
	if (H.efd < 0)
		return 0;
	/* The first byte: the server's credentials. */
	switch (byte(&in) % 3) {
	case 0:
		o.admin_token = ADMIN;
		break;
	case 1:
		o.allow_unauth_migration = true;
		break;
	default:
		break;
	}
	if (rc_server_create(&o, &s, &e)) {
		close(H.efd);
		return 0;
	}
	if (rc_server_add_region(s, "kv", RC_MEM_HOST, 256 << 10, NULL, RC_ACCESS_RW, &e) ||
	    rc_server_add_region(s, "ro", RC_MEM_HOST, 64 << 10, NULL, RC_ACCESS_RO, &e) ||
	    rc_server_add_region(s, "cnt", RC_MEM_HOST, 64 << 10, NULL, RC_ACCESS_ATOMIC, &e))
		abort();
	for (int ops = 0; in.n && ops < 256; ops++) {
		uint8_t op = byte(&in);
		struct fconn *f;

		switch (op % 6) {
		case 0:
			connect_req(byte(&in));
			break;
		case 1:
		case 2:
			if ((f = conn_at(byte(&in))))
				deliver(f, &in);
			break;
		case 3:
			if ((f = conn_at(byte(&in))))
				push_wc(f, &(struct ibv_wc){ .wr_id = rc_wrid(RC_OP_SEND, 0),
							     .status = IBV_WC_REM_ACCESS_ERR });
			break;
		case 4:
			if ((f = conn_at(byte(&in))))
				gone(f);
			break;
		default:
			if (rc_server_step(s, 0, &e))
				abort(); /* only a device removed ends a step so */
			auto_auth();
			break;
		}
	}
	for (int i = 0; i < 4; i++)
		rc_server_step(s, 0, &e);
	rc_server_destroy(s, &e);
	close(H.efd);
	return 0;
}
