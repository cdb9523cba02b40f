// SPDX-License-Identifier: MIT
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/client.h>
#include <rdmactl/ops.h>
#include <time.h>

/* Ask the server for its region table over the control channel. */
static int fetch_regions(struct rc_client *cl, struct rc_conn *c, struct rc_err *err)
{
	struct {
		unsigned char req[RC_CTRL_HDR_LEN];
		unsigned char resp[RC_CTRL_MSG_MAX];
	} *b = calloc(1, sizeof(*b));
	struct ibv_mr *mr = NULL;
	struct ibv_wc wc[4];
	bool got_resp = false, sent = false;
	int rc, n;

	if (!b)
		return rc_err_set(err, ENOMEM, "out of memory");
	mr = ibv_reg_mr(c->pd, b, sizeof(*b), IBV_ACCESS_LOCAL_WRITE);
	if (!mr) {
		rc = rc_err_set(err, errno, "cannot register a control buffer: %s", strerror(errno));
		goto out;
	}
	rc = rc_post_recv(c, b->resp, sizeof(b->resp), mr->lkey, 0, err);
	if (rc)
		goto out;
	rc_ctrl_encode_hdr(b->req, sizeof(b->req), RC_CTRL_LIST_REQ, 0, 1);
	rc = rc_post_send(c, b->req, sizeof(b->req), mr->lkey, 0, err);
	if (rc)
		goto out;
	while (!got_resp || !sent) {
		n = rc_poll(c, wc, 4, -1, err);
		if (n == -ETIMEDOUT) {
			rc = rc_err_set(
				err, ETIMEDOUT,
				"%s did not send its region table within %d ms (is it an rdmactl server?)",
				c->peer, c->timeout_ms);
			goto out;
		}
		if (n < 0) {
			rc = n;
			goto out;
		}
		for (int i = 0; i < n; i++) {
			if (rc_wrid_op(wc[i].wr_id) == RC_OP_SEND && wc[i].opcode == IBV_WC_SEND) {
				sent = true;
				continue;
			}
			/* Only a SEND fills the buffer: an RDMA WRITE with immediate
			 * consumes the receive and leaves it as it was. */
			if (rc_wrid_op(wc[i].wr_id) != RC_OP_RECV || wc[i].opcode != IBV_WC_RECV) {
				rc = rc_err_set(err, EPROTO,
						"%s answered the region table request with "
						"an unexpected completion (opcode %d)",
						c->peer, (int)wc[i].opcode);
				goto out;
			}
			int got = rc_ctrl_decode_list(b->resp, wc[i].byte_len, cl->all,
						      RC_MAX_REGIONS);

			if (got < 0) {
				rc = rc_err_set(err, EBADMSG, "%s sent a malformed region table",
						c->peer);
				goto out;
			}
			cl->nregions = got;
			got_resp = true;
		}
	}
	rc = 0;
out:
	if (mr)
		ibv_dereg_mr(mr);
	free(b);
	return rc;
}

int rc_client_select(struct rc_client *cl, const struct rc_target *t, struct rc_err *err)
{
	if (!t->region[0]) {
		if (cl->nregions != 1)
			return rc_err_set(err, EINVAL,
					  "%s serves %d regions: name one as %s:%s/REGION",
					  cl->conns[0]->peer, cl->nregions, t->host, t->port);
		cl->region = cl->all[0];
		return 0;
	}
	for (int i = 0; i < cl->nregions; i++) {
		if (!strcmp(cl->all[i].name, t->region)) {
			cl->region = cl->all[i];
			return 0;
		}
	}
	return rc_err_set(err, ENOENT, "%s serves no region named '%s'", cl->conns[0]->peer,
			  t->region);
}

int rc_client_open(const struct rc_target *t, const struct rc_client_opts *o,
		   struct rc_client **out, struct rc_err *err)
{
	struct rc_conn_opts co = o->conn;
	struct rc_client *cl;
	int n = o->nconns > 0 ? o->nconns : 1, rc;

