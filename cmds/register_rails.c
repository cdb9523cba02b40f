// SPDX-License-Identifier: MIT
/* rdmactl register's report of its rails (--listen ADDR1,ADDR2, -d
 * DEV1,DEV2): each rail of a region, and each rail's counters. The rails
 * themselves, a server each serving the first's regions, are libcore's
 * (rc_server_rails). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <rdmactl/server.h>

#include "register.h"

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

	if (!a->rails || rc_server_rails_count(a->rails) < 2)
		return;
	out_arr_begin(o, "rails");
	out_text(o, " rails");
	rail_entry(o, s, rc_server_region(s, i), true);
	for (int k = 1; k < rc_server_rails_count(a->rails); k++) {
		struct rc_server *r = rc_server_rails_server(a->rails, k);

		rail_entry(o, r, rc_server_region(r, i), false);
	}
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
	int n = a->rails ? rc_server_rails_count(a->rails) : 1;
	char labels[sizeof(m->labels)];

	for (int i = 0; i < n; i++) {
		const struct rc_server *r = i ? rc_server_rails_server(a->rails, i) : s;

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
			const struct rc_server *r = i ? rc_server_rails_server(a->rails, i) : s;
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
