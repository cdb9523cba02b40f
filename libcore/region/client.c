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

const struct rc_region_desc *rc_client_region(const struct rc_client *cl)
{
	return &cl->region;
}

const struct rc_region_desc *rc_client_regions(const struct rc_client *cl, int *n)
{
	*n = cl->nregions;
	return cl->all;
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