	if (n > 64)
		return rc_err_set(err, EINVAL, "at most 64 connections");
	if (o->token && !rc_token_valid(o->token))
		return rc_err_set(err, EINVAL,
				  "a token is 1 to %d printable characters without spaces",
				  RC_TOKEN_MAX);
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return rc_err_set(err, ENOMEM, "out of memory");
	if (o->token) {
		co.private_data = o->token;
		co.private_len = (uint8_t)strlen(o->token);
	}
	for (int i = 0; i < n; i++) {
		if (i)
			co.pd = cl->conns[0]->pd; /* one PD: one local MR serves every QP */
		rc = rc_connect(t->host, t->port, &co, &cl->conns[i], err);
		if (rc)
			goto fail;
		cl->nconns++;
	}
	rc = fetch_regions(cl, cl->conns[0], err);
	if (rc)
		goto fail;
	rc = rc_client_select(cl, t, err);
	if (rc)
		goto fail;
	snprintf(cl->host, sizeof(cl->host), "%s", t->host);
	snprintf(cl->port, sizeof(cl->port), "%s", t->port);
	cl->opts = *o;
	cl->opts.conn.pd = NULL;
	cl->opts.conn.private_data = NULL;
	cl->opts.conn.private_len = 0;
	snprintf(cl->token, sizeof(cl->token), "%s", o->token ? o->token : "");
	snprintf(cl->bind, sizeof(cl->bind), "%s", o->conn.bind_addr ? o->conn.bind_addr : "");
	snprintf(cl->dev, sizeof(cl->dev), "%s", o->conn.dev_name ? o->conn.dev_name : "");
	cl->opts.token = cl->token[0] ? cl->token : NULL;
	cl->opts.conn.bind_addr = cl->bind[0] ? cl->bind : NULL;
	cl->opts.conn.dev_name = cl->dev[0] ? cl->dev : NULL;
	*out = cl;
	return 0;
fail:
	rc_client_close(cl);
	return rc;
}

int rc_client_close(struct rc_client *cl)
{
	int rc = 0;

	if (!cl)
		return 0;
	/* Close in reverse: the first connection owns the shared PD. */
	for (int i = cl->nconns - 1; i >= 0; i--) {
		int r = rc_conn_close(cl->conns[i]);

		if (r && !rc)
			rc = r;
	}
	free(cl);
	return rc;
}

int rc_client_check(const struct rc_client *cl, uint64_t off, uint64_t len, bool write, bool atomic,
		    struct rc_err *err)
{
	const struct rc_region_desc *r = &cl->region;

	if (off > r->length || len > r->length - off)
		return rc_err_set(err, ERANGE,
				  "offset %llu + size %llu is past the end of region '%s' (%llu bytes)",
				  (unsigned long long)off, (unsigned long long)len, r->name,
				  (unsigned long long)r->length);
	if (atomic && r->access != RC_ACCESS_ATOMIC)
		return rc_err_set(
			err, EACCES,
			"region '%s' does not allow atomics (access %s; serve it with --access atomic)",
			r->name, rc_access_name(r->access));
	if (write && r->access == RC_ACCESS_RO)
		return rc_err_set(err, EACCES, "region '%s' is read-only", r->name);
	return 0;
}

bool rc_client_alive(const struct rc_client *cl)
{
	for (int i = 0; i < cl->nconns; i++) {
		const struct rc_conn *c = cl->conns[i];
		struct pollfd p = { .fd = c->ech->fd, .events = POLLIN };

		if (c->disconnected || !c->established || poll(&p, 1, 0) != 0)
			return false;
	}
	return true;
}

const char *rc_client_peer(const struct rc_client *cl)
{
	return cl->conns[0]->peer;
}

const char *rc_client_device(const struct rc_client *cl)
{
	return cl->conns[0]->dev_name;
}

#define NOTICE_ROOM 4096u

