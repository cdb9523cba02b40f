// SPDX-License-Identifier: MIT
/*
 * Rendezvous through etcd (base/etcd.c). Each rank puts its endpoint under
 * rdmactl/JOB/rank/NNNNN with a lease that a thread keeps alive, only if no
 * other process holds that key (a transaction on its create revision), then
 * reads the job prefix once and watches it until every rank is there. A dead
 * rank's lease expires and its key goes with it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdmactl/etcd.h>
#include <rdmactl/ops.h>
#include <rdmactl/etcd_core.h>
#include <rdmactl/group_core.h>

#include "rdv_int.h"

#define POLL_MS 200
#define WATCH_TRIES 4 /* watches that ended, before reading every POLL_MS */

struct rc_etcd_rdv {
	struct rc_etcd *kv;
	char job[128];
	char prefix[192];
	int rank;
	int world;
	int timeout_ms;
	int ttl;
};

/* A pause before asking a busy or restarting etcd again, that grows with
 * the tries and differs from rank to rank; false when the deadline came. */
static bool pause_for_etcd(const struct rc_etcd_rdv *e, int *tries, double deadline)
{
	unsigned ms = POLL_MS << (*tries < 4 ? *tries : 4);
	double left = deadline - rc_now();

	if (left <= 0)
		return false;
	ms += ((unsigned)e->rank * 2654435761u + (unsigned)*tries * 40503u) % ms;
	if (ms > left * 1000)
		ms = (unsigned)(left * 1000) + 1;
	(*tries)++;
	usleep(ms * 1000);
	return true;
}

/* The rank's lease: a busy etcd's timeout or refusal (HTTP 503, 429) is
 * asked again until the timeout; no etcd at all is said at once. */
static int grant(struct rc_etcd_rdv *e, struct rc_err *err)
{
	double deadline = rc_now() + e->timeout_ms / 1000.0;
	int tries = 0, rc;

	while ((rc = rc_etcd_lease(e->kv, e->ttl, err)) == -ETIMEDOUT || rc == -EAGAIN)
		if (!pause_for_etcd(e, &tries, deadline))
			break;
	return rc;
}

int etcd_open(const char *url, int rank, int world, int timeout_ms, struct rc_etcd_rdv **out,
	      struct rc_err *err)
{
	const char *hp = url + strlen("etcd://"), *slash = strchr(hp, '/');
	struct rc_etcd_rdv *e;
	struct rc_endpoint ep;
	char server[RC_HOST_MAX + 8];
	int rc;

	if (!slash || (size_t)(slash - hp) >= sizeof(server) || !slash[1] ||
	    strlen(slash + 1) >= sizeof(e->job))
		return rc_err_set(err, EINVAL, "rendezvous '%s': expected etcd://HOST:PORT/JOB",
				  url);
	memcpy(server, hp, (size_t)(slash - hp));
	server[slash - hp] = '\0';
	if (rc_endpoint_parse(server, &ep))
		return rc_err_set(err, EINVAL, "rendezvous '%s': '%s' is not HOST:PORT", url,
				  server);
	if (!rc_etcd_ns_valid(slash + 1))
		return rc_err_set(
			err, EINVAL,
			"rendezvous '%s': the job name takes letters, digits, '-', '_' and '.'",
			url);
	e = calloc(1, sizeof(*e));
	if (!e)
		return rc_err_set(err, ENOMEM, "out of memory");
	snprintf(e->job, sizeof(e->job), "%s", slash + 1);
	snprintf(e->prefix, sizeof(e->prefix), "rdmactl/%s/rank/", e->job);
	e->rank = rank;
	e->world = world;
	e->timeout_ms = timeout_ms > 0 ? timeout_ms : 10000;
	e->ttl = e->timeout_ms / 1000 < 3 ? 3 : e->timeout_ms / 1000;
	rc = rc_etcd_open(server, e->timeout_ms, &e->kv, err);
	if (!rc)
		rc = grant(e, err);
	if (rc) {
		etcd_close(e);
		return rc;
	}
	*out = e;
	return 0;
}

static int claim(struct rc_etcd_rdv *e, const struct rc_endpoint *self, struct rc_err *err)
{
	char key[256], val[RC_EP_MAX];
	struct rc_etcd_kv held;
	int rc;

	snprintf(key, sizeof(key), "%s%05d", e->prefix, e->rank);
	endpoint_format(self, e->world, val, sizeof(val));
	rc = rc_etcd_create(e->kv, key, val, rc_etcd_lease_id(e->kv), &held, err);
	if (rc != -EEXIST)
		return rc;
	/* an earlier try of ours that etcd took but whose answer timed out */
	if (!strcmp(held.value, val) && !strcmp(held.lease, rc_etcd_lease_id(e->kv)))
		return 0;
	return rc_err_set(err, EEXIST,
			  "rank %d of job %s is claimed already by %s (two processes with one rank? "
			  "a dead one's claim goes with its lease within %d s)",
			  e->rank, e->job, held.value[0] ? held.value : "?", e->ttl);
}

struct ranks {
	struct rc_etcd_rdv *e;
	struct rc_endpoint *all;
	bool *have;
	int seen;
	bool bad; /* a rank's key says something wrong (err says what) */
	struct rc_err *err;
};

