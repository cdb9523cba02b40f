// SPDX-License-Identifier: MIT
/* rdmactl multicast's figures: the root's report of every receiver, the
 * rails' on several rails a rank (their results merged), the --svg
 * timeline and --metrics. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/mcast.h>

#include "multicast.h"
#include "svg.h"

/* The multicast report's schema_version: 3 since --digest, whose default
 * (xxh64) leaves the sha256 keys null. */
#define MC_SCHEMA_VERSION 3

/* A digest: digest_value, and sha256 the same (null unless --digest sha256);
 * the text with fmt. */
static void put_digest(struct out *o, enum rc_mcast_digest d, const uint8_t *dg, const char *fmt)
{
	char hex[2 * RC_MCAST_DIGEST_MAX + 1];

	rc_mcast_digest_hex(d, dg, hex);
	out_str(o, "digest_value", fmt, hex);
	if (d == RC_MCAST_DIGEST_SHA256)
		out_str(o, "sha256", NULL, hex);
	else
		out_null(o, "sha256");
}

/* The root's line and object of every receiver (on several rails, no
 * digest of the whole). */
static void put_receivers(struct out *o, const struct mc_cli *m, const struct rc_mcast_result *r,
			  bool rails)
{
	int W = m->grp.who.world, root = m->run.shape.root;

	out_arr_begin(o, "receivers");
	for (int j = 0; j < W; j++) {
		const struct rc_mcast_recv *x = &r->recv[j];

		if (j == root)
			continue;
		out_obj_begin(o, NULL);
		out_u64(o, "rank", "  %5llu", (uint64_t)j);
		if (x->reported) {
			out_f64(o, "first_chunk_ms", " %12.2f", x->first_ms);
			out_f64(o, "last_chunk_ms", " %12.2f", x->last_ms);
			out_u64(o, "bytes", " %14llu", x->bytes);
			out_bool(o, "ok", " %3s", x->ok);
			if (rails) {
				out_null(o, "digest_value");
				out_null(o, "sha256");
				out_text(o, "  (a rail's slice each)");
			} else {
				put_digest(o, m->run.digest, x->digest, "  %s");
			}
		} else {
			out_null(o, "first_chunk_ms");
			out_null(o, "last_chunk_ms");
			out_null(o, "bytes");
			out_text(o, " %12s %12s %14s", "-", "-", "-");
			out_bool(o, "ok", " %3s", false);
			out_null(o, "digest_value");
			out_null(o, "sha256");
			out_text(o, "  -");
		}
		out_u64(o, "children_lost", NULL, (uint64_t)x->children_lost);
		if (x->reported)
			out_str(o, "device", "  %s", x->device);
		else
			out_null(o, "device");
		if (x->why[0])
			out_str(o, "error", "\n         %s", x->why);
		else
			out_null(o, "error");
		if (x->reported && x->nblocks) {
			out_text(o, "\n         blocks usable at (ms):");
			out_arr_begin(o, "blocks_usable_ms");
			for (int b = 0; b < x->nblocks; b++)
				out_f64(o, NULL, " %.2f", x->block_ms[b]);
			out_arr_end(o);
		}
		out_text(o, "\n");
		out_obj_end(o);
	}
	out_arr_end(o);
}

void mc_report(struct ctx *ctx, const struct mc_cli *m, const struct rc_mcast_result *r,
	       struct rc_group *const *gs)
{
	const struct rc_group *g = gs[0];
	const char *rdv_kind = rc_group_rdv_kind(g);
	char dev[RC_RAILS_MAX * 65];
	bool rails = m->nrails > 1;
	const char *dname = rc_mcast_digest_name(m->run.digest);
	struct out *o = &ctx->out;
	int W = m->grp.who.world, root = m->run.shape.root;
	double ratio = r->ideal_s > 0 ? r->seconds / r->ideal_s : 0;

