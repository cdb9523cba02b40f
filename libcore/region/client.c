// SPDX-License-Identifier: MIT
/* The region client: its connections, the server's region table, the one
 * it selects, and a request on the control channel (rc_client_ctrl). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/client.h>
#include <rdmactl/ops.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/ctrl_core.h>
#include <rdmactl/client_core.h>
#include <rdmactl/msgch_core.h>

/* Requests and their answers on the first connection's control QP go
 * through the verbs message channel: one receive and one send slot of
 * RC_CTRL_MSG_MAX bytes, made and registered on the client's first request
 * and kept while that connection lasts (client_ctrl_drop), its receive
 * posted again just before each request goes. */
static int ctrl_open(struct rc_msgch *ch, struct rc_conn *c, struct rc_err *err)
{
	struct rc_msgch_opts o = { .nconns = 1,
				   .recvs = 1,
				   .sends = 1,
				   .slot = RC_CTRL_MSG_MAX,
				   .what = "the control QP" };
	int rc;

	if ((rc = rc_msgch_init(ch, &o, err)))
		return rc;
	if ((rc = rc_msgch_reg(ch, c->pd, NULL)))
		rc = rc_err_set(err, -rc, "cannot register a control buffer: %s", strerror(-rc));
	else
		rc = rc_msgch_start(ch, 0, c, err);
	if (rc)
		rc_msgch_fini(ch);
	return rc;
}

void client_ctrl_drop(struct rc_client *cl)
{
	if (!cl->ctrl_conn)
		return;
	rc_msgch_fini(&cl->ctrl);
	cl->ctrl_conn = NULL;
}

/* cl's channel ready for a request: made now, or its receive posted again. */
static int ctrl_ready(struct rc_client *cl, struct rc_err *err)
{
	struct rc_conn *c = cl->conns[0];
	int rc;

	if (cl->ctrl_conn == c)
		return rc_msgch_repost(&cl->ctrl, 0, err);
	client_ctrl_drop(cl);
	if ((rc = ctrl_open(&cl->ctrl, c, err)))
		return rc;
	cl->ctrl_conn = c;
	return 0;
}

#define CTRL_SLICE_MS 100

/* Wait in short slices for the request's send and its answer, so that a
 * peer that went away is noticed (its disconnect comes as a CM event, not
 * as a completion). what: the answer, in a timeout's message. */
static int ctrl_wait(struct rc_client *cl, int timeout_ms, const char *what, struct rc_msgch_rx *rx,
		     struct rc_err *err)
{
	struct rc_conn *c = cl->conns[0];
	double deadline = rc_now() + timeout_ms / 1000.0;
	bool sent = false, got = false;
	struct ibv_wc wc[2];
	int rc = 0;

	while (!rc && (!sent || !got)) {
		int n = rc_poll(c, wc, 2, CTRL_SLICE_MS, err);

		if (n == -ETIMEDOUT && !rc_client_alive(cl))
			rc = rc_err_set(err, ECONNRESET, "%s disconnected before it answered",
					c->peer);
		else if (n == -ETIMEDOUT && rc_now() > deadline)
			rc = rc_err_set(err, ETIMEDOUT, "%s did not %s within %d ms", c->peer, what,
					timeout_ms);
		else if (n < 0 && n != -ETIMEDOUT)
			rc = n;
		for (int i = 0; !rc && i < n; i++) {
			int k = rc_msgch_wc(&cl->ctrl, 0, &wc[i], rx, err);

			if (k == RC_MSGCH_SENT)
				sent = true;
			else if (k == RC_MSGCH_MSG)
				got = true;
			else /* an RDMA WRITE with immediate fills no answer */
				rc = k < 0 ? k
					   : rc_err_set(err, EPROTO,
							"unexpected completion (opcode %d) from %s "
							"on the control QP",
							(int)wc[i].opcode, c->peer);
		}
	}
	return rc;
}

/* The one send-and-wait of a control request (len bytes at req): the
 * answer's length, rx holding it, or -errno. A failed exchange drops the
 * channel, and a late answer with it; the next request makes a new one. */
static int ctrl_exchange(struct rc_client *cl, const void *req, size_t len, int timeout_ms,
			 const char *what, struct rc_msgch_rx *rx, struct rc_err *err)
{
	int rc;

	if (len > RC_CTRL_MSG_MAX)
		return rc_err_set(err, EMSGSIZE, "a control message holds at most %d bytes",
				  RC_CTRL_MSG_MAX);
	if ((rc = ctrl_ready(cl, err)))
		return rc;
	memcpy(rc_msgch_send_buf(&cl->ctrl, 0), req, len);
	rc = rc_msgch_send(&cl->ctrl, 0, (uint32_t)len, err);
	if (timeout_ms <= 0)
		timeout_ms = cl->conns[0]->timeout_ms;
	if (!rc)
		rc = ctrl_wait(cl, timeout_ms, what, rx, err);
	if (rc)
		client_ctrl_drop(cl);
	return rc ? rc : (int)rx->len;
}

