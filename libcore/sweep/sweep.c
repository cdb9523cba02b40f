// SPDX-License-Identifier: MIT
/*
 * The sweep over a group: in each round of the circle schedule every rank
 * meets one peer; first the lower rank of each pair measures towards the
 * higher, then the other way, the group's barrier between the phases, so
 * that no port carries two tests at once; where ranks share a port (one
 * device for several ranks), the pairs of a phase that would meet on it
 * take turns (rc_sweep_turns), or each would measure the other's traffic
 * and one device's healthy pairs would be judged against each other. The measuring rank streams RDMA
 * WRITEs of msg_size into its peer's buffer (depth outstanding, for a
 * duration or a count), then times 8-byte WRITEs and READs one at a time.
 * Each rank reads its port's counters around each phase. The rows are
 * gathered to rank 0 up the group's tree, which goes around the pairs
 * that could not connect (they are not measured; their cells say why).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdmactl/mem.h>
#include <rdmactl/ops.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/pipe_core.h>
#include <rdmactl/mem_core.h>
#include <rdmactl/group_core.h>
#include <rdmactl/sweep_core.h>
#include <rdmactl/xxh64_core.h>

#include "sweep_int.h"

/* rc_group_burst's note: a direction's rate while data flows. */
static void note_flow(void *arg, uint64_t done, double now)
{
	rc_sweep_flow_note(arg, done, now);
}

static int measure_bw(struct sweep *s, int peer, struct rc_sweep_cell *c, struct rc_err *err)
{
	const struct rc_sweep_opts *o = s->o;
	double t0 = rc_now();
	struct rc_sweep_flow flow;
	/* The engine's pipeline, signalled as write --bench's stream is. */
	struct rc_group_burst b = { .laddr = s->mem.buf,
				    .len = (uint32_t)o->msg_size,
				    .lkey = s->mr->lkey,
				    .raddr = s->theirs[peer].addr,
				    .rkey = s->theirs[peer].rkey,
				    .iters = o->duration_s > 0 ? 0 : o->iters,
				    .until = t0 + o->duration_s,
				    .depth = o->depth,
				    .signal_every = RC_PIPE_SIGNAL_EVERY,
				    .note = note_flow,
				    .note_arg = &flow };
	uint64_t posted;
	int rc;

	rc_sweep_flow_start(&flow, 4 * (uint64_t)o->depth, t0);
	if ((rc = rc_group_write_burst(s->g, peer, &b, &posted, err)))
		return rc;
	c->seconds = rc_now() - t0;
	rc_sweep_flow_note(&flow, posted, t0 + c->seconds);
	c->bytes = posted * o->msg_size;
	c->bw_gbit = c->seconds > 0 ? (double)c->bytes * 8 / c->seconds / 1e9 : 0;
	c->bw_flow_gbit = rc_sweep_flow_rate(&flow, o->msg_size);
	if (c->bw_flow_gbit <= 0)
		c->bw_flow_gbit = c->bw_gbit;
	return 0;
}

static int measure(struct sweep *s, int peer, struct rc_err *err)
{
	struct rc_sweep_cell *c = &s->row[peer];
	struct rc_sweep_tail w, r;
	int rc;

	c->shared_port = s->port[s->me] == s->port[peer];
	sweep_say(s, peer, "write bandwidth");
	if ((rc = measure_bw(s, peer, c, err)))
		return rc;
	sweep_say(s, peer, "write latency");
	if ((rc = sweep_time_lat(s, peer, false, s->o->lat_iters, &w,
				 s->cdf ? sweep_cdf(s, peer, RC_SWEEP_CDF_WRITE) : NULL, err)))
		return rc;
	c->wlat_p50_us = w.p50_us;
	c->wlat_p99_us = w.p99_us;
	c->wlat_p999_us = w.p999_us;
	c->wlat_max_us = w.max_us;
	sweep_say(s, peer, "read latency");
	if ((rc = sweep_time_lat(s, peer, true, s->o->lat_iters, &r,
				 s->cdf ? sweep_cdf(s, peer, RC_SWEEP_CDF_READ) : NULL, err)))
		return rc;
	c->rlat_p50_us = r.p50_us;
	c->rlat_p99_us = r.p99_us;
	c->rlat_p999_us = r.p999_us;
	c->rlat_max_us = r.max_us;
	return 0;
}

/* One phase of a round: the ranks whose turn it is measure towards their
 * peer; every rank notes its port's counters that moved meanwhile. */
