// SPDX-License-Identifier: MIT
/*
 * A migration's work on a region server. The destination pulls: it connects
 * to the source as an ordinary client (on its listener's PD, from its
 * listening address, so the pulled bytes land straight in its own region)
 * and READs the extents it is sent. Either side hashes extents of its own
 * memory, so the orchestrator compares what each side really holds.
 *
 * Each region has a migration state, and every step is checked against it:
 *
 *   serving --TRACK--> tracking --FENCE--> fenced --CUTOVER--> cut over --DROP--> dropped
 *      ^                  |                  |                    |                 |
 *      +----UNFENCE-------+------------------+                    +--PULL (FIRST)---+
 *
 * A cut over or dropped region is listed still (so that a client that finds
 * it here asks WHERE and follows it), without a registration: every access
 * fails, and it is a destination like any other for a move back (PULL).
 * TRACK answers a move id that every later step of that move carries; the
 * steps, PULL and HASH need an admin connection (server.c decides).
 *
 * PULL and HASH run on one worker thread, one request at a time, so that
 * the event loop answers everyone else meanwhile; the requests wait in a
 * queue of their own, each holding its connection's slot until its answer.
 *
 * Here: the entry (srv_mig_handle), the state's life and a connection's
 * end; the steps and the region's state are srv_mig_step.c's, PULL, HASH
 * and the worker srv_mig_job.c's (srv_mig_int.h between them).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "srv_mig_int.h"
#include <rdmactl/ctrl_core.h>

/* 0: no worker thread, every request runs on the loop (the fuzz harness,
 * tests/fuzz/fuzz_region_srv.c, for inputs that replay the same way). */
#ifndef SRV_MIG_THREADS
#define SRV_MIG_THREADS 1
#endif

static struct srv_mig *mig_new(const struct srv_mig_host *h)
{
	struct srv_mig *st = calloc(1, sizeof(*st));
	bool any;

	if (!st)
		return NULL;
	st->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (st->efd < 0) {
		free(st);
		return NULL;
	}
	any = !h->bind_addr || !*h->bind_addr || !strcmp(h->bind_addr, "0.0.0.0") ||
	      !strcmp(h->bind_addr, "::");
	st->pd = h->pd;
	st->bind_addr = any ? NULL : h->bind_addr;
	st->dev_name = h->dev_name;
	st->admin_token = h->admin_token;
	st->pull_region = st->hash_region = -1;
	pthread_mutex_init(&st->mu, NULL);
	pthread_cond_init(&st->cv, NULL);
	/* Without a thread the requests run on the loop, as they did. */
	st->th_up = SRV_MIG_THREADS && pthread_create(&st->th, NULL, mig_worker, st) == 0;
	return st;
}

void srv_mig_free(struct srv_mig *st)
{
	if (!st)
		return;
	if (st->th_up) {
		pthread_mutex_lock(&st->mu);
		st->quit = true;
		pthread_cond_signal(&st->cv);
		pthread_mutex_unlock(&st->mu);
		pthread_join(st->th, NULL);
	}
	for (int i = 0; i < st->njobs; i++)
		free(st->jobs[(st->head + i) % MAX_JOBS]);
	rc_client_close(st->src);
	for (int i = 0; i < RC_MAX_REGIONS; i++) {
		mig_unready(&st->reg[i]);
		free(st->reg[i].dirty);
		blk_sums_free(&st->reg[i].pulled);
		blk_sums_free(&st->reg[i].frozen);
	}
	pthread_mutex_destroy(&st->mu);
	pthread_cond_destroy(&st->cv);
	close(st->efd);
	free(st);
}

void srv_mig_conn_gone(struct srv_mig *st, const struct srv_mig_host *h, const void *conn)
{
	if (!st)
		return;
	/* The orchestrator went away before the cutover: the move is off, the
	 * region is served here again. */
	for (int i = 0; i < h->nregions && i < RC_MAX_REGIONS; i++) {
		struct mig_region *m = &st->reg[i];

		if (m->owner != conn)
			continue;
		m->owner = NULL;
		if (m->state == MS_TRACKING ||
		    (m->state == MS_FENCED &&
		     !mig_reregister(h, &h->regions[i], h->regions[i].d.access, NULL)))
			mig_serve_again(m);
	}
	for (int i = 0; i < st->nopen; i++) {
		if (st->open[i].conn != conn)
			continue;
		/* It may have landed: count it written. */
		mig_mark(&st->reg[st->open[i].region], st->open[i].off, st->open[i].len);
		st->open[i--] = st->open[--st->nopen];
	}
	/* Its requests get no answer; the one running finishes first. */
	for (int i = 0; i < st->njobs; i++) {
		struct job *j = st->jobs[(st->head + i) % MAX_JOBS];

		if (j->conn == conn)
			j->conn = NULL;
	}
	if (st->hash_owner == conn)
		st->hash_owner = NULL;
	if (st->pull_owner == conn) {
		st->pull_owner = NULL;
		if (st->running) {
			st->src_close = true;
		} else {
			rc_client_close(st->src);
			st->src = NULL;
			/* A move that pulled and never ended: its copies aside go
			 * (the worker is idle, nothing reads them). */
			if (st->pull_region >= 0)
				blk_sums_free(&st->reg[st->pull_region].pulled);
		}
	}
}

