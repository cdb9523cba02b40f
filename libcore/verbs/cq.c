// SPDX-License-Identifier: MIT
/*
 * The one way completion queues are armed, drained and polled. Every
 * engine reaps through rc_cq_take (never sleeps; leaves an empty CQ armed)
 * or rc_poll_any (sleeps up to a timeout). A timeout argument means the
 * same everywhere: < 0 the connection's own timeout, 0 do not wait, > 0
 * wait at most that many milliseconds.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ops.h>

int rc_wc_error(const struct rc_conn *c, const struct ibv_wc *wc, struct rc_err *err)
{
	enum rc_op op = rc_wrid_op(wc->wr_id);
	const char *hint = "";

	switch (wc->status) {
	case IBV_WC_REM_ACCESS_ERR:
		hint = " (outside the region, or not allowed by its access)";
		break;
	case IBV_WC_RETRY_EXC_ERR:
		hint = " (the peer stopped answering: is it still running?)";
		break;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		hint = " (the peer posted no receive)";
		break;
	case IBV_WC_WR_FLUSH_ERR:
		hint = " (the connection had already failed)";
		break;
	default:
		break;
	}
	return rc_err_set(err, wc->status == IBV_WC_REM_ACCESS_ERR ? EACCES : EIO,
			  "%s %s %s failed: %s%s (status %d, vendor error 0x%x)", rc_op_name(op),
			  op == RC_OP_RECV ? "from" : "to", c->peer, ibv_wc_status_str(wc->status),
			  hint, wc->status, wc->vendor_err);
}

int rc_cq_arm(struct rc_conn *c)
{
	if (c->armed)
		return 0;
	if (ibv_req_notify_cq(c->cq, 0))
		return -EIO;
	c->armed = true;
	return 1;
}

void rc_cq_ack(struct rc_conn *c)
{
	struct ibv_cq *cq;
	void *cctx;

	/* The channel is non-blocking: nothing pending is not an error. */
	if (ibv_get_cq_event(c->cch, &cq, &cctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		c->armed = false;
	}
}

int rc_cq_take(struct rc_conn *c, struct ibv_wc *wc, int max)
{
	int n, armed;

	if (c->has_late_err) {
		c->has_late_err = false;
		wc[0] = c->late_err;
		return 1;
	}
	rc_cq_ack(c);
	n = ibv_poll_cq(c->cq, max, wc);
	if (n != 0 || c->armed)
		return n < 0 ? -EIO : n;
	armed = rc_cq_arm(c);
	if (armed < 0)
		return armed;
	/* A completion may have come in before the arming. */
	n = ibv_poll_cq(c->cq, max, wc);
	return n < 0 ? -EIO : n;
}

static int poll_any(struct rc_conn *const *conns, int n, struct ibv_wc *wc, int max, int timeout_ms,
		    int *which, struct pollfd *pfd, struct rc_err *err);

int rc_poll_any(struct rc_conn *const *conns, int n, struct ibv_wc *wc, int max, int timeout_ms,
		int *which, struct rc_err *err)
{
	struct pollfd few[64], *pfd = few;
	int rc;

	if (n < 1)
		return rc_err_set(err, EINVAL, "cannot poll %d connections at once", n);
	if (n > 64 && !(pfd = malloc((size_t)n * sizeof(*pfd))))
		return rc_err_set(err, ENOMEM, "out of memory");
	rc = poll_any(conns, n, wc, max, timeout_ms, which, pfd, err);
	if (pfd != few)
		free(pfd);
	return rc;
}

/* rc_poll_any with room for n descriptors at pfd. */
static int poll_any(struct rc_conn *const *conns, int n, struct ibv_wc *wc, int max, int timeout_ms,
		    int *which, struct pollfd *pfd, struct rc_err *err)
{
	double deadline = 0;
	unsigned spins = 0;
	int start = 0;

	if (timeout_ms < 0)
		timeout_ms = conns[0]->timeout_ms;
	for (;;) {
		bool newly = false;
		double now;

		for (int k = 0; k < n; k++) {
			int i = (start + k) % n;
			struct rc_conn *c = conns[i];
			int got;

			if (c->has_late_err) {
				c->has_late_err = false;
				if (which)
					*which = i;
				return rc_wc_error(c, &c->late_err, err);
			}
			got = ibv_poll_cq(c->cq, max, wc);
			if (got < 0)
				return rc_err_set(err, EIO,
						  "cannot poll the completion queue of %s", c->peer);
			if (got == 0)
				continue;
			for (int j = 0; j < got; j++)
				if (wc[j].status != IBV_WC_SUCCESS) {
					/* what succeeded before it counts first: a
					 * peer's last message may sit just before the
					 * error its leaving caused */
					if (j > 0) {
						c->late_err = wc[j];
						c->has_late_err = true;
						if (which)
							*which = i;
						return j;
					}
					if (which)
						*which = i; /* whose connection failed */
					return rc_wc_error(c, &wc[j], err);
				}
			if (which)
				*which = i;
			return got;
		}
		start = (start + 1) % n;
		/* Busy polling reads the clock once in 1024 spins: a clock read costs
		 * as much as a poll, and the first poll needs none at all. */
		if (conns[0]->busy_poll && (++spins & 1023))
			continue;
		now = rc_now();
		if (deadline == 0)
			deadline = now + timeout_ms / 1000.0;
		double left = deadline - now;

		if (left <= 0)
			return -ETIMEDOUT;
		if (conns[0]->busy_poll)
			continue;
		for (int i = 0; i < n; i++) {
			int armed = rc_cq_arm(conns[i]);

			if (armed < 0)
				return rc_err_set(err, EIO, "cannot arm the completion queue of %s",
						  conns[i]->peer);
			newly |= armed > 0;
		}
		if (newly)
			continue; /* poll once more: a completion may predate the arming */
		for (int i = 0; i < n; i++)
			pfd[i] = (struct pollfd){ .fd = conns[i]->cch->fd, .events = POLLIN };
		int r = poll(pfd, (nfds_t)n, (int)(left * 1000) + 1);

		if (r < 0 && errno != EINTR)
			return rc_err_set(err, errno, "poll failed: %s", strerror(errno));
		for (int i = 0; r > 0 && i < n; i++)
			if (pfd[i].revents & POLLIN)
				rc_cq_ack(conns[i]);
	}
}

int rc_poll(struct rc_conn *c, struct ibv_wc *wc, int max, int timeout_ms, struct rc_err *err)
{
	return rc_poll_any(&c, 1, wc, max, timeout_ms, NULL, err);
}
