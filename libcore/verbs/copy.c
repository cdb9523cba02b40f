// SPDX-License-Identifier: MIT
/*
 * Extent lists copied with one-sided READ or WRITE: what a migration's
 * destination pulls from its source. Posting and reaping go through the one
 * data path: the engine (pipe.c), every piece signalled.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ops.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/pipe_core.h>

#define COPY_PIECE (1u << 20)
#define COPY_DEPTH 16
#define COPY_BATCH 8
#define COPY_MAX_DEPTH 64

int rc_copy_run(const struct rc_copy *c, uint64_t *bytes, struct rc_err *err)
{
	uint32_t piece = c->piece ? c->piece : COPY_PIECE;
	struct rc_pipe_opts po = { .depth = c->depth > 0 ? c->depth : COPY_DEPTH,
				   .signal_every = 1,
				   .batch = COPY_BATCH };
	struct rc_pipe *p = malloc(sizeof(*p));
	uint64_t moved = 0, at = 0;
	size_t i = 0;
	struct rc_cqe wc[COPY_MAX_DEPTH];
	uint32_t lens[COPY_MAX_DEPTH];
	int rc = 0;

	*bytes = 0;
	if (c->op != RC_OP_READ && c->op != RC_OP_WRITE)
		rc = rc_err_set(err, EINVAL, "a copy is a READ or a WRITE, not %s",
				rc_op_name(c->op));
	else if (!p)
		rc = rc_err_set(err, ENOMEM, "out of memory");
	if (rc) {
		free(p);
		return rc;
	}
	if (po.depth > COPY_MAX_DEPTH)
		po.depth = COPY_MAX_DEPTH;
	rc_pipe_init(p, &rc_verbs_transport, c->conn, &po);
	while (i < c->n || rc_pipe_outstanding(p)) {
		while (i < c->n && rc_pipe_room(p, 0)) {
			const struct rc_extent *x = &c->ext[i];
			uint64_t len = x->len - at < piece ? x->len - at : piece;
			uint64_t lo = (c->op == RC_OP_READ ? x->dst : x->src) + at;
			uint64_t ro = (c->op == RC_OP_READ ? x->src : x->dst) + at;
			struct rc_wr w = { .op = c->op,
					   .laddr = c->local + lo,
					   .len = (uint32_t)len,
					   .lkey = c->lkey,
					   .raddr = c->remote + ro,
					   .rkey = c->rkey,
					   .user = rc_pipe_seq(p) };

			if (len) {
				lens[w.user % COPY_MAX_DEPTH] = (uint32_t)len;
				if ((rc = rc_pipe_add(p, &w, false, err)))
					break;
			}
			at += len;
			if (at >= x->len) {
				i++;
				at = 0;
			}
		}
		if (!rc)
			rc = rc_pipe_flush(p, err);
		if (rc < 0)
			break;
		rc = 0;
		if (!rc_pipe_outstanding(p))
			continue;
		rc = rc_pipe_poll(p, 1, wc, COPY_MAX_DEPTH, c->timeout_ms, NULL, err);
		if (rc == -ETIMEDOUT)
			rc = rc_err_set(err, ETIMEDOUT, "no %s completion from %s within %d ms",
					rc_op_name(c->op), c->conn->peer,
					c->timeout_ms > 0 ? c->timeout_ms : c->conn->timeout_ms);
		if (rc < 0)
			break;
		for (int k = 0; k < rc; k++) {
			uint64_t from, to = rc_pipe_complete(p, wc[k].user, &from);

			for (; from < to; from++)
				moved += lens[from % COPY_MAX_DEPTH];
		}
		rc = 0;
	}
	*bytes = moved;
	free(p);
	return rc < 0 ? rc : 0;
}
