// SPDX-License-Identifier: MIT
/*
 * The region client's data operations: WRITE, READ, atomics, a WRITE with
 * immediate and the benchmark, each through a staging buffer of its own;
 * a write or atomics is announced to the server (INTENT, DONE) for a live
 * move, and an access the server revoked follows the region where it went.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdmactl/client.h>
#include <rdmactl/ops.h>
#include <rdmactl/err_core.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/ctrl_core.h>
#include <rdmactl/client_core.h>

#include "client_int.h"

#define NOTICE_ROOM 4096u

static int wait_one(struct rc_conn *c, int timeout_ms, const char *what, struct rc_err *err);

int staging_get(struct rc_client *cl, struct staging *st, size_t len, const char *what,
		struct rc_err *err)
{
	memset(st, 0, sizeof(*st));
	/* A page more at the end: the migration notices (announce()). */
	st->len = ((len + 4095) & ~(size_t)4095) + NOTICE_ROOM;
	errno = ENOMEM;
	st->buf = aligned_alloc(4096, st->len);
	/* ibv_reg_mr sets errno: ENOMEM or EPERM under a memlock limit. */
	st->mr = st->buf ? ibv_reg_mr(cl->conns[0]->pd, st->buf, st->len, IBV_ACCESS_LOCAL_WRITE)
			 : NULL;
	if (!st->mr) {
		int e = errno;

		free(st->buf);
		st->buf = NULL;
		return rc_err_set(err, e, "cannot register %s (%zu KiB): %s", what, st->len >> 10,
				  strerror(e));
	}
	return 0;
}

/* Tell the server about a write or atomics on [off, off + len): INTENT goes
 * unsignalled ahead of the operation on the same QP (so it is in the
 * server's queue before the operation lands); DONE goes signalled once it
 * completed, and is waited for. */
static int announce(struct rc_client *cl, struct staging *st, enum rc_mig_step step, uint64_t off,
		    uint64_t len, int timeout_ms, struct rc_err *err)
{
	struct rc_conn *c = cl->conns[0];
	unsigned char *msg = (unsigned char *)st->buf + st->len - NOTICE_ROOM +
			     (step == RC_MIG_DONE ? NOTICE_ROOM / 2 : 0);
	struct rc_mig_cmd cmd = { .step = (uint32_t)step, .off = off, .len = len };
	struct rc_chain ch = { .n = 0 };
	int n, rc;

	snprintf(cmd.region, sizeof(cmd.region), "%s", cl->region.name);
	n = rc_ctrl_encode_mig_cmd(msg, NOTICE_ROOM / 2, 0, &cmd);
	if (n < 0)
		return rc_err_set(err, -n, "cannot encode a migration notice");
	rc_chain_add(&ch, &(struct rc_wr){ .op = RC_OP_SEND,
					   .laddr = (uintptr_t)msg,
					   .len = (uint32_t)n,
					   .lkey = st->mr->lkey,
					   .signaled = step == RC_MIG_DONE });
	rc = rc_chain_post(c, &ch, err);
	if (rc < 0 || step != RC_MIG_DONE)
		return rc < 0 ? rc : 0;
	return wait_one(c, timeout_ms, "for the write's notice", err);
}

void staging_put(struct staging *st)
{
	if (st->mr)
		ibv_dereg_mr(st->mr);
	free(st->buf);
	memset(st, 0, sizeof(*st));
}

int client_stream_with(struct rc_client *cl, struct staging *st, enum rc_op op, uint64_t off,
		       uint64_t len, const struct rc_client_io *io, struct rc_stream_result *res,
		       struct rc_err *err)
{
	int rc;

	memset(res, 0, sizeof(*res));
	if (op == RC_OP_WRITE) {
		rc = announce(cl, st, RC_MIG_INTENT, off, len, io->timeout_ms, err);
		if (rc)
			return rc;
	}
	struct rc_stream s = {
		.op = op,
		.conns = cl->conns,
		.nconns = 1,
		.buf = st->buf,
		.lkey = st->mr->lkey,
		.chunk = RC_CLIENT_CHUNK,
		.depth = RC_CLIENT_DEPTH,
		.batch = 4,
		.signal_every = 1,
		.raddr = cl->region.addr + off,
		.rkey = cl->region.rkey,
		.total = len,
		.fill = io->fill,
		.drain = io->drain,
		.arg = io->arg,
		.progress = io->progress,
		.progress_arg = io->progress_arg,
		.timeout_ms = io->timeout_ms,
	};

	rc = rc_stream_run(&s, res, err);
	if (!rc && op == RC_OP_WRITE && cl->opts.before_done)
		cl->opts.before_done(cl->opts.before_done_arg);
	if (!rc && op == RC_OP_WRITE)
		rc = announce(cl, st, RC_MIG_DONE, off, len, io->timeout_ms, err);
	return rc;
}

