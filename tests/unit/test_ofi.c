// SPDX-License-Identifier: MIT
/*
 * The libfabric transport's core over libfabric's tcp provider (tcp;ofi_rxm,
 * real sockets on 127.0.0.1: a software transport, no RDMA device): a target
 * process and this one, each an RDM endpoint with the other's address in its
 * AV. 64 MiB written in 1 MiB pieces, 16 in flight, then read back into a
 * zeroed buffer and compared; a write with immediate data that the target's
 * CQ reports; a message; fetch-and-add and compare-and-swap with their old
 * values; the one engine (rc_stream_run) over the libfabric transport
 * (tp_ofi.c), completions out of order told in post order; and the wrong answers: a provider that is not there, a key one
 * off, a read past the registration, a compare that does not match.
 * Skips (77) where libfabric has no tcp provider.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>

#include <rdmactl/ofi_core.h>

#include "check.h"
#include "fab_int.h"
#include <rdmactl/tp_core.h>

#define BIG (64u << 20)
#define PIECE (1u << 20)
#define DEPTH 16

struct side {
	struct rc_ofi o;
	struct rc_ofi_mr mr;
	unsigned char *buf;
	uint64_t peer;
};

/* What the target tells: its address, its region's base and key. */
struct card {
	unsigned char name[RC_OFI_NAME_MAX];
	uint64_t namelen, base, key;
};

static int open_side(struct side *s, struct rc_err *e)
{
	struct rc_ofi_opts o = { .prov = "tcp",
				 .node = "127.0.0.1",
				 .service = "0",
				 .want_atomic = true };
	int rc = rc_ofi_open(&s->o, &o, e);
	void *p;

	if (rc)
		return rc;
	p = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	s->buf = p;
	return rc_ofi_reg(&s->o, s->buf, BIG,
			  RC_OFI_REMOTE_READ | RC_OFI_REMOTE_WRITE | RC_OFI_REMOTE_ATOMIC, &s->mr,
			  e);
}

/* The target: serves its region, says on out what its CQ reports (the
 * immediate data of writes, the messages), until a byte comes on in, or 60 s. */
static int target(int in, FILE *out)
{
	char quit;
	static struct side s;
	struct card me = { 0 }, peer;
	struct rc_ofi_wc wc[8];
	struct rc_err e;

	if (open_side(&s, &e)) {
		fprintf(out, "error %s\n", e.msg);
		return 1;
	}
	memcpy(me.name, s.o.name, s.o.namelen);
	me.namelen = s.o.namelen;
	me.base = s.mr.base;
	me.key = s.mr.key;
	fwrite(&me, sizeof(me), 1, out);
	fflush(out);
	if (read(in, &peer, sizeof(peer)) != sizeof(peer) ||
	    rc_ofi_av_insert(&s.o, peer.name, peer.namelen, &s.peer, &e))
		return 1;
	fcntl(in, F_SETFL, O_NONBLOCK); /* a byte: the end */
	for (int i = 0; i < 4; i++)
		if (rc_ofi_recv(&s.o, s.buf + BIG - (i + 1) * 256, 256, &s.mr,
				s.buf + BIG - (i + 1) * 256, &e))
			return 1;
	alarm(60);
	for (;;) {
		int n = rc_ofi_poll(&s.o, wc, 8, 100, &e);

		for (int i = 0; i < n; i++) {
			if (wc[i].flags & FI_REMOTE_CQ_DATA)
				fprintf(out, "imm %" PRIx64 "\n", wc[i].data);
			if (!(wc[i].flags & FI_RECV) || wc[i].err)
				continue;
			fprintf(out, "msg %.*s\n", (int)wc[i].len, (char *)wc[i].ctx);
			if (rc_ofi_recv(&s.o, wc[i].ctx, 256, &s.mr, wc[i].ctx, &e))
				return 1;
		}
		fflush(out);
		if (n < 0)
			return 1;
		if (read(in, &quit, 1) == 1)
			return 0;
	}
}

