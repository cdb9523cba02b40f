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
#include <rdmactl/ops_core.h>
#include <rdmactl/conn_core.h>

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

/* The completions of c, got of them at wc: all of them when they succeeded;
 * else those before the first error (which c keeps for the next call), or
 * that error when it is the first. */
static int take_good(struct rc_conn *c, struct ibv_wc *wc, int got, struct rc_err *err)
{
	for (int j = 0; j < got; j++)
		if (wc[j].status != IBV_WC_SUCCESS) {
			/* what succeeded before it counts first: a peer's last
			 * message may sit just before the error its leaving
			 * caused */
			if (j > 0) {
				c->late_err = wc[j];
				c->has_late_err = true;
				return j;
			}
			return rc_wc_error(c, &wc[j], err);
		}
	return got;
}

/* One pass over the CQs, from conns[start] round: what the first that holds
 * completions (or a kept error) gives, with its index in *which (whose
 * connection failed, on an error), or 0 when every CQ is empty. */
static int poll_round(struct rc_conn *const *conns, int n, int start, struct ibv_wc *wc, int max,
		      int *which, struct rc_err *err)
{
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
			return rc_err_set(err, EIO, "cannot poll the completion queue of %s",
					  c->peer);
		if (got == 0)
			continue;
		if (which)
			*which = i;
		return take_good(c, wc, got, err);
	}
	return 0;
}

/* Sleep on the completion channels for up to left seconds: 1 when a CQ was
 * armed just now (poll once more first: a completion may predate the
 * arming), 0 after the sleep, or -errno. pfd has room for n. */
static int sleep_on(struct rc_conn *const *conns, int n, struct pollfd *pfd, double left,
		    struct rc_err *err)
{
	bool newly = false;
	int r;

	for (int i = 0; i < n; i++) {
		int armed = rc_cq_arm(conns[i]);

		if (armed < 0)
			return rc_err_set(err, EIO, "cannot arm the completion queue of %s",
					  conns[i]->peer);
		newly |= armed > 0;
	}
	if (newly)
		return 1;
	for (int i = 0; i < n; i++)
		pfd[i] = (struct pollfd){ .fd = conns[i]->cch->fd, .events = POLLIN };
	r = poll(pfd, (nfds_t)n, (int)(left * 1000) + 1);
	if (r < 0 && errno != EINTR)
		return rc_err_set(err, errno, "poll failed: %s", strerror(errno));
	for (int i = 0; r > 0 && i < n; i++)
		if (pfd[i].revents & POLLIN)
			rc_cq_ack(conns[i]);
	return 0;
}

/* The shared CQs of conns when every one of them is on one
 * (rc_conn_opts.shared) and they are RC_SHARED_SET_MAX at most: their
 * number, in out; else 0 (each connection is polled on its own CQ). */
static int shared_set(struct rc_conn *const *conns, int n, struct rc_shared **out)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		struct rc_shared *sh = conns[i]->shared;
		int j = k - 1;

		if (!sh)
			return 0;
		/* most neighbours share one: the last one found first */
		while (j >= 0 && out[j] != sh)
			j--;
		if (j < 0) {
			if (k == RC_SHARED_SET_MAX)
				return 0;
			out[k++] = sh;
		}
	}
	return k;
}

static int index_of(struct rc_conn *const *conns, int n, const struct rc_conn *c)
{
	for (int i = 0; c && i < n; i++)
		if (conns[i] == c)
			return i;
	return -1;
}

/* poll_round for connections on one shared CQ: the completions polled wait
 * in sh's stash, in order, and a call gives the run at its head that
 * belongs to one connection (its index in *which): the successful ones,
 * or its error alone. A completion of a connection not in conns (one that
 * was closed) is dropped: every caller polls all of its CQ's connections. */