static int client_stream(struct rc_client *cl, enum rc_op op, uint64_t off, uint64_t len,
			 const struct rc_client_io *io, struct rc_stream_result *res,
			 struct rc_err *err)
{
	struct staging st;
	int rc;

	memset(res, 0, sizeof(*res));
	rc = staging_get(cl, &st, (size_t)RC_CLIENT_CHUNK * RC_CLIENT_DEPTH, "a staging buffer",
			 err);
	if (rc)
		return rc;
	rc = client_stream_with(cl, &st, op, off, len, io, res, err);
	staging_put(&st);
	return rc;
}

/* Ask the server of n where the region is: 0 with to[] "" (here) or
 * "HOST:PORT", -EAGAIN while it is fenced, or -errno. */
static int where(struct rc_client *n, const char *region, char *to, size_t cap, struct rc_err *err)
{
	unsigned char req[RC_CTRL_MSG_MAX], resp[RC_CTRL_MSG_MAX];
	struct rc_mig_cmd cmd = { .step = RC_MIG_WHERE };
	struct rc_mig_resp r;
	int len;

	snprintf(cmd.region, sizeof(cmd.region), "%s", region);
	len = rc_ctrl_encode_mig_cmd(req, sizeof(req), 9, &cmd);
	len = rc_client_ctrl(n, req, (size_t)len, resp, sizeof(resp), -1, err);
	if (len < 0)
		return len;
	if (rc_ctrl_decode_mig_resp(resp, (size_t)len, &r))
		return rc_err_set(err, EPROTO, "%s gave a malformed answer", rc_client_peer(n));
	if (r.status < 0)
		return rc_err_set(err, -r.status, "%s", r.msg);
	snprintf(to, cap, "%s", r.msg);
	return 0;
}

/* Take over n's connections and region table; n is freed. */
static void adopt(struct rc_client *cl, struct rc_client *n, const char *host, const char *port)
{
	client_ctrl_drop(cl);
	client_ctrl_drop(n);
	for (int i = cl->nconns - 1; i >= 0; i--)
		rc_conn_close(cl->conns[i]);
	memcpy(cl->conns, n->conns, sizeof(cl->conns));
	cl->nconns = n->nconns;
	cl->region = n->region;
	memcpy(cl->all, n->all, sizeof(cl->all));
	cl->nregions = n->nregions;
	snprintf(cl->host, sizeof(cl->host), "%s", host);
	snprintf(cl->port, sizeof(cl->port), "%s", port);
	cl->moves++;
	free(n);
}

/* After a remote access error: find where the region lives now (the same
 * server, fenced for a moment or serving again, or the one it moved to),
 * and reconnect cl there. */
static int follow(struct rc_client *cl, struct rc_err *err)
{
	char host[RC_HOST_MAX], port[8], to[RC_MIG_MSG_LEN], region[RC_NAME_MAX];
	int wait_ms = cl->conns[0]->timeout_ms > 0 ? cl->conns[0]->timeout_ms : 10000;
	double deadline = rc_now() + wait_ms / 1000.0;

	snprintf(host, sizeof(host), "%s", cl->host);
	snprintf(port, sizeof(port), "%s", cl->port);
	snprintf(region, sizeof(region), "%s", cl->region.name);
	for (int hop = 0; hop < 4; hop++) {
		struct rc_target t = { 0 };
		struct rc_client *n;
		int rc;

		snprintf(t.host, sizeof(t.host), "%s", host);
		snprintf(t.port, sizeof(t.port), "%s", port);
		snprintf(t.region, sizeof(t.region), "%s", region);
		rc = rc_client_open(&t, &cl->opts, &n, err);
		if (rc)
			return rc;
		while ((rc = where(n, region, to, sizeof(to), err)) == -EAGAIN &&
		       rc_now() < deadline)
			nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
		if (!rc && !to[0]) {
			/* Here: the table just fetched has the region's rkey now. */
			adopt(cl, n, host, port);
			return 0;
		}
		rc_client_close(n);
		if (rc)
			return rc;
		if (rc_parse_target(to, &t))
			return rc_err_set(err, EPROTO, "region '%s' moved to '%s', not a HOST:PORT",
					  region, to);
		snprintf(host, sizeof(host), "%s", t.host);
		snprintf(port, sizeof(port), "%s", t.port);
	}
	return rc_err_set(err, ELOOP, "region '%s' moved more than 4 times in a row", region);
}

/* A failure that a move of the region explains: the server revoked it. */
static bool revoked(int rc)
{
	return rc == -EACCES;
}

int rc_client_write(struct rc_client *cl, uint64_t off, uint64_t len, const struct rc_client_io *io,
		    struct rc_stream_result *res, struct rc_err *err)
{
	int rc = client_stream(cl, RC_OP_WRITE, off, len, io, res, err);