/* want completions of c: the errors among them, or -1 when they did not
 * all come in 20 s. */
static int reap(struct side *c, int want)
{
	struct rc_ofi_wc wc[16];
	struct rc_err e;
	int got = 0, errs = 0;

	for (int tries = 0; got < want && tries < 200; tries++) {
		int n = rc_ofi_poll(&c->o, wc, want - got < 16 ? want - got : 16, 100, &e);

		if (n < 0)
			return -1;
		for (int i = 0; i < n; i++)
			errs += wc[i].err != 0;
		got += n;
	}
	return got < want ? -1 : errs;
}

static void write_read(struct side *c, const struct card *t)
{
	struct rc_err e;
	int posted = 0, rc = 0;
	unsigned char *back;

	for (size_t i = 0; i < BIG; i++)
		c->buf[i] = (unsigned char)(i * 7 + (i >> 20));
	for (size_t off = 0; off + PIECE <= BIG / 2 && !rc; off += PIECE) {
		if (posted == DEPTH) {
			CHECK(reap(c, 1) == 0);
			posted--;
		}
		rc = rc_ofi_write(&c->o, c->peer, c->buf + off, PIECE, &c->mr, t->base + off,
				  t->key, NULL, NULL, &e);
		posted++;
	}
	if (rc)
		fprintf(stderr, "write: %s\n", e.msg);
	CHECK(rc == 0);
	CHECK(reap(c, posted) == 0);
	/* read the 32 MiB back into the upper half, zeroed */
	back = c->buf + BIG / 2;
	memset(back, 0, BIG / 2);
	for (size_t off = 0; off < BIG / 2 && !rc; off += PIECE * DEPTH) {
		for (int k = 0; k < DEPTH && !rc; k++)
			rc = rc_ofi_read(&c->o, c->peer, back + off + (size_t)k * PIECE, PIECE,
					 &c->mr, t->base + off + (size_t)k * PIECE, t->key, NULL,
					 &e);
		CHECK(reap(c, DEPTH) == 0);
	}
	CHECK(rc == 0);
	CHECK(memcmp(c->buf, back, BIG / 2) == 0);
}

/* The next line the target says, within its 60 s. */
static char *said(FILE *in, char *line, size_t cap)
{
	return fgets(line, (int)cap, in) ? line : strcpy(line, "(nothing)");
}

static void imm_and_message(struct side *c, const struct card *t, FILE *in)
{
	char line[256];
	uint64_t imm = 0x1234;
	struct rc_err e;

	CHECK(c->o.cq_data);
	CHECK(rc_ofi_write(&c->o, c->peer, c->buf, 64, &c->mr, t->base, t->key, &imm, NULL, &e) ==
	      0);
	CHECK(reap(c, 1) == 0);
	CHECK_STR(said(in, line, sizeof(line)), "imm 1234\n");
	memcpy(c->buf, "hello over ofi", 15);
	CHECK(rc_ofi_send(&c->o, c->peer, c->buf, 15, &c->mr, NULL, &e) == 0);
	CHECK(reap(c, 1) == 0);
	CHECK_STR(said(in, line, sizeof(line)), "msg hello over ofi\n");
}

static void atomics(struct side *c, const struct card *t)
{
	uint64_t *old = (uint64_t *)(void *)(c->buf + 4096), cmp = 47, bad = 1, v = 40;
	struct rc_err e;

	/* the target's first word: 40 */
	memcpy(c->buf, &v, 8);
	CHECK(rc_ofi_write(&c->o, c->peer, c->buf, 8, &c->mr, t->base, t->key, NULL, NULL, &e) == 0);
	CHECK(reap(c, 1) == 0);
	CHECK(rc_ofi_atomic(&c->o, c->peer, 7, NULL, old, &c->mr, t->base, t->key, NULL, &e) == 0);
	CHECK(reap(c, 1) == 0);
	CHECK_EQ_U64(old[0], 40);
	/* a compare that fails swaps nothing and says what was there */
	CHECK(rc_ofi_atomic(&c->o, c->peer, 99, &bad, old, &c->mr, t->base, t->key, NULL, &e) == 0);
	CHECK(reap(c, 1) == 0);
	CHECK_EQ_U64(old[0], 47);
	CHECK(rc_ofi_atomic(&c->o, c->peer, 99, &cmp, old, &c->mr, t->base, t->key, NULL, &e) == 0);
	CHECK(reap(c, 1) == 0);
	CHECK_EQ_U64(old[0], 47);
	CHECK(rc_ofi_read(&c->o, c->peer, c->buf, 8, &c->mr, t->base, t->key, NULL, &e) == 0);
	CHECK(reap(c, 1) == 0);
	memcpy(&v, c->buf, 8);
	CHECK_EQ_U64(v, 99);
}