/* Ask the server for its region table over the control channel. */
static int fetch_regions(struct rc_client *cl, struct rc_err *err)
{
	unsigned char req[RC_CTRL_HDR_LEN];
	struct rc_msgch_rx rx = { 0 };
	int rc, got;

	rc_ctrl_encode_hdr(req, RC_CTRL_HDR_LEN, RC_CTRL_LIST_REQ, 0, 1);
	rc = ctrl_exchange(cl, req, sizeof(req), -1,
			   "send its region table (is it an rdmactl server?)", &rx, err);
	if (rc < 0)
		return rc;
	got = rc_ctrl_decode_list(rx.data, rx.len, cl->all, RC_MAX_REGIONS);
	if (got < 0)
		return rc_err_set(err, EBADMSG, "%s sent a malformed region table",
				  cl->conns[0]->peer);
	cl->nregions = got;
	return 0;
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

/* cl keeps copies of o and of the strings it points to: to connect more,
 * and to follow a region that moves. */
static void keep_opts(struct rc_client *cl, const struct rc_client_opts *o)
{
	cl->opts = *o;
	cl->opts.conn.pd = NULL;
	cl->opts.conn.private_data = NULL;
	cl->opts.conn.private_len = 0;
	snprintf(cl->token, sizeof(cl->token), "%s", o->token ? o->token : "");
	snprintf(cl->admin, sizeof(cl->admin), "%s", o->admin_token ? o->admin_token : "");
	snprintf(cl->bind, sizeof(cl->bind), "%s", o->conn.bind_addr ? o->conn.bind_addr : "");
	snprintf(cl->dev, sizeof(cl->dev), "%s", o->conn.dev_name ? o->conn.dev_name : "");
	cl->opts.token = cl->token[0] ? cl->token : NULL;
	cl->opts.admin_token = cl->admin[0] ? cl->admin : NULL;
	cl->opts.conn.bind_addr = cl->bind[0] ? cl->bind : NULL;
	cl->opts.conn.dev_name = cl->dev[0] ? cl->dev : NULL;
}

int rc_client_open(const struct rc_target *t, const struct rc_client_opts *o,
		   struct rc_client **out, struct rc_err *err)
{
	struct rc_conn_opts co;
	struct rc_client *cl;
	int n = o->nconns > 0 ? o->nconns : 1, rc;

	if (n > 64)
		return rc_err_set(err, EINVAL, "at most 64 connections");
	if ((o->token && !rc_token_valid(o->token)) ||
	    (o->admin_token && !rc_token_valid(o->admin_token)))
		return rc_err_set(err, EINVAL,
				  "a token is 1 to %d printable characters without spaces",
				  RC_TOKEN_MAX);
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return rc_err_set(err, ENOMEM, "out of memory");
	keep_opts(cl, o);
	co = cl->opts.conn;
	co.pd = o->conn.pd;
	for (int i = 0; i < n; i++) {
		if (i)
			co.pd = cl->conns[0]->pd; /* one PD: one local MR serves every QP */
		rc = client_connect(cl, t, &co, &cl->conns[i], err);
		if (rc)
			goto fail;
		cl->nconns++;
	}
	rc = fetch_regions(cl, err);
	if (rc)
		goto fail;
	rc = rc_client_select(cl, t, err);
	if (rc)
		goto fail;
	snprintf(cl->host, sizeof(cl->host), "%s", t->host);
	snprintf(cl->port, sizeof(cl->port), "%s", t->port);
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
	client_ctrl_drop(cl);
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
		return rc_err_opt(
			err, EACCES,
			"region '%s' does not allow atomics (access %s; serve it with {access} atomic)",
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

const struct rc_region_desc *rc_client_region(const struct rc_client *cl)
{
	return &cl->region;
}

const struct rc_region_desc *rc_client_regions(const struct rc_client *cl, int *n)
{
	*n = cl->nregions;
	return cl->all;
}

int rc_client_ctrl(struct rc_client *cl, const void *req, size_t len, void *resp, size_t cap,
		   int timeout_ms, struct rc_err *err)
{
	struct rc_msgch_rx rx = { 0 };
	int got = ctrl_exchange(cl, req, len, timeout_ms, "answer", &rx, err);

	if (got < 0)
		return got;
	if ((size_t)got > cap)
		got = (int)cap;
	memcpy(resp, rx.data, (size_t)got);
	return got;
}
