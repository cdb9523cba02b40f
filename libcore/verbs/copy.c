// SPDX-License-Identifier: MIT
/*
 * Extent lists copied with one-sided READ or WRITE: what a migration's
 * destination pulls from its source. Posting and reaping go through the one
 * data path (rc_chain_post, rc_poll).
 */
#include <errno.h>
#include <string.h>

#include <rdmactl/ops.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>

#define COPY_PIECE (1u << 20)
#define COPY_DEPTH 16
#define COPY_BATCH 8
#define COPY_MAX_DEPTH 64

int rc_copy_run(const struct rc_copy *c, uint64_t *bytes, struct rc_err *err)
{
	uint32_t piece = c->piece ? c->piece : COPY_PIECE;
	int depth = c->depth > 0 ? c->depth : COPY_DEPTH;
	uint64_t posted = 0, done = 0, moved = 0, at = 0;
	size_t i = 0;
	struct ibv_wc wc[COPY_MAX_DEPTH];
	uint32_t lens[COPY_MAX_DEPTH];
	int rc = 0;

	*bytes = 0;
	if (c->op != RC_OP_READ && c->op != RC_OP_WRITE)
		return rc_err_set(err, EINVAL, "a copy is a READ or a WRITE, not %s",
				  rc_op_name(c->op));
	if (depth > c->conn->sq_depth)
		depth = c->conn->sq_depth;
	if (depth > COPY_MAX_DEPTH)
		depth = COPY_MAX_DEPTH;
	while (i < c->n || done < posted) {
		struct rc_chain ch = { .n = 0 };

		while (i < c->n && posted - done < (uint64_t)depth && ch.n < COPY_BATCH) {
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
					   .user = posted,
					   .signaled = true };

			if (len) {
				rc_chain_add(&ch, &w);
				lens[posted % COPY_MAX_DEPTH] = (uint32_t)len;
				posted++;
			}
			at += len;
			if (at >= x->len) {
				i++;
				at = 0;
			}
		}
		rc = rc_chain_post(c->conn, &ch, err);
		if (rc < 0)
			break;
		if (done == posted)
			continue;
		rc = rc_poll(c->conn, wc, (int)(sizeof(wc) / sizeof(wc[0])), c->timeout_ms, err);
		if (rc == -ETIMEDOUT)
			rc = rc_err_set(err, ETIMEDOUT, "no %s completion from %s within %d ms",
					rc_op_name(c->op), c->conn->peer,
					c->timeout_ms > 0 ? c->timeout_ms : c->conn->timeout_ms);
		if (rc < 0)
			break;
		for (int k = 0; k < rc; k++)
			moved += lens[(wc[k].wr_id & RC_WRID_MASK) % COPY_MAX_DEPTH];
		done += (uint64_t)rc;
		rc = 0;
	}
	*bytes = moved;
	return rc < 0 ? rc : 0;
}