	out_schema_version(o, MC_SCHEMA_VERSION);
	out_text(o, "# multicast: algo %s", rc_mcast_algo_name(m->run.shape.algo));
	out_str(o, "algo", NULL, rc_mcast_algo_name(m->run.shape.algo));
	if (m->run.shape.algo == RC_MCAST_TREE)
		out_u64(o, "fanout", ", fanout %llu", (uint64_t)m->run.shape.fanout);
	out_u64(o, "root", ", root %llu", (uint64_t)root);
	out_u64(o, "ranks", ", %llu ranks", (uint64_t)W);
	out_str(o, "rank_source", " (%s)", m->grp.who.source);
	out_str(o, "rendezvous", ", rendezvous %s", rdv_kind);
	group_rail_devs(gs, m->nrails, dev, sizeof(dev));
	out_str(o, "device", ", device %s\n", dev);
	out_u64(o, "size_bytes", "# %llu bytes", r->size);
	out_u64(o, "chunk_bytes", " in chunks of %llu", (uint64_t)r->chunk);
	out_u64(o, "chunks", " (%llu)", (uint64_t)r->chunks);
	out_u64(o, "ring_chunks", ", rings of %llu chunks", (uint64_t)m->run.ring);
	out_str(o, "mem", ", %s memory", rc_mem_kind_name(m->run.mem.kind));
	out_u64(o, "depth", ", depth %llu", (uint64_t)r->depth);
	out_u64(o, "width", ", width %llu\n", (uint64_t)r->width);
	out_str(o, "digest", "# root %s", dname);
	if (rails) { /* a digest a rail, of its slice: in rails */
		out_null(o, "digest_value");
		out_null(o, "sha256");
		out_text(o, " of each rail's slice (below)\n");
	} else {
		put_digest(o, m->run.digest, r->digest, " %s\n");
	}
	out_text(o, "# %5s %12s %12s %14s %3s  %s\n", "rank", "first(ms)", "last(ms)", "bytes",
		 "ok", dname);
	put_receivers(o, m, r, rails);
	out_u64(o, "ok_count", "# %llu", (uint64_t)r->ok_count);
	out_u64(o, "receivers_count", " of %llu receivers got the whole blob\n", (uint64_t)(W - 1));
	out_f64(o, "seconds", "# total %.4f s", r->seconds);
	out_f64(o, "link_gbyte_per_s", ", link %.3f GB/s", r->link_bw / 1e9);
	out_f64(o, "link_gbit_per_s", " (%.3f Gb/s)", r->link_bw * 8 / 1e9);
	out_f64(o, "ideal_seconds", ", ideal %.4f s", r->ideal_s);
	out_f64(o, "ratio", ", ratio %.2f\n", ratio);
	out_i64(o, "rail_count", NULL, m->nrails);
	if (rails)
		mc_rails_report(o, m, gs);
	group_report(o, g);
}

/* Each receiver's first and last chunk on one timeline (its own clock,
 * from the start barrier), a receiver without the whole blob in red, the
 * blocks usable as ticks. */
int mc_draw(const struct mc_cli *m, const struct rc_mcast_result *r)
{
	int W = m->grp.who.world, root = m->run.shape.root, n = 0, rc = -ENOMEM;
	size_t N = (size_t)W;
	double *start = calloc(N, sizeof(double)), *end = calloc(N, sizeof(double));
	const double **marks = calloc(N, sizeof(double *));
	int *nmarks = calloc(N, sizeof(int));
	bool *bad = calloc(N, sizeof(bool));
	char **labels = calloc(N, sizeof(char *)), title[160], size[32];

	if (!start || !end || !marks || !nmarks || !bad || !labels)
		goto out;
	for (int j = 0; j < W; j++) {
		const struct rc_mcast_recv *x = &r->recv[j];

		if (j == root)
			continue;
		if (!(labels[n] = malloc(64)))
			goto out;
		snprintf(labels[n], 64, "rank %d%s%.31s", j, x->reported ? " " : "",
			 x->reported ? x->device : "");
		start[n] = x->reported ? x->first_ms : NAN;
		end[n] = x->reported ? x->last_ms : NAN;
		bad[n] = !x->ok;
		marks[n] = x->block_ms;
		nmarks[n] = x->reported ? x->nblocks : 0;
		n++;
	}
	svg_bytes(size, sizeof(size), r->size);
	snprintf(title, sizeof(title), "rdmactl multicast: %s, %s to %d receivers",
		 rc_mcast_algo_name(m->run.shape.algo), size, W - 1);
	struct svg_timeline t = { .n = n,
				  .title = title,
				  .labels = (const char *const *)labels,
				  .start = start,
				  .end = end,
				  .bad = bad,
				  .marks = marks,
				  .nmarks = nmarks };

	rc = svg_timeline_write(m->svg, &t);
out:
	for (int j = 0; labels && j < W; j++)
		free(labels[j]);
	free(labels);
	free(start);
	free(end);
	free(marks);
	free(nmarks);
	free(bad);
	return rc;
}