static int phase(struct sweep *s, int peer, bool active, struct rc_err *err)
{
	const char *dev = rc_group_dev(s->g);
	int port = rc_group_port(s->g), rc;

	if ((rc = rc_group_barrier(s->g, err)))
		return rc;
	if (peer >= 0)
		ctr_read(s->o->sysfs, dev, port, &s->before);
	if (active && (rc = measure(s, peer, err)))
		return rc;
	if ((rc = rc_group_barrier(s->g, err)))
		return rc;
	if (peer >= 0) {
		struct rc_sweep_cell *c = &s->row[peer];

		ctr_read(s->o->sysfs, dev, port, &s->after);
		c->nctr = ctr_moved(&s->before, &s->after, c->ctr, c->nctr, RC_SWEEP_CTR_MAX);
	}
	return 0;
}

/* Gather the rows to rank 0 up the group's tree, which goes around the
 * pairs that could not connect (rank 0's too). */
static int gather_rows(struct sweep *s, struct rc_sweep_cell *m, struct rc_err *err)
{
	return rc_group_gather_tree(s->g, s->row, (size_t)s->world * sizeof(*s->row), m, err);
}

int sweep_gather_nodes(struct sweep *s, struct rc_sweep_node *nodes, struct rc_err *err)
{
	const struct rc_endpoint *ep = rc_group_self(s->g);
	struct rc_sweep_node me = { .port = rc_group_port(s->g) };

	snprintf(me.host, sizeof(me.host), "%s", ep->host);
	snprintf(me.hostname, sizeof(me.hostname), "%s", ep->hostname);
	snprintf(me.dev, sizeof(me.dev), "%s", rc_group_dev(s->g));
	me.rate_gbit = rc_sweep_link_rate(s->o->sysfs, me.dev, me.port);
	me.cong = s->cong;
	return rc_group_gather_tree(s->g, &me, sizeof(me), nodes, err);
}

/* This rank's port, the same number on every rank of one kernel that opens
 * the same device and port: the kernel's boot id (else the host's name),
 * the device, the port. */
static uint64_t port_key(struct sweep *s)
{
	char id[128] = "", what[256];
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	struct rc_xxh64 h;

	if (!f || !fgets(id, sizeof(id), f))
		gethostname(id, sizeof(id) - 1);
	if (f)
		fclose(f);
	snprintf(what, sizeof(what), "%s/%s/%d", id, rc_group_dev(s->g), rc_group_port(s->g));
	rc_xxh64_init(&h, 0);
	rc_xxh64_update(&h, what, strlen(what));
	return rc_xxh64_value(&h);
}

/* Which ranks share a port, so that their pairs take turns. */
static int ports(struct sweep *s, struct rc_err *err)
{
	uint64_t *keys = calloc((size_t)s->world, sizeof(*keys));
	int rc;

	s->port = calloc((size_t)s->world, sizeof(*s->port));
	s->turn = calloc((size_t)s->world, sizeof(*s->turn));
	if (!keys || !s->port || !s->turn) {
		free(keys);
		return rc_err_set(err, ENOMEM, "out of memory");
	}
	if (!(rc = rc_group_allgather_u64(s->g, port_key(s), keys, err)))
		s->nports = rc_sweep_port_ids(s->world, keys, s->port);
	free(keys);
	return rc;
}

/* A string a peer sent in a field of cap bytes: it must end in a NUL
 * there; its control characters (a terminal's escapes) become '?'. */
