// SPDX-License-Identifier: MIT
/*
 * Joining a group in one call: open the rendezvous, choose the address to
 * listen on, listen, publish it and learn every rank's, let the caller plan
 * which ranks talk, connect them. Every collective (alltoall, multicast,
 * migrate) starts here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdmactl/ops.h>
#include <rdmactl/group_core.h>

#include "group_int.h"

/* --listen ADDR[:PORT]; else the address the peers file gives this rank. */
static int listen_endpoint(const struct rc_group_join *j, struct rc_rdv *rdv,
			   struct rc_endpoint *ep, struct rc_err *err)
{
	struct rc_err e;

	memset(ep, 0, sizeof(*ep));
	if (j->listen) {
		if (!rc_endpoint_parse(j->listen, ep))
			return 0;
		memset(ep, 0, sizeof(*ep));
		if (strlen(j->listen) >= sizeof(ep->host) || strchr(j->listen, ':'))
			return rc_err_param(err, "listen", EINVAL,
					    "listen '%s': expected ADDR or ADDR:PORT", j->listen);
		snprintf(ep->host, sizeof(ep->host), "%s", j->listen);
		snprintf(ep->port, sizeof(ep->port), "0");
		return 0;
	}
	if (rc_rdv_self(rdv, ep, &e))
		return rc_err_param(err, "listen", EINVAL, "give listen ADDR[:PORT]: %s", e.msg);
	return 0;
}

/* What binds the group's proofs to this job (struct gjob): an etcd
 * rendezvous' job name, which every rank of the job names and a later job
 * need not; with a peers file, the ranks' endpoints alone (the nonces of
 * each connection tell two jobs on the same addresses apart). */
static void job_of(const char *rendezvous, char *out, size_t len)
{
	const char *slash;

	if (!strncmp(rendezvous, "etcd://", 7) && (slash = strchr(rendezvous + 7, '/')))
		snprintf(out, len, "etcd/%s", slash + 1);
	else
		snprintf(out, len, "file");
}

/* Listen at self over the join's transport: rdma_cm, or libfabric's
 * endpoint bound to it. */
static int join_listen(const struct rc_group_join *j, const struct rc_group_opts *go,
		       struct rc_endpoint *self, struct rc_group **g, struct rc_err *err)
{
	int rc;

	if (!j->fabric)
		return rc_group_listen(go, self, g, err);
	if (!(rc = group_alloc(go, g, err)) && !(rc = group_fab_open(*g, j->fabric, self, err)))
		(*g)->self = *self;
	return rc;
}

static int join_fail(struct rc_group_join_out *out, bool usage, int rc)
{
	if (out)
		out->usage = usage;
	return rc;
}

int rc_group_join(const struct rc_group_join *j, struct rc_group **gout,
		  struct rc_group_join_out *out, struct rc_err *err)
{
	int W = j->world, me = j->rank, rc;
	struct rc_group_opts go = { .rank = me,
				    .world = W,
				    .dev_name = j->dev_name,
				    .timeout_ms = j->timeout_ms,
				    .busy_poll = j->busy_poll,
				    .keep_going = j->keep_going,
				    .partial = j->partial,
				    .recv_depth = j->recv_depth,
				    .token = j->token };
	struct rc_endpoint self, *all = NULL;
	uint8_t *need = NULL;
	struct rc_group *g = NULL;
	struct rc_rdv *rdv = NULL;
	struct rc_err e;
	double t0 = 0;

	*gout = NULL;
	if (out)
		memset(out, 0, sizeof(*out));
	if (!j->rendezvous)
		return join_fail(out, true, rc_err_set(err, EINVAL, "no rendezvous"));
	all = calloc((size_t)(W > 0 ? W : 1), sizeof(*all));
	need = calloc((size_t)(W > 0 ? W : 1) * (size_t)(W > 0 ? W : 1), 1);
	if (!all || !need) {
		rc = join_fail(out, false, rc_err_set(err, ENOMEM, "out of memory"));
		goto fail;
	}
	rc = rc_rdv_open(j->rendezvous, me, W, j->timeout_ms, &rdv, err);
	if (rc) {
		join_fail(out, rc == -EINVAL, rc);
		goto fail;
	}
	if ((rc = listen_endpoint(j, rdv, &self, err))) {
		join_fail(out, true, rc);
		goto fail;
	}
	gethostname(self.hostname, sizeof(self.hostname) - 1);
	if ((rc = join_listen(j, &go, &self, &g, &e)) ||
	    (t0 = rc_now(), rc = rc_rdv_exchange(rdv, &self, all, &e))) {
		rc = join_fail(out, false, rc_err_set(err, -rc, "rank %d: %s", me, e.msg));
		goto fail;
	}
	g->rdv_s = rc_now() - t0;
	job_of(j->rendezvous, g->job, sizeof(g->job));
	if (j->plan && (rc = j->plan(j->plan_arg, all, W, need, err))) {
		join_fail(out, rc == -EINVAL, rc);
		goto fail;
	}
	if ((rc = j->fabric ? group_fab_connect(g, all, need, &e)
			    : rc_group_connect(g, all, need, &e))) {
		rc = join_fail(out, false, rc_err_set(err, -rc, "rank %d: %s", me, e.msg));
		goto fail;
	}
	g->rdv = rdv;
	free(all);
	free(need);
	*gout = g;
	return 0;
fail:
	if (g)
		g->gave_up = true; /* no closing handshake for a group that never formed */
	rc_group_close(g);
	rc_rdv_close(rdv);
	free(all);
	free(need);
	return rc;
}

const char *rc_group_rdv_kind(const struct rc_group *g)
{
	return g->rdv ? rc_rdv_kind(g->rdv) : "none";
}