/* --metrics: the root's report of every receiver. */
static const struct metric_row mc_metric_rows[] = {
	{ "ranks", "rdmactl_multicast_ranks", METRIC_GAUGE, "ranks in the group" },
	{ "size_bytes", "rdmactl_multicast_size_bytes", METRIC_GAUGE, "bytes of the blob" },
	{ "chunk_bytes", "rdmactl_multicast_chunk_bytes", METRIC_GAUGE, "bytes per write" },
	{ "seconds", "rdmactl_multicast_duration_seconds", METRIC_GAUGE,
	  "until the last receiver's last chunk" },
	{ "ideal_seconds", "rdmactl_multicast_ideal_seconds", METRIC_GAUGE,
	  "the ideal time at the link's rate" },
	{ "link_gbyte_per_s", "rdmactl_multicast_link_bytes_per_second", METRIC_GAUGE,
	  "the link rate, given or measured", 1e9 },
	{ "receivers_count", "rdmactl_multicast_receivers", METRIC_GAUGE, "ranks that receive" },
	{ "ok_count", "rdmactl_multicast_receivers_ok", METRIC_GAUGE,
	  "receivers that got the whole blob" },
	{ "receivers[].bytes", "rdmactl_multicast_received_bytes_total", METRIC_COUNTER,
	  "bytes each receiver says it received", 0, "receiver={rank}" },
	{ "rail_count", "rdmactl_multicast_rails", METRIC_GAUGE, "rails each rank runs on" },
	{ "rails[].bytes", "rdmactl_multicast_rail_bytes", METRIC_GAUGE,
	  "bytes of the blob's slice the rail carried", 0, "rail={rail},device={device}" },
	{ "rails[].seconds", "rdmactl_multicast_rail_seconds", METRIC_GAUGE,
	  "until the rail's last receiver's last chunk", 0, "rail={rail},device={device}" },
};
const struct metric_table mc_metric_table = METRIC_TABLE(mc_metric_rows);

/* --metrics: a receiver's figures of its own. */
static const struct metric_row mc_self_metric_rows[] = {
	{ "ranks", "rdmactl_multicast_ranks", METRIC_GAUGE, "ranks in the group" },
	{ "self.bytes", "rdmactl_multicast_received_bytes_total", METRIC_COUNTER,
	  "bytes this rank received" },
	{ "self.ok", "rdmactl_multicast_ok", METRIC_GAUGE,
	  "1 when this rank holds the whole blob, checked" },
};
const struct metric_table mc_self_metric_table = METRIC_TABLE(mc_self_metric_rows);

/* A receiver's own figures, in the document only (only the root prints
 * one): what its --metrics renders. */
void mc_self_report(struct out *o, const struct mc_cli *m, const struct rc_mcast_result *r,
		    struct rc_group *const *gs)
{
	char dev[RC_RAILS_MAX * 65];