	for (int tries = 0; tries < 3 && revoked(rc) && io->rewind; tries++) {
		struct rc_err e2;

		if (follow(cl, &e2) || io->rewind(io->arg))
			break;
		rc = client_stream(cl, RC_OP_WRITE, off, len, io, res, err);
	}
	return rc;
}

int rc_client_read(struct rc_client *cl, uint64_t off, uint64_t len, const struct rc_client_io *io,
		   struct rc_stream_result *res, struct rc_err *err)
{
	int rc = client_stream(cl, RC_OP_READ, off, len, io, res, err);

	for (int tries = 0; tries < 3 && revoked(rc) && res->bytes == 0; tries++) {
		struct rc_err e2;

		if (follow(cl, &e2))
			break;
		rc = client_stream(cl, RC_OP_READ, off, len, io, res, err);
	}
	return rc;
}

/* Wait for the completion of the one work request just posted. */
static int wait_one(struct rc_conn *c, int timeout_ms, const char *what, struct rc_err *err)
{
	struct ibv_wc wc;
	int rc = rc_poll(c, &wc, 1, timeout_ms > 0 ? timeout_ms : -1, err);

	if (rc == -ETIMEDOUT)
		return rc_err_set(err, ETIMEDOUT, "no completion %s from %s within %d ms", what,
				  c->peer, timeout_ms > 0 ? timeout_ms : c->timeout_ms);
	return rc < 0 ? rc : 0;
}

int rc_client_write_imm(struct rc_client *cl, uint64_t off, uint32_t imm, int timeout_ms,
			struct rc_err *err)
{
	struct rc_conn *c = cl->conns[0];
	int rc;

	rc = rc_post_rdma(c, RC_OP_WRITE_IMM, NULL, 0, 0, cl->region.addr + off, cl->region.rkey,
			  imm, 0, true, err);
	return rc ? rc : wait_one(c, timeout_ms, "for the immediate data", err);
}

int rc_client_atomic(struct rc_client *cl, enum rc_op op, uint64_t off, uint64_t compare_add,
		     uint64_t swap, int timeout_ms, uint64_t *old, struct rc_err *err)
{
	struct rc_conn *c = cl->conns[0];
	struct staging st;
	int rc;

	if (op != RC_OP_FAA && op != RC_OP_CAS)
		return rc_err_set(err, EINVAL, "not an atomic operation: %s", rc_op_name(op));
	for (int tries = 0;; tries++) {
		rc = staging_get(cl, &st, 8, "the result buffer", err);
		if (rc)
			return rc;
		c = cl->conns[0];
		rc = announce(cl, &st, RC_MIG_INTENT, off, 8, timeout_ms, err);
		if (!rc)
			rc = rc_post_atomic(c, op, st.buf, st.mr->lkey, cl->region.addr + off,
					    cl->region.rkey, compare_add, swap, 0, err);
		if (!rc)
			rc = wait_one(c, timeout_ms, "for the atomic", err);
		if (!rc) {
			*old = *(uint64_t *)st.buf;
			rc = announce(cl, &st, RC_MIG_DONE, off, 8, timeout_ms, err);
		}
		staging_put(&st);
		/* A remote access error: the responder refused it, it did not
		 * happen. Anything else after posting: it may have. */
		if (!revoked(rc) || tries == 2)
			break;
		struct rc_err e2;

		if (follow(cl, &e2))
			break;
	}
	if (rc && !revoked(rc) && rc != -ENOMEM)
		rc = rc_err_append(
			err, -rc,
			"the atomic's outcome is unknown (it may have been applied): not retried");
	return rc;
}

int rc_client_bench(struct rc_client *cl, const struct rc_client_bench *b,
		    struct rc_stream_result *res, struct rc_err *err)
{
	struct staging st;
	int rc;

	memset(res, 0, sizeof(*res));
	if (b->qps < 1 || b->qps > cl->nconns)
		return rc_err_set(err, EINVAL, "%d queue pairs asked, %d connected", b->qps,
				  cl->nconns);
	rc = staging_get(cl, &st, b->msg, "the benchmark buffer", err);
	if (rc)
		return rc;
	memset(st.buf, 0xa5, st.len);
	struct rc_stream s = {
		.op = b->op,
		.conns = cl->conns,
		.nconns = b->qps,
		.buf = st.buf,
		.lkey = st.mr->lkey,
		.chunk = b->msg,
		.depth = b->depth,
		.batch = b->post_list,
		.signal_every = b->signal_every,
		.raddr = cl->region.addr + b->off,
		.rkey = cl->region.rkey,
		.total = b->msg,
		.iters = b->iters,
		.compare_add = b->compare_add,
		.swap = b->swap,
		.timeout_ms = b->timeout_ms,
		.lat_us = b->lat_us,
		.lat_clock = b->lat_clock,
		.posted_s = b->posted_s,
		.completed_s = b->completed_s,
		.one_buffer = true,
	};

	rc = rc_stream_run(&s, res, err);
	staging_put(&st);
	return rc;
}