/* A pattern the engine's fill takes from and its drain gives back to. */
struct pattern {
	const unsigned char *src;
	unsigned char *dst;
};

static ssize_t pattern_fill(void *arg, uint64_t off, void *buf, size_t len)
{
	memcpy(buf, ((const struct pattern *)arg)->src + off, len);
	return (ssize_t)len;
}

static int pattern_drain(void *arg, uint64_t off, const void *buf, size_t len)
{
	memcpy(((struct pattern *)arg)->dst + off, buf, len);
	return 0;
}

/* Completion ctx of a slot, as if the provider had read it off its queue. */
static void complete(struct side *c, struct rc_ofi_tp *tp, uint64_t k, int err)
{
	c->o.backlog[c->o.nbacklog++] = (struct rc_ofi_wc){
		.ctx = k == UINT64_MAX ? NULL : &tp->ring[k % (uint64_t)tp->depth],
		.err = err,
		.why = "key mismatch",
	};
}

static void busy(struct rc_ofi_tp *tp, uint64_t user, enum rc_op op)
{
	tp->ring[tp->posted++ % (uint64_t)tp->depth] =
		(struct rc_ofi_tp_slot){ .user = user, .op = op, .busy = true };
}

/* The one engine (rc_stream_run) over the libfabric transport (tp_ofi.c):
 * a write from a fill and a read into a drain of a length that is not a
 * whole number of pieces, 100 fetch-and-adds each completing once; then
 * completions out of order (the provider's backlog standing in for its
 * queue), which the engine hears of in post order, and a failed one. */
