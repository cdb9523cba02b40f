// SPDX-License-Identifier: MIT
/* --metrics of a transfer (write, read): a rendering of the transfer's
 * report values (the keys rails_report emits: bytes, seconds, and per rail
 * rail, device, bytes, writes or reads, chunks, errors, busy_s, failed)
 * through the table of rows below; the file computes nothing of its own.
 * The values are put in a document of their own because the report is not
 * always emitted (a read to stdout, a failed transfer) and names the rails
 * of one rail only in its totals. */
#include <stdio.h>

#include <jansson.h>

#include "rails_cmds.h"

#define RAIL_LABELS "rail={rail},device={device}"

static const struct metric_row transfer_rows[] = {
	{ "rails#", "rdmactl_transfer_rails", METRIC_GAUGE, "rails the transfer was striped over" },
	{ "bytes", "rdmactl_transfer_bytes_total", METRIC_COUNTER,
	  "bytes the transfer moved, every rail" },
	{ "seconds", "rdmactl_transfer_duration_seconds", METRIC_GAUGE,
	  "how long the transfer took" },
	{ "rails[].bytes", "rdmactl_transfer_rail_bytes_total", METRIC_COUNTER,
	  "bytes each rail moved (the chunks it completed)", 0, RAIL_LABELS },
	{ "rails[].writes", "rdmactl_transfer_rail_operations_total", METRIC_COUNTER,
	  "RDMA WRITEs each rail completed", 0, RAIL_LABELS },
	{ "rails[].reads", "rdmactl_transfer_rail_operations_total", METRIC_COUNTER,
	  "RDMA READs each rail completed", 0, RAIL_LABELS },
	{ "rails[].chunks", "rdmactl_transfer_rail_chunks_total", METRIC_COUNTER,
	  "chunks each rail completed", 0, RAIL_LABELS },
	{ "rails[].errors", "rdmactl_transfer_rail_errors_total", METRIC_COUNTER,
	  "chunks that failed on each rail (then sent again on another)", 0, RAIL_LABELS },
	{ "rails[].busy_s", "rdmactl_transfer_rail_busy_seconds", METRIC_GAUGE,
	  "time each rail spent moving its chunks (its rate: bytes over this)", 0, RAIL_LABELS },
	{ "rails[].failed", "rdmactl_transfer_rail_failed", METRIC_GAUGE,
	  "1 for a rail that failed during the transfer (the others took its chunks)", 0,
	  RAIL_LABELS },
};

/* The transfer's values under the report's keys; NULL when out of memory. */
static json_t *transfer_doc(enum rc_op op, const struct rc_rails_result *res,
			    const char *const *devs)
{
	bool w = op == RC_OP_WRITE;
	json_t *doc = json_object(), *rails = json_array();

	json_object_set_new(doc, "operation", json_string(w ? "write" : "read"));
	json_object_set_new(doc, "bytes", json_integer((json_int_t)res->total.bytes));
	json_object_set_new(doc, "seconds", json_real(res->total.seconds));
	for (int i = 0; i < res->n; i++) {
		const struct rc_rail_result *rr = &res->rail[i];
		json_t *o = json_object();

		json_object_set_new(o, "rail", json_integer(i + 1));
		json_object_set_new(o, "device", json_string(devs[i]));
		json_object_set_new(o, "bytes", json_integer((json_int_t)rr->bytes));
		json_object_set_new(o, w ? "writes" : "reads", json_integer((json_int_t)rr->ops));
		json_object_set_new(o, "chunks", json_integer((json_int_t)rr->chunks));
		json_object_set_new(o, "errors", json_integer((json_int_t)rr->errors));
		json_object_set_new(o, "busy_s", json_real(rr->busy_s));
		json_object_set_new(o, "failed", json_boolean(rr->failed));
		json_array_append_new(rails, o);
	}
	json_object_set_new(doc, "rails", rails);
	return doc;
}

/* The file: the command's labels, the figures (none when nothing ran), the
 * outcome. */
static int commit(struct ctx *ctx, const char *path, enum rc_op op,
		  const struct rc_rails_result *res, const char *const *devs, int rc)
{
	json_t *doc = res->n ? transfer_doc(op, res, devs) : NULL;
	struct metrics m;

	metrics_init(&m);
	metrics_label(&m, "command", op == RC_OP_WRITE ? "write" : "read");
	metrics_labels_from(&m, doc, "operation");
	metrics_from_report(&m, doc, transfer_rows,
			    sizeof(transfer_rows) / sizeof(transfer_rows[0]));
	json_decref(doc);
	rc = metrics_commit(ctx, &m, path, rc);
	metrics_free(&m);
	return rc;
}

int rails_metrics_commit(struct ctx *ctx, const char *path, enum rc_op op, const struct rc_rails *r,
			 const struct rc_rails_result *res, int rc)
{
	const char *devs[RC_RAILS_MAX];
	struct rc_rails_result none = { .n = 0 }, one = { .n = 1, .failed_rail = -1 };

	if (!path)
		return rc;
	for (int i = 0; r && i < rc_rails_count(r); i++)
		devs[i] = rc_client_device(rc_rails_client(r, i));
	if (!r || rc_rails_count(r) > 1)
		return commit(ctx, path, op, r ? res : &none, devs, rc);
	/* One rail carried the whole as one chunk, and failed when the command did. */
	one.total = res->n ? res->total : (struct rc_stream_result){ 0 };
	one.rail[0] = (struct rc_rail_result){ .bytes = one.total.bytes,
					       .ops = one.total.ops,
					       .chunks = one.total.bytes ? 1 : 0,
					       .busy_s = one.total.seconds,
					       .failed = rc != 0 };
	return commit(ctx, path, op, &one, devs, rc);
}