static int one_rank(void *arg, const char *key, const char *val)
{
	struct ranks *r = arg;
	struct rc_endpoint ep;
	const char *num = key + strlen(r->e->prefix);
	int rank = 0, world;

	/* rc_etcd_range gives keys under the prefix only; what follows is the
	 * rank, in digits, or the key is not a rank's */
	if (!*num || strlen(num) > 9 || strspn(num, "0123456789") != strlen(num))
		return 0;
	rank = atoi(num);
	if (endpoint_scan(val, &ep, &world))
		return 0;
	if (world != r->e->world) {
		r->bad = true;
		return rc_err_set(r->err, EINVAL,
				  "rank %d of job %s runs with world size %d, this rank with %d",
				  rank, r->e->job, world, r->e->world);
	}
	if (rank >= r->e->world || r->have[rank])
		return 0;
	r->all[rank] = ep;
	r->have[rank] = true;
	r->seen++;
	return 0;
}

static bool all_seen(void *arg)
{
	const struct ranks *r = arg;

	return r->seen == r->e->world;
}

/* A request etcd did not answer in time, or a connection it did not take
 * (a busy etcd, thousands of ranks at once, or one restarting): made again
 * until the deadline. */
static bool etcd_busy(const struct rc_etcd_rdv *e, int rc, int *tries, double deadline)
{
	return (rc == -ETIMEDOUT || rc == -ECONNREFUSED || rc == -EAGAIN) &&
	       pause_for_etcd(e, tries, deadline);
}

/* Wait for every rank's key: read the prefix, then watch it from the
 * revision read (the gateway streams each new key as it is put), so a
 * rank learns a late one at once and etcd answers one range per rank, not
 * one every POLL_MS. A watch that ends is made again, after a new read;
 * one etcd keeps ending or does not serve falls back to reading the range
 * every POLL_MS. A request etcd was too busy to answer is made again
 * (etcd_busy). */
static int wait_ranks(struct rc_etcd_rdv *e, const struct rc_endpoint *self, struct ranks *r,
		      double deadline)
{
	bool watch = true, claimed = false;
	int tries = 0, ends = 0;
	int64_t from = 0; /* the first watch's revision: a watch made again replays from it */

	for (;;) {
		int64_t rev = 0;
		struct rc_err we;
		int rc;

		/* a rank seen stays seen: one that met everyone may leave (its
		 * key goes) before this rank reads again */
		rc = rc_etcd_range_rev(e->kv, e->prefix, one_rank, r, &rev, r->err);
		/* the others are read first: a rank that disagrees (another world
		 * size) is told before it is seen, and the one already waiting
		 * learns it from the watch */
		if (!rc && !claimed && !(rc = claim(e, self, r->err))) {
			claimed = true;
			continue; /* read again, this rank's key too */
		}
		if (rc && !r->bad && etcd_busy(e, rc, &tries, deadline))
			continue;
		if (rc) /* etcd's own timeout is not the ranks': r->err names it */
			return rc == -ETIMEDOUT ? -ETIME : rc;
		if (all_seen(r))
			return 0;
		if (rc_now() >= deadline)
			return -ETIMEDOUT;
		if (!watch) {
			usleep(POLL_MS * 1000);
			continue;
		}
		if (!from)
			from = rev + 1;
		rc = rc_etcd_watch(e->kv, e->prefix, from, (int)((deadline - rc_now()) * 1000) + 1,
				   one_rank, all_seen, r, &we);
		if (!rc || rc == -ETIMEDOUT || r->bad)
			return rc;
		/* etcd went away or ended the stream: read and watch again, a few
		 * times, then read the range every POLL_MS; the watch again from
		 * the first one's revision, so that a rank that came and went
		 * meanwhile is seen */
		watch = ++ends <= WATCH_TRIES && pause_for_etcd(e, &tries, deadline);
	}
}

int etcd_exchange(struct rc_etcd_rdv *e, const struct rc_endpoint *self, struct rc_endpoint *all,
		  struct rc_err *err)
{
	double deadline = rc_now() + e->timeout_ms / 1000.0;
	bool *have = calloc((size_t)e->world, sizeof(bool));
	struct ranks r = { .e = e, .all = all, .err = err };
	char missing[256];
	int rc;

	if (!have)
		return rc_err_set(err, ENOMEM, "out of memory");
	r.have = have;
	rc = wait_ranks(e, self, &r, deadline);
	if (rc == -ETIME) {
		rc = -ETIMEDOUT;
		goto out;
	}
	if (rc != -ETIMEDOUT)
		goto out;
	ranks_missing(have, e->world, missing, sizeof(missing));
	rc = rc_err_set(err, ETIMEDOUT, "rank %s never joined job %s at etcd %s within %d ms",
			missing, e->job, rc_etcd_server(e->kv), e->timeout_ms);
out:
	free(have);
	return rc;
}

int etcd_close(struct rc_etcd_rdv *e)
{
	rc_etcd_close(e->kv); /* revoking the lease drops this rank's key at once */
	free(e);
	return 0;
}