	group_rail_devs(gs, m->nrails, dev, sizeof(dev));
	out_str(o, "algo", NULL, rc_mcast_algo_name(m->run.shape.algo));
	out_str(o, "device", NULL, dev);
	out_u64(o, "root", NULL, (uint64_t)m->run.shape.root);
	out_u64(o, "ranks", NULL, (uint64_t)m->grp.who.world);
	out_obj_begin(o, "self");
	out_u64(o, "bytes", NULL, r->self.bytes);
	out_bool(o, "ok", NULL, r->self.ok);
	out_obj_end(o);
	group_report_data(o, gs[0]);
}

/* One receiver's reports of every rail (x[i]: rail i's) into one. */
static void merge_recv(struct rc_mcast_recv *to, const struct rc_mcast_recv *const *x, int n)
{
	size_t dl = 0;

	*to = *x[0];
	to->reported = to->ok = to->complete = true;
	to->bytes = 0;
	to->nblocks = 0;
	to->device[0] = to->why[0] = '\0';
	memset(to->digest, 0, sizeof(to->digest));
	for (int i = 0; i < n; i++) {
		to->reported &= x[i]->reported;
		to->ok &= x[i]->ok;
		to->complete &= x[i]->complete;
		to->bytes += x[i]->bytes;
		to->first_ms = fmin(to->first_ms, x[i]->first_ms);
		to->last_ms = fmax(to->last_ms, x[i]->last_ms);
		if (x[i]->children_lost > to->children_lost)
			to->children_lost = x[i]->children_lost;
		if (dl < sizeof(to->device))
			dl += (size_t)snprintf(to->device + dl, sizeof(to->device) - dl, "%s%s",
					       i ? "," : "", x[i]->device);
		if (!to->why[0] && x[i]->why[0])
			snprintf(to->why, sizeof(to->why), "rail %d: %.420s", i + 1, x[i]->why);
	}
}

void mc_rails_merge(struct mc_cli *m, struct rc_mcast_result *res, struct rc_group *const *g)
{
	int n = m->nrails, W = m->grp.who.world, root = m->run.shape.root;
	const struct rc_mcast_recv *x[RC_RAILS_MAX];
	struct rc_mcast_recv *recv = res->recv;

	(void)g;
	*res = m->rail[0];
	res->recv = recv;
	res->size = res->chunks = 0;
	res->link_bw = res->ideal_s = res->seconds = 0;
	res->ok_count = 0;
	memset(res->digest, 0, sizeof(res->digest));
	for (int i = 0; i < n; i++) {
		const struct rc_mcast_result *r = &m->rail[i];

		res->size += r->size;
		res->chunks += r->chunks;
		res->chunk = r->chunk > res->chunk ? r->chunk : res->chunk;
		res->link_bw += r->link_bw; /* the rails side by side */
		res->ideal_s = fmax(res->ideal_s, r->ideal_s);
		res->seconds = fmax(res->seconds, r->seconds);
		x[i] = &r->self;
	}
	merge_recv(&res->self, x, n);
	if (m->grp.who.rank != root)
		return;
	for (int j = 0; j < W; j++) {
		for (int i = 0; i < n; i++)
			x[i] = &m->rail[i].recv[j];
		merge_recv(&res->recv[j], x, n);
		res->recv[j].rank = j;
		res->ok_count += j != root && res->recv[j].ok;
	}
}

void mc_rails_report(struct out *o, const struct mc_cli *m, struct rc_group *const *g)
{
	struct group_rail_fig f[RC_RAILS_MAX];

	for (int i = 0; i < m->nrails; i++)
		f[i] = (struct group_rail_fig){ .bytes = m->rail[i].size,
						.seconds = m->rail[i].seconds };
	out_arr_begin(o, "rails");
	for (int i = 0; i < m->nrails; i++) {
		group_rail_begin(o, g, f, m->nrails, i);
		out_u64(o, "ok_count", ", %llu receivers ok", (uint64_t)m->rail[i].ok_count);
		out_str(o, "digest", ", %s", rc_mcast_digest_name(m->run.digest));
		put_digest(o, m->run.digest, m->rail[i].digest, " %s");
		group_rail_end(o, g, f, m->nrails, i);
	}
	out_arr_end(o);
}
