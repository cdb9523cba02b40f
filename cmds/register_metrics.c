// SPDX-License-Identifier: MIT
/* register's --metrics: the server's figures (its counters, its regions, and
 * each rail's counters) as a document of values, rendered through the tables
 * of rows below; the file computes nothing of its own. */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include <rdmactl/server.h>

#include "register.h"

static const struct metric_row server_rows[] = {
	{ "up", "rdmactl_server_up", METRIC_GAUGE, "1 while the server serves, 0 once it stopped" },
	{ "start_time_s", "rdmactl_server_start_time_seconds", METRIC_GAUGE,
	  "when the server started, in seconds since the Unix epoch" },
	{ "connections", "rdmactl_server_connections", METRIC_GAUGE, "connections now" },
	{ "accepted", "rdmactl_server_connections_total", METRIC_COUNTER,
	  "connections established" },
	{ "rejected", "rdmactl_server_rejected_connections_total", METRIC_COUNTER,
	  "connect requests refused (token, too many connections, accept failed)" },
#define ERRORS_ROW(kind) \
	{ \
		"errors." kind, "rdmactl_server_errors_total", METRIC_COUNTER, \
			"errors by kind: connection (dropped on a failed completion or keepalive), " \
			"flush (a periodic write-back of a region)", \
			0, "kind=" kind \
	}
	ERRORS_ROW("connection"),
	ERRORS_ROW("flush"),
#undef ERRORS_ROW
	{ "requests", "rdmactl_server_requests_total", METRIC_COUNTER,
	  "control requests answered (region lists, migration steps)" },
	{ "immediates", "rdmactl_server_immediates_total", METRIC_COUNTER,
	  "immediate data received (RDMA WRITE_WITH_IMM)" },
	{ "regions#", "rdmactl_server_regions", METRIC_GAUGE, "regions served" },
	{ "regions[].length", "rdmactl_server_region_size_bytes", METRIC_GAUGE,
	  "each region's size", 0, "region={name}" },
};

/* Each rail's counters (one rail too: a single server is rail 1). */
#define RAIL_LABELS "rail={rail},device={device}"
static const struct metric_row rail_rows[] = {
	{ "rails[].connections", "rdmactl_server_rail_connections", METRIC_GAUGE,
	  "connections now on each rail", 0, RAIL_LABELS },
	{ "rails[].accepted", "rdmactl_server_rail_connections_total", METRIC_COUNTER,
	  "connections established on each rail", 0, RAIL_LABELS },
	{ "rails[].rejected", "rdmactl_server_rail_rejected_connections_total", METRIC_COUNTER,
	  "connect requests each rail refused", 0, RAIL_LABELS },
	{ "rails[].dropped", "rdmactl_server_rail_errors_total", METRIC_COUNTER,
	  "connections each rail dropped on an error (a failed completion, keepalive)", 0,
	  RAIL_LABELS },
	{ "rails[].requests", "rdmactl_server_rail_requests_total", METRIC_COUNTER,
	  "control requests each rail answered", 0, RAIL_LABELS },
	{ "rails[].written_bytes", "rdmactl_server_rail_written_bytes_total", METRIC_COUNTER,
	  "bytes rdmactl's clients announced written through each rail (RDMA WRITE; "
	  "READs and foreign clients' writes are not seen by a server)",
	  0, RAIL_LABELS },
	{ "rails[].writes", "rdmactl_server_rail_writes_total", METRIC_COUNTER,
	  "writes rdmactl's clients announced done through each rail", 0, RAIL_LABELS },
};
#undef RAIL_LABELS

static void put_stats(json_t *o, const struct rc_server_stats *st)
{
	json_object_set_new(o, "connections", json_integer(st->conns));
	json_object_set_new(o, "accepted", json_integer((json_int_t)st->accepted));
	json_object_set_new(o, "rejected", json_integer((json_int_t)st->rejected));
	json_object_set_new(o, "dropped", json_integer((json_int_t)st->dropped));
	json_object_set_new(o, "requests", json_integer((json_int_t)st->requests));
	json_object_set_new(o, "immediates", json_integer((json_int_t)st->imms));
	json_object_set_new(o, "written_bytes", json_integer((json_int_t)st->written_bytes));
	json_object_set_new(o, "writes", json_integer((json_int_t)st->writes));
}

/* Each rail's device and counters; rail 1 is s. */
static json_t *rails_doc(const struct register_args *a, const struct rc_server *s)
{
	int n = a->rails ? rc_server_rails_count(a->rails) : 1;
	json_t *rails = json_array();

	for (int i = 0; i < n; i++) {
		const struct rc_server *r = i ? rc_server_rails_server(a->rails, i) : s;
		struct rc_server_stats st;
		json_t *o;

		if (!r)
			continue;
		rc_server_stats(r, &st);
		o = json_object();
		json_object_set_new(o, "rail", json_integer(i + 1));
		json_object_set_new(o, "device",
				    json_string(rc_listener_device(rc_server_listener(r))));
		put_stats(o, &st);
		json_array_append_new(rails, o);
	}
	return rails;
}

json_t *register_figures(const struct register_args *a, const struct rc_server *s, double started,
			 bool up)
{
	const struct rc_listener *l = rc_server_listener(s);
	json_t *doc = json_object(), *errors = json_object(), *regions = json_array();
	struct rc_server_stats st;
	char listen[RC_HOST_MAX + 16];

	rc_server_stats(s, &st);
	snprintf(listen, sizeof(listen), "%s:%u", rc_listener_addr(l), rc_listener_port(l));
	json_object_set_new(doc, "listen", json_string(listen));
	json_object_set_new(doc, "device", json_string(rc_listener_device(l)));
	json_object_set_new(doc, "up", json_boolean(up));
	json_object_set_new(doc, "start_time_s", json_real(started));
	put_stats(doc, &st);
	json_object_set_new(errors, "connection", json_integer((json_int_t)st.dropped));
	json_object_set_new(errors, "flush", json_integer((json_int_t)st.flush_failed));
	json_object_set_new(doc, "errors", errors);
	for (int i = 0; i < rc_server_nregions(s); i++) {
		const struct rc_region *r = rc_server_region(s, i);
		json_t *o = json_object();

		json_object_set_new(o, "name", json_string(r->d.name));
		json_object_set_new(o, "length", json_integer((json_int_t)r->d.length));
		json_array_append_new(regions, o);
	}
	json_object_set_new(doc, "regions", regions);
	json_object_set_new(doc, "rails", rails_doc(a, s));
	return doc;
}

void register_figures_render(struct metrics *m, const json_t *doc)
{
	char labels[sizeof(m->labels)];

	metrics_labels_from(m, doc, "listen,device");
	metrics_from_report(m, doc, server_rows, sizeof(server_rows) / sizeof(server_rows[0]));
	/* The server's listen and device labels name the first rail: not these. */
	memcpy(labels, m->labels, sizeof(labels));
	m->labels[0] = '\0';
	metrics_label(m, "command", "register");
	metrics_from_report(m, doc, rail_rows, sizeof(rail_rows) / sizeof(rail_rows[0]));
	memcpy(m->labels, labels, sizeof(labels));
}