static int wait_one(struct rc_conn *c, int timeout_ms, const char *what, struct rc_err *err);

/* A staging buffer, registered on the client's PD (one PD serves every QP). */
struct staging {
	void *buf;
	size_t len;
	struct ibv_mr *mr;
};

static int staging_get(struct rc_client *cl, struct staging *st, size_t len, const char *what,
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

static void staging_put(struct staging *st)
{
	if (st->mr)
		ibv_dereg_mr(st->mr);
	free(st->buf);
	memset(st, 0, sizeof(*st));
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
	if (op == RC_OP_WRITE) {
		rc = announce(cl, &st, RC_MIG_INTENT, off, len, io->timeout_ms, err);
		if (rc) {
			staging_put(&st);
			return rc;
		}
	}
	struct rc_stream s = {
		.op = op,
		.conns = cl->conns,
		.nconns = 1,
		.buf = st.buf,
		.lkey = st.mr->lkey,
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
		rc = announce(cl, &st, RC_MIG_DONE, off, len, io->timeout_ms, err);
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
		.one_buffer = true,
	};

	rc = rc_stream_run(&s, res, err);
	staging_put(&st);
	return rc;
}

#define CTRL_SLICE_MS 100

int rc_client_ctrl(struct rc_client *cl, const void *req, size_t len, void *resp, size_t cap,
		   int timeout_ms, struct rc_err *err)
{
	struct rc_conn *c = cl->conns[0];
	struct {
		unsigned char req[RC_CTRL_MSG_MAX];
		unsigned char resp[RC_CTRL_MSG_MAX];
	} * b;
	struct ibv_mr *mr;
	struct ibv_wc wc[2];
	bool sent = false;
	double deadline;
	int rc = 0, got = -1;

	if (len > RC_CTRL_MSG_MAX)
		return rc_err_set(err, EMSGSIZE, "a control message holds at most %d bytes",
				  RC_CTRL_MSG_MAX);
	b = calloc(1, sizeof(*b));
	if (!b)
		return rc_err_set(err, ENOMEM, "out of memory");
	mr = ibv_reg_mr(c->pd, b, sizeof(*b), IBV_ACCESS_LOCAL_WRITE);
	if (!mr) {
		rc = rc_err_set(err, errno, "cannot register a control buffer: %s", strerror(errno));
		goto out;
	}
	memcpy(b->req, req, len);
	rc = rc_post_recv(c, b->resp, sizeof(b->resp), mr->lkey, 0, err);
	if (!rc)
		rc = rc_post_send(c, b->req, (uint32_t)len, mr->lkey, 0, err);
	/* Wait in short slices, so that a peer that went away is noticed (its
	 * disconnect comes as a CM event, not as a completion). */
	if (timeout_ms <= 0)
		timeout_ms = c->timeout_ms;
	deadline = rc_now() + timeout_ms / 1000.0;
	while (!rc && (!sent || got < 0)) {
		int n = rc_poll(c, wc, 2, CTRL_SLICE_MS, err);

		if (n == -ETIMEDOUT && !rc_client_alive(cl))
			rc = rc_err_set(err, ECONNRESET, "%s disconnected before it answered",
					c->peer);
		else if (n == -ETIMEDOUT && rc_now() > deadline)
			rc = rc_err_set(err, ETIMEDOUT, "%s did not answer within %d ms", c->peer,
					timeout_ms);
		else if (n < 0 && n != -ETIMEDOUT)
			rc = n;
		for (int i = 0; i < n; i++) {
			if (rc_wrid_op(wc[i].wr_id) == RC_OP_SEND)
				sent = true;
			else
				got = (int)wc[i].byte_len;
		}
	}
	if (!rc) {
		if ((size_t)got > cap)
			got = (int)cap;
		memcpy(resp, b->resp, (size_t)got);
		rc = got;
	}
out:
	if (mr)
		ibv_dereg_mr(mr);
	free(b);
	return rc;
}