bool sweep_peer_string(char *str, size_t cap)
{
	char *end = memchr(str, 0, cap);

	if (!end)
		return false;
	for (char *p = str; p < end; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return true;
}

/* What the other ranks sent, checked before anything reads it: every string
 * terminated in its field (made printable), every count and class in its
 * range. A rank that sent otherwise is refused by name. */
static int check_gathered(struct rc_sweep_result *res, int me, struct rc_err *err)
{
	int W = res->world;

	for (int i = 0; i < W; i++) {
		struct rc_sweep_node *n = &res->nodes[i];

		if (i != me && (!sweep_peer_string(n->host, sizeof(n->host)) ||
				!sweep_peer_string(n->hostname, sizeof(n->hostname)) ||
				!sweep_peer_string(n->dev, sizeof(n->dev))))
			return rc_err_set(err, EBADMSG,
					  "rank %d sent a node record whose names are not "
					  "terminated strings: refused",
					  i);
		for (int j = 0; j < W && i != me; j++) {
			struct rc_sweep_cell *c = &res->m[(size_t)i * (size_t)W + (size_t)j];
			bool ok = c->nctr >= 0 && c->nctr <= RC_SWEEP_CTR_MAX && c->link >= 0 &&
				  c->link <= RC_LINK_OTHER && (c->shared_port & ~1) == 0 &&
				  sweep_peer_string(c->why, sizeof(c->why));

			for (int k = 0; ok && k < RC_SWEEP_CTR_MAX; k++)
				ok = sweep_peer_string(c->ctr[k].name, sizeof(c->ctr[k].name));
			if (!ok)
				return rc_err_set(err, EBADMSG,
						  "rank %d sent a row whose cell %d holds a string "
						  "not terminated, or a count out of range: refused",
						  i, j);
		}
	}
	return 0;
}

/* With o->cdf: every rank's distributions to rank 0, where each one a peer
 * sent must hold together (rc_sweep_cdf_ok) and, under load, count the
 * samples its cell's tail counts; a rank that sent otherwise is refused. */
static int gather_cdfs(struct sweep *s, struct rc_sweep_result *res, struct rc_err *err)
{
	size_t W = (size_t)s->world, row = W * RC_SWEEP_CDF_KINDS;
	int rc;

	if (!s->cdf)
		return 0;
	if (s->me == 0 && !(res->cdf = calloc(W * row, sizeof(*res->cdf))))
		return rc_err_set(err, ENOMEM, "out of memory");
	if ((rc = rc_group_gather_tree(s->g, s->cdf, row * sizeof(*s->cdf), res->cdf, err)) || s->me)
		return rc;
	for (size_t k = row; k < W * row; k++) {
		const struct rc_sweep_cdf *c = &res->cdf[k];
		const struct rc_sweep_cell *cl = &res->m[k / RC_SWEEP_CDF_KINDS];
		int kind = (int)(k % RC_SWEEP_CDF_KINDS);

		if (!rc_sweep_cdf_ok(c) ||
		    (kind == RC_SWEEP_CDF_WRITE_LOAD && c->n != cl->wload.n) ||
		    (kind == RC_SWEEP_CDF_READ_LOAD && c->n != cl->rload.n))
			return rc_err_set(err, EBADMSG,
					  "rank %zu sent a latency distribution towards rank %zu "
					  "that does not hold together: refused",
					  k / row, k / RC_SWEEP_CDF_KINDS % W);
	}
	return 0;
}

int sweep_setup(struct sweep *s, struct rc_err *err)
{
	struct remote_buf mine;
	size_t len = s->o->msg_size > LAT_BYTES ? s->o->msg_size : LAT_BYTES;
	int rc;

	s->theirs = calloc((size_t)s->world, sizeof(*s->theirs));
	s->lat = calloc((size_t)s->o->lat_iters, sizeof(double));
	s->row = calloc((size_t)s->world, sizeof(*s->row));
	if (s->o->cdf && !(s->cdf = calloc((size_t)s->world * RC_SWEEP_CDF_KINDS, sizeof(*s->cdf))))
		return rc_err_set(err, ENOMEM, "out of memory");
	if (!s->theirs || !s->lat || !s->row)
		return rc_err_set(err, ENOMEM, "out of memory");
	if ((rc = rc_mem_alloc(&s->mem, RC_MEM_HOST, len, NULL, true, err)))
		return rc;
	memset(s->mem.buf, 0xa5, len);
	rc_lat_clk_init(&s->clk, RC_LAT_CLOCK_MONOTONIC, NULL);
	if ((rc = rc_mem_register(&s->mem, rc_group_pd(s->g), rc_access_ibv(RC_ACCESS_RW), &s->mr,
				  err)))
		return rc;
	mine = (struct remote_buf){ .addr = s->mem.mr_addr, .rkey = s->mr->rkey };
	if ((rc = rc_group_exchange(s->g, &mine, sizeof(mine), s->theirs, err)))
		return rc;
	return ports(s, err);
}

/* The cell of a pair that could not connect: not measured, with the class
 * of the reason and this rank's message. */
static void unconnected(struct sweep *s, int peer)
{
	struct rc_sweep_cell *c = &s->row[peer];
	const char *why;

	c->link = (int32_t)rc_group_link(s->g, peer, &why);
	c->status = -ENOTCONN;
	snprintf(c->why, sizeof(c->why), "%s", why);
}

static int sweep_rounds(struct sweep *s, struct rc_err *err)
{
	int rc;

	for (s->round = 0; s->round < s->rounds; s->round++) {
		int peer = rc_sweep_partner(s->world, s->round, s->me);
		int turns = rc_sweep_turns(s->world, s->round, s->port, s->nports, s->turn);

		if (turns < 0)
			return rc_err_set(err, -turns, "out of memory");

		/* a pair not asked for: marked, and its ranks sit the round out */
		if (peer >= 0 && s->o->want &&
		    !s->o->want[(size_t)s->me * (size_t)s->world + (size_t)peer]) {
			s->row[peer].status = RC_SWEEP_SKIPPED;
			peer = -1;
		}
		/* a pair that could not connect: the same, with its reason */
		if (peer >= 0 && rc_group_link(s->g, peer, NULL) != RC_LINK_UP) {
			unconnected(s, peer);
			peer = -1;
		}

		/* in each phase the pairs that share a port take turns */
		for (int ph = 0; ph < 2; ph++)
			for (int t = 0; t < turns; t++) {
				bool mine = peer >= 0 && s->turn[s->me] == t;
				bool active = mine && (ph == 0) == (s->me < peer);

				if (peer < 0 && t == 0)
					sweep_say(s, -1, "sits this round out");
				else if (mine && !active)
					sweep_say(s, peer, "answering");
				else if (peer >= 0 && !mine && t == 0)
					sweep_say(s, peer, "waits its turn on a shared port");
				if ((rc = phase(s, mine ? peer : -1, active, err)))
					return rc;
			}
	}
	return 0;
}

int sweep_timeout_ms(struct rc_group *g, int me, int world)
{
	struct rc_conn *any = NULL;

	for (int j = 0; j < world && !any; j++)
		if (j != me && rc_group_link(g, j, NULL) == RC_LINK_UP)
			any = rc_group_conn(g, j);
	return any && any->timeout_ms > 0 ? any->timeout_ms : 10000;
}

int rc_sweep_run(struct rc_group *g, const struct rc_sweep_opts *o, struct rc_sweep_result *res,
		 struct rc_err *err)
{
	struct sweep s = { .g = g, .o = o, .me = rc_group_rank(g), .world = rc_group_world(g) };
	double t0 = rc_now();
	int rc;

	memset(res, 0, sizeof(*res));
	s.rounds = rc_sweep_rounds(s.world);
	if (!s.rounds || !o->msg_size || o->msg_size > (1ULL << 30) || o->depth < 1 ||
	    o->lat_iters < 1 || (o->duration_s <= 0 && !o->iters))
		return rc_err_set(
			err, EINVAL,
			"a sweep needs 2 ranks or more, a message size up to 1 GiB, a depth, latency iterations and a duration or a count");
	s.timeout_ms = sweep_timeout_ms(g, s.me, s.world);
	res->world = s.world;
	res->rounds = s.rounds;
	res->m = calloc((size_t)s.world * (size_t)s.world, sizeof(*res->m));
	res->nodes = calloc((size_t)s.world, sizeof(*res->nodes));
	if (!res->m || !res->nodes) {
		rc = rc_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = sweep_setup(&s, err)) || (rc = sweep_rounds(&s, err)) ||
	    (o->load && (rc = sweep_load_pass(&s, err))) || (rc = rc_group_barrier(g, err)))
		goto out;
	memcpy(&res->m[(size_t)s.me * (size_t)s.world], s.row, (size_t)s.world * sizeof(*s.row));
	if ((rc = gather_rows(&s, res->m, err)) || (rc = sweep_gather_nodes(&s, res->nodes, err)) ||
	    (rc = gather_cdfs(&s, res, err)))
		goto out;
	if (s.me == 0 && (rc = check_gathered(res, s.me, err)))
		goto out;
	if ((rc = sweep_retime(&s, res, err)))
		goto out;
	res->seconds = rc_now() - t0;
out:
	if (rc)
		rc_group_abort_err(g, err, "the sweep failed");
	sweep_free(&s);
	if (rc)
		rc_sweep_result_free(res);
	return rc;
}

void sweep_free(struct sweep *s)
{
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->mem.buf)
		rc_mem_free(&s->mem);
	free(s->theirs);
	free(s->lat);
	free(s->row);
	free(s->cdf);
	free(s->port);
	free(s->turn);
}

void rc_sweep_result_free(struct rc_sweep_result *res)
{
	free(res->m);
	free(res->nodes);
	free(res->cdf);
	res->m = NULL;
	res->nodes = NULL;
	res->cdf = NULL;
}
