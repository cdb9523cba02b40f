// SPDX-License-Identifier: MIT
/* rdmactl register on several rails (--listen ADDR1,ADDR2, -d DEV1,DEV2):
 * a server per rail after the first, each serving the first's regions (the
 * same memory, registered once on each device's PD), each on a thread of
 * its own; their events go out one at a time. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rdmactl/server.h>

#include "register.h"

static pthread_mutex_t events_mu = PTHREAD_MUTEX_INITIALIZER;

void register_rails_event(void *arg, const struct rc_server_event *ev)
{
	pthread_mutex_lock(&events_mu);
	register_on_event(arg, ev);
	pthread_mutex_unlock(&events_mu);
}

int register_rails_start(struct ctx *ctx, struct register_args *a, const struct rc_server_opts *so,
			 struct rc_server *s)
{
	struct rc_err e;
	int rc;

	for (int i = 1; i < a->lr.n; i++) {
		struct rc_server_opts o = *so;

		o.addr = a->lr.host[i];
		o.port = a->lr.port[i];
		o.dev_name = a->lr.dev[i][0] ? a->lr.dev[i] : NULL;
		o.flush_every_ms = 0; /* the first rail's server writes the files back */
		rc = rc_server_create(&o, &a->rail_srv[i], &e);
		if (rc)
			return fail(ctx, rc, "rail %d (%s:%s): %s", i + 1, o.addr, o.port, e.msg);
		for (int r = 0; r < rc_server_nregions(s); r++) {
			rc = rc_server_share_region(a->rail_srv[i], s, r, &e);
			if (rc)
				return fail(ctx, rc, "rail %d (%s): %s", i + 1,
					    rc_listener_device(rc_server_listener(a->rail_srv[i])),
					    e.msg);
		}
	}
	return 0;
}

/* A rail's server, until register_rails_stop; its failure kept for then. */
struct rail_thread {
	struct rc_server *s;
	int stop_fd;
	int rc;
	struct rc_err e;
};

static struct rail_thread threads[RC_RAILS_MAX];
static pthread_t tids[RC_RAILS_MAX];
static int nthreads;
static int stop_fd = -1;

static void *rail_serve(void *p)
{
	struct rail_thread *t = p;

	t->rc = rc_server_run(t->s, t->stop_fd, &t->e);
	return NULL;
}

int register_rails_run(struct ctx *ctx, struct register_args *a)
{
	if (a->lr.n < 2)
		return 0;
	stop_fd = eventfd(0, EFD_CLOEXEC);
	if (stop_fd < 0)
		return fail(ctx, -errno, "eventfd: %s", strerror(errno));
	for (int i = 1; i < a->lr.n; i++) {
		struct rail_thread *t = &threads[nthreads];
		int rc;

		*t = (struct rail_thread){ .s = a->rail_srv[i], .stop_fd = stop_fd };
		rc = pthread_create(&tids[nthreads], NULL, rail_serve, t);
		if (rc)
			return fail(ctx, -rc, "cannot start rail %d's server: %s", i + 1,
				    strerror(rc));
		nthreads++;
	}
	return 0;
}