static int poll_round_shared(struct rc_shared *sh, struct rc_conn *const *conns, int n,
			     struct ibv_wc *wc, int max, int *which, struct rc_err *err)
{
	for (;;) {
		struct ibv_wc *w;
		struct rc_conn *c;
		uint32_t qpn;
		int i, k = 0;

		if (!sh->nstash) {
			int got =
				ibv_poll_cq(sh->cq, (int)(sizeof(sh->stash) / sizeof(sh->stash[0])),
					    sh->stash);

			if (got < 0)
				return rc_err_set(err, EIO,
						  "cannot poll the shared completion queue");
			if (!got)
				return 0;
			sh->shead = 0;
			sh->nstash = got;
		}
		w = &sh->stash[sh->shead];
		qpn = w->qp_num;
		c = rc_shared_conn(sh, qpn);
		i = index_of(conns, n, c);
		if (i < 0) {
			sh->shead++;
			sh->nstash--;
			continue;
		}
		if (which)
			*which = i;
		if (w->status != IBV_WC_SUCCESS) {
			sh->shead++;
			sh->nstash--;
			return rc_wc_error(c, w, err);
		}
		while (k < max && sh->nstash && sh->stash[sh->shead].qp_num == qpn &&
		       sh->stash[sh->shead].status == IBV_WC_SUCCESS) {
			wc[k++] = sh->stash[sh->shead++];
			sh->nstash--;
		}
		return k;
	}
}

/* sleep_on for shared CQs: a channel each to arm and wait on. */
static int sleep_shared(struct rc_shared *const *sh, int k, double left, struct rc_err *err)
{
	struct pollfd p[RC_SHARED_SET_MAX];
	bool newly = false;
	int r;

	if (k < 1 || k > RC_SHARED_SET_MAX)
		return rc_err_set(err, EINVAL, "cannot wait on %d shared completion queues", k);
	for (int i = 0; i < k; i++)
		if (!sh[i]->armed) {
			if (ibv_req_notify_cq(sh[i]->cq, 0))
				return rc_err_set(err, EIO,
						  "cannot arm the shared completion queue");
			sh[i]->armed = newly = true;
		}
	if (newly)
		return 1;
	for (int i = 0; i < k; i++)
		p[i] = (struct pollfd){ .fd = sh[i]->cch->fd, .events = POLLIN };
	r = poll(p, (nfds_t)k, (int)(left * 1000) + 1);
	if (r < 0 && errno != EINTR)
		return rc_err_set(err, errno, "poll failed: %s", strerror(errno));
	for (int i = 0; r > 0 && i < k; i++) {
		struct ibv_cq *cq;
		void *cctx;

		if ((p[i].revents & POLLIN) && ibv_get_cq_event(sh[i]->cch, &cq, &cctx) == 0) {
			ibv_ack_cq_events(cq, 1);
			sh[i]->armed = false;
		}
	}
	return 0;
}

/* poll_round_shared over each of k shared CQs, from the start'th. */
static int poll_round_set(struct rc_shared *const *sh, int k, int start,
			  struct rc_conn *const *conns, int n, struct ibv_wc *wc, int max,
			  int *which, struct rc_err *err)
{
	for (int i = 0; i < k; i++) {
		int got = poll_round_shared(sh[(start + i) % k], conns, n, wc, max, which, err);

		if (got)
			return got;
	}
	return 0;
}

/* rc_poll_any with room for n descriptors at pfd. */
static int poll_any(struct rc_conn *const *conns, int n, struct ibv_wc *wc, int max, int timeout_ms,
		    int *which, struct pollfd *pfd, struct rc_err *err)
{
	struct rc_shared *sh[RC_SHARED_SET_MAX];
	int k = shared_set(conns, n, sh);
	double deadline = 0;
	unsigned spins = 0;
	int start = 0;

	if (timeout_ms < 0)
		timeout_ms = conns[0]->timeout_ms;
	for (;;) {
		int got = k ? poll_round_set(sh, k, start, conns, n, wc, max, which, err)
			    : poll_round(conns, n, start, wc, max, which, err);
		double now, left;

		if (got)
			return got;
		start = (start + 1) % (k ? k : n);
		/* Busy polling reads the clock once in 1024 spins: a clock read costs
		 * as much as a poll, and the first poll needs none at all. */
		if (conns[0]->busy_poll && (++spins & 1023))
			continue;
		now = rc_now();
		if (deadline == 0)
			deadline = now + timeout_ms / 1000.0;
		left = deadline - now;
		if (left <= 0)
			return -ETIMEDOUT;
		if (conns[0]->busy_poll)
			continue;
		got = k ? sleep_shared(sh, k, left, err) : sleep_on(conns, n, pfd, left, err);
		if (got < 0)
			return got;
	}
}

int rc_poll(struct rc_conn *c, struct ibv_wc *wc, int max, int timeout_ms, struct rc_err *err)
{
	return rc_poll_any(&c, 1, wc, max, timeout_ms, NULL, err);
}