static void engine(struct side *c, const struct card *t)
{
	size_t n = (6u << 20) + 12345;
	unsigned char *src = malloc(n), *dst = calloc(1, n);
	struct pattern p = { src, dst };
	struct rc_stream_result res;
	struct rc_ofi_tp tp;
	struct rc_cqe cqe;
	static uint64_t word[512] __attribute__((aligned(4096)));
	uint64_t wl = 0, wr = 0;
	void *wmr = NULL;
	struct rc_err e = { 0 };
	void *ep = &tp;
	uint64_t v, base;
	int which = -1;

	CHECK(src && dst);
	if (!src || !dst)
		return;
	for (size_t i = 0; i < n; i++)
		src[i] = (unsigned char)((i * 13) ^ (i >> 9));
	CHECK(rc_ofi_tp_init(&tp, &c->o, c->peer, "the target", 8, 5000, &e) == 0);
	struct rc_stream s = { .op = RC_OP_WRITE,
			       .nconns = 1,
			       .tp = &rc_ofi_transport,
			       .eps = &ep,
			       .buf = c->buf + (48u << 20),
			       .lkey = rc_ofi_tp_key(&tp, &c->mr),
			       .chunk = 256u << 10,
			       .depth = 8,
			       .batch = 4,
			       .signal_every = 4,
			       .raddr = t->base + (8u << 20),
			       .rkey = t->key,
			       .total = n,
			       .fill = pattern_fill,
			       .arg = &p,
			       .timeout_ms = 5000 };
	CHECK(rc_stream_run(&s, &res, &e) == 0);
	CHECK_EQ_U64(res.bytes, n);
	s.op = RC_OP_READ;
	s.fill = NULL;
	s.drain = pattern_drain;
	CHECK(rc_stream_run(&s, &res, &e) == 0);
	CHECK_EQ_U64(res.bytes, n);
	CHECK(memcmp(src, dst, n) == 0);
	/* the target's first word is 99 (atomics): 100 times 3 more, the old
	 * values into memory registered through the seam */
	CHECK(rc_ofi_transport.mem_reg(ep, word, 4096, RC_OFI_LOCAL, &wmr, &wl, &wr, &e) == 0);
	CHECK(wl != 0 && wmr != NULL);
	s = (struct rc_stream){ .op = RC_OP_FAA,
				.nconns = 1,
				.tp = &rc_ofi_transport,
				.eps = &ep,
				.buf = word,
				.lkey = (uint32_t)wl,
				.chunk = 8,
				.depth = 8,
				.batch = 1,
				.signal_every = 1,
				.raddr = t->base,
				.rkey = t->key,
				.total = 8,
				.iters = 100,
				.compare_add = 3,
				.timeout_ms = 5000,
				.one_buffer = true };
	CHECK(rc_stream_run(&s, &res, &e) == 0);
	CHECK_EQ_U64(res.ops, 100);
	memcpy(&v, word, 8);
	CHECK_EQ_U64(v, 99 + 99 * 3); /* the last one's old value, told last */
	CHECK(rc_ofi_transport.mem_dereg(wmr) == 0);
	CHECK(rc_ofi_read(&c->o, c->peer, c->buf, 8, &c->mr, t->base, t->key, NULL, &e) == 0);
	CHECK(reap(c, 1) == 0);
	memcpy(&v, c->buf, 8);
	CHECK_EQ_U64(v, 99 + 100 * 3);
	/* posted 0, 1, 2; completed 2, 0, 1: told 0, then 2 (covering 1) */
	base = tp.posted;
	busy(&tp, 100, RC_OP_WRITE);
	busy(&tp, 101, RC_OP_WRITE);
	busy(&tp, 102, RC_OP_WRITE);
	complete(c, &tp, base + 2, 0);
	CHECK(rc_ofi_transport.poll(&ep, 1, &cqe, 1, 0, &which, &e) == 0);
	complete(c, &tp, base, 0);
	CHECK(rc_ofi_transport.poll(&ep, 1, &cqe, 1, 0, &which, &e) == 1);
	CHECK_EQ_U64(cqe.user, 100);
	CHECK(which == 0);
	complete(c, &tp, base + 1, 0);
	CHECK(rc_ofi_transport.poll(&ep, 1, &cqe, 1, 0, &which, &e) == 1);
	CHECK_EQ_U64(cqe.user, 102);
	CHECK(rc_ofi_transport.poll(&ep, 1, &cqe, 1, 0, &which, &e) == 0);
	/* the control plane's completion is passed over; a failed read is told
	 * with its operation, its peer and the provider's words */
	busy(&tp, 200, RC_OP_READ);
	complete(c, &tp, UINT64_MAX, 0);
	complete(c, &tp, base + 3, EACCES);
	CHECK(rc_ofi_transport.poll(&ep, 1, &cqe, 1, 0, &which, &e) == -EACCES);
	CHECK(strstr(e.msg, "READ to the target failed") != NULL);
	CHECK(strstr(e.msg, "key mismatch") != NULL);
	CHECK(rc_ofi_tp_quiesce(&tp, 100));
	rc_ofi_tp_fini(&tp);
	free(src);
	free(dst);
}

/* One read of len at off of the target, from an endpoint of its own (a
 * failed operation may end the provider's connection to the target): the
 * errors among its completion, or -1 when it did not come. */