/* The answer to request seq: status rc, with err's message when it failed
 * (its parameters named as the program names them: the client's options);
 * its length, 0 when it does not fit. */
static int answer(void *out, size_t cap, uint32_t seq, struct rc_mig_resp *resp, int rc,
		  const struct rc_err *err)
{
	char text[sizeof(err->msg) + 64];

	resp->status = rc;
	if (rc)
		snprintf(resp->msg, sizeof(resp->msg), "%.*s", RC_MIG_MSG_LEN - 1,
			 rc_err_text(err, NULL, text, sizeof(text)));
	rc = rc_ctrl_encode_mig_resp(out, cap, seq, resp);
	return rc < 0 ? 0 : rc;
}

/* A migration step (MIG_CMD): TAKE answers its extents, a notice nothing,
 * every other step its rc_mig_resp. */
static int handle_cmd(struct srv_mig *st, const struct srv_mig_host *h, const void *conn,
		      bool admin, uint32_t seq, const void *msg, size_t len, void *out, size_t cap)
{
	struct rc_mig_resp resp = { 0 };
	struct rc_err e = { 0 };
	struct rc_mig_cmd c;
	int rc;

	rc = rc_ctrl_decode_mig_cmd(msg, len, &c);
	if (rc) {
		rc = rc_err_set(&e, EBADMSG, "a malformed migration step");
	} else if (c.step == RC_MIG_TAKE) {
		int ri = mig_region_index(h, c.region);

		if (ri < 0)
			rc = rc_err_set(&e, ENOENT, "no region named '%s' is served here", c.region);
		else if (!admin)
			rc = rc_err_opt(
				&e, EPERM,
				"migration steps need the server's admin token (migrate {admin_token_file}): TAKE refused");
		else if (!(rc = mig_owned(&st->reg[ri], &c, IN(MS_TRACKING) | IN(MS_FENCED), &e)))
			return mig_take(&st->reg[ri], out, cap, seq);
	} else {
		rc = mig_run_step(st, h, conn, admin, &c, &resp, &e);
		if (c.step == RC_MIG_DONE && !rc && h->written)
			h->written(h->arg, c.len);
		if (c.step == RC_MIG_INTENT || c.step == RC_MIG_DONE)
			return 0; /* notices get no answer */
	}
	return answer(out, cap, seq, &resp, rc, &e);
}

int srv_mig_handle(struct srv_mig **stp, const struct srv_mig_host *h, const void *conn, bool admin,
		   int slot, const void *msg, size_t len, void *out, size_t cap)
{
	struct rc_mig_resp resp = { 0 };
	struct rc_ctrl_hdr hdr;
	struct rc_err e = { 0 };
	struct srv_mig *st = *stp;
	int rc;

	if (rc_ctrl_decode_hdr(msg, len, &hdr) ||
	    (hdr.type != RC_CTRL_PULL_REQ && hdr.type != RC_CTRL_HASH_REQ &&
	     hdr.type != RC_CTRL_MIG_CMD))
		return 0;
	if (!st) {
		st = mig_new(h);
		if (!st) {
			resp.status = -ENOMEM;
			snprintf(resp.msg, sizeof(resp.msg), "out of memory");
			return rc_ctrl_encode_mig_resp(out, cap, hdr.seq, &resp);
		}
		*stp = st;
	}
	if (hdr.type == RC_CTRL_MIG_CMD)
		return handle_cmd(st, h, conn, admin, hdr.seq, msg, len, out, cap);
	rc = mig_job_request(st, h, conn, admin, slot, &hdr, msg, len, &e);
	if (rc == SRV_MIG_LATER)
		return rc;
	return answer(out, cap, hdr.seq, &resp, rc, &e);
}