int register_rails_stop(struct ctx *ctx, struct register_args *a)
{
	uint64_t one = 1;
	int rc = 0;

	if (stop_fd >= 0 && write(stop_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
		rc = fail(ctx, -errno, "cannot stop the rails' servers: %s", strerror(errno));
	for (int i = 0; i < nthreads; i++) {
		pthread_join(tids[i], NULL);
		if (threads[i].rc && !rc)
			rc = fail(ctx, threads[i].rc, "rail %d: %s", i + 2, threads[i].e.msg);
	}
	nthreads = 0;
	if (stop_fd >= 0)
		close(stop_fd);
	stop_fd = -1;
	for (int i = a->lr.n - 1; i >= 1; i--) {
		struct rc_err e;
		int r = rc_server_destroy(a->rail_srv[i], &e);

		a->rail_srv[i] = NULL;
		if (r && !rc)
			rc = fail(ctx, r, "rail %d: %s", i + 1, e.msg);
	}
	return rc;
}

/* One rail of a region: its device, where it listens, its rkey. */
static void rail_entry(struct out *o, struct rc_server *s, const struct rc_region *r, bool first)
{
	const struct rc_listener *l = rc_server_listener(s);
	char rkey[16];

	snprintf(rkey, sizeof(rkey), "0x%x", r->d.rkey);
	out_obj_begin(o, NULL);
	out_str(o, "device", first ? " %s" : ", %s", rc_listener_device(l));
	out_str(o, "address", " %s", rc_listener_addr(l));
	out_u64(o, "port", ":%llu", rc_listener_port(l));
	out_str(o, "gid", NULL, rc_server_gid(s)->str);
	out_u64(o, "rkey", NULL, r->d.rkey);
	out_str(o, "rkey_hex", " rkey %s", rkey);
	out_obj_end(o);
}

void register_rails_print(struct ctx *ctx, const struct register_args *a, struct rc_server *s, int i)
{
	struct out *o = &ctx->out;

	if (a->lr.n < 2)
		return;
	out_arr_begin(o, "rails");
	out_text(o, " rails");
	rail_entry(o, s, rc_server_region(s, i), true);
	for (int k = 1; k < a->lr.n; k++)
		rail_entry(o, a->rail_srv[k], rc_server_region(a->rail_srv[k], i), false);
	out_arr_end(o);
}

/* --metrics: rail i's server's counters, per family a sample each rail
 * labelled rail and device (one rail too: a single server is rail 1). */
enum rail_stat { RS_CONNS, RS_ACCEPTED, RS_REJECTED, RS_ERRORS, RS_REQUESTS, RS_BYTES, RS_WRITES };

static double rail_stat(const struct rc_server_stats *st, enum rail_stat k)
{
	switch (k) {
	case RS_CONNS:
		return st->conns;
	case RS_ACCEPTED:
		return (double)st->accepted;
	case RS_REJECTED:
		return (double)st->rejected;
	case RS_ERRORS:
		return (double)st->dropped;
	case RS_REQUESTS:
		return (double)st->requests;
	case RS_BYTES:
		return (double)st->written_bytes;
	default:
		return (double)st->writes;
	}
}

void register_rails_metrics(struct metrics *m, const struct register_args *a,
			    const struct rc_server *s)
{
	static const struct {
		const char *name, *help;
		enum metric_type type;
	} fam[] = {
		{ "rdmactl_server_rail_connections", "connections now on each rail", METRIC_GAUGE },
		{ "rdmactl_server_rail_connections_total", "connections established on each rail",
		  METRIC_COUNTER },
		{ "rdmactl_server_rail_rejected_connections_total",
		  "connect requests each rail refused", METRIC_COUNTER },
		{ "rdmactl_server_rail_errors_total",
		  "connections each rail dropped on an error (a failed completion, keepalive)",
		  METRIC_COUNTER },
		{ "rdmactl_server_rail_requests_total", "control requests each rail answered",
		  METRIC_COUNTER },
		{ "rdmactl_server_rail_written_bytes_total",
		  "bytes rdmactl's clients announced written through each rail (RDMA WRITE; "
		  "READs and foreign clients' writes are not seen by a server)",
		  METRIC_COUNTER },
		{ "rdmactl_server_rail_writes_total",
		  "writes rdmactl's clients announced done through each rail", METRIC_COUNTER },
	};
	static const char *const names[] = { "rail", "device" };
	struct rc_server_stats st[RC_RAILS_MAX];
	int n = a->lr.n > 1 ? a->lr.n : 1;
	char labels[sizeof(m->labels)];

	for (int i = 0; i < n; i++) {
		const struct rc_server *r = i ? a->rail_srv[i] : s;

		st[i] = (struct rc_server_stats){ 0 };
		if (r)
			rc_server_stats(r, &st[i]);
	}
	/* The server's listen and device labels name the first rail: not these. */
	memcpy(labels, m->labels, sizeof(labels));
	m->labels[0] = '\0';
	metrics_label(m, "command", "register");
	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		metrics_family(m, fam[f].name, fam[f].type, fam[f].help);
		for (int i = 0; i < n; i++) {
			const struct rc_server *r = i ? a->rail_srv[i] : s;
			char rail[12];
			const char *values[] = { rail, r ? rc_listener_device(rc_server_listener(r))
							 : "" };

			if (!r)
				continue;
			snprintf(rail, sizeof(rail), "%d", i + 1);
			metrics_sample_labels(m, names, values, 2,
					      rail_stat(&st[i], (enum rail_stat)f));
		}
	}
	memcpy(m->labels, labels, sizeof(labels));
}