static int one_read(const struct card *t, uint64_t off, size_t len, uint64_t key)
{
	static struct side f;
	struct rc_err e;
	int rc = -1;

	if (open_side(&f, &e) == 0 && rc_ofi_av_insert(&f.o, t->name, t->namelen, &f.peer, &e) == 0)
		rc = rc_ofi_read(&f.o, f.peer, f.buf, len, &f.mr, t->base + off, key, NULL, &e)
			     ? 1
			     : reap(&f, 1);
	rc_ofi_dereg(&f.mr);
	rc_ofi_close(&f.o);
	munmap(f.buf, BIG);
	return rc;
}

/* The wrong answers, each on an endpoint of its own, and the right one. */
static void refusals(const struct card *t)
{
	CHECK(one_read(t, 0, 4096, t->key + 1) == 1);
	CHECK(one_read(t, BIG - 4096, 8192, t->key) == 1);
	CHECK(one_read(t, BIG - 4096, 4096, t->key) == 0);
}

/* The listing of rejections (fab_rej_list, fab_rej_flush): FAB_REJ_PER_S a
 * second told, the rest counted and told once their second is over. */
static void rejections(void)
{
	struct fab_rej r = { 0 };
	int told = 0;

	for (int i = 0; i < 50; i++) /* a flood within a tenth of a second */
		told += fab_rej_list(&r, 10.0 + i * 0.002);
	CHECK(told == FAB_REJ_PER_S);
	CHECK(fab_rej_flush(&r, 10.5) == 0); /* its second is not over */
	CHECK(fab_rej_flush(&r, 11.01) == 50 - FAB_REJ_PER_S);
	CHECK(fab_rej_flush(&r, 11.02) == 0); /* told once */
	/* a new second tells again, and one a second is always told */
	CHECK(fab_rej_list(&r, 11.03));
	for (int i = 0; i < 5; i++)
		CHECK(fab_rej_list(&r, 20.0 + i * 1.5));
	CHECK(fab_rej_flush(&r, 40.0) == 0);
}

int main(void)
{
	static struct side c;
	struct rc_ofi_opts none = { .prov = "no-such-provider" };
	struct rc_ofi x;
	struct rc_err e = { 0 };
	struct card t, me = { 0 };
	int to_t[2], from_t[2], st = 0;
	FILE *in;
	pid_t pid;

	rejections();
	CHECK(rc_ofi_open(&x, &none, &e) == -ENODEV);
	CHECK(strstr(e.msg, "no provider 'no-such-provider'") != NULL);
	if (rc_ofi_open(&x, &(struct rc_ofi_opts){ .prov = "tcp", .node = "127.0.0.1" }, &e) ==
	    -ENODEV) {
		printf("skip: %s\n", e.msg);
		return 77;
	}
	rc_ofi_close(&x);
	if (pipe(to_t) || pipe(from_t) || (pid = fork()) < 0)
		return 1;
	if (pid == 0) {
		close(to_t[1]);
		close(from_t[0]);
		_exit(target(to_t[0], fdopen(from_t[1], "w")));
	}
	close(to_t[0]);
	close(from_t[1]);
	in = fdopen(from_t[0], "r");
	CHECK(open_side(&c, &e) == 0);
	if (check_failures || fread(&t, sizeof(t), 1, in) != 1) {
		fprintf(stderr, "%s\n", e.msg);
		kill(pid, SIGKILL);
		return 1;
	}
	printf("# %s, domain %s, mr_mode 0x%" PRIx64 ", keys of %zu bytes\n", c.o.prov_name,
	       c.o.domain_name, c.o.mr_mode, c.o.key_size);
	memcpy(me.name, c.o.name, c.o.namelen);
	me.namelen = c.o.namelen;
	CHECK(write(to_t[1], &me, sizeof(me)) == sizeof(me));
	CHECK(rc_ofi_av_insert(&c.o, t.name, t.namelen, &c.peer, &e) == 0);
	write_read(&c, &t);
	imm_and_message(&c, &t, in);
	atomics(&c, &t);
	engine(&c, &t);
	refusals(&t);
	CHECK(write(to_t[1], "q", 1) == 1); /* the target ends */
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	rc_ofi_dereg(&c.mr);
	rc_ofi_close(&c.o);
	CHECK_DONE();
}
