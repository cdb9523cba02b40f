// SPDX-License-Identifier: MIT
/*
 * rdmactl multicast: one root pushes a blob (model weights) to every other
 * rank of a group, flat, as a chain or as a tree of relays. The options are
 * read in multicast_args.c (multicast_parse); the group (rc_group_join) and
 * the multicast (libcore/mcast) do the work (run); the root prints one
 * report of every receiver (report).
 */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdmactl/mcast.h>
#include <rdmactl/parse.h>

#include "multicast.h"
#include "svg.h"

static const struct cmd_opt multicast_opts[] = { MULTICAST_OPTS(OPT_ENTRY) OPT_END };
OPTS_BOUND(multicast_opts, MC_NOPTS);

static int read_blob(void *arg, uint64_t off, void *buf, size_t len, struct rc_err *err)
{
	struct mc_cli *m = arg;

	if (m->pattern)
		return rc_pattern_fill(m->pattern, off, buf, len)
			       ? rc_err_set(err, EINVAL, "bad pattern")
			       : 0;
	for (size_t done = 0; done < len;) {
		ssize_t r = pread(m->fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return rc_err_set(err, r ? errno : EIO, "cannot read %s at %llu: %s",
					  m->file, (unsigned long long)(off + done),
					  r ? strerror(errno) : "the file shrank while it was sent");
		done += (size_t)r;
	}
	return 0;
}

/* The root reads each chunk as it sends it: its line counts what was read. */
static int read_sent(void *arg, uint64_t off, void *buf, size_t len, struct rc_err *err)
{
	struct mc_cli *m = arg;
	char d[32], t[32];
	int rc = read_blob(arg, off, buf, len, err);

	if (!rc && m->prog.on) {
		rc_format_size(off + len, d, sizeof(d));
		rc_format_size(m->run.size, t, sizeof(t));
		progress_say(&m->prog, false, "multicast: %s of %s sent", d, t);
	}
	return rc;
}

static int write_out(void *arg, uint64_t off, const void *buf, size_t len, struct rc_err *err)
{
	struct mc_cli *m = arg;
	char d[32];

	if (m->prog.on) {
		rc_format_size(off + len, d, sizeof(d));
		progress_say(&m->prog, false, "multicast: rank %d: %s received", m->grp.who.rank, d);
	}
	if (m->fd < 0)
		return 0;
	for (size_t done = 0; done < len;) {
		ssize_t w = pwrite(m->fd, (const char *)buf + done, len - done, (off_t)(off + done));

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return rc_err_set(err, errno, "cannot write %s: %s", m->out_path,
					  strerror(errno));
		done += (size_t)w;
	}
	return 0;
}

/* The root's blob, or a receiver's --out: opened before the group forms, so
 * a bad path fails this rank alone and at once. */
static int open_files(struct ctx *ctx, struct mc_cli *m)
{
	struct stat st;

	m->fd = -1;
	if (m->grp.who.rank == m->run.shape.root && m->file) {
		m->fd = open(m->file, O_RDONLY | O_CLOEXEC);
		if (m->fd < 0 || fstat(m->fd, &st) < 0)
			return fail(ctx, -errno, "cannot read %s: %s", m->file, strerror(errno));
		if (!S_ISREG(st.st_mode))
			return fail(ctx, -EINVAL, "%s is not a regular file", m->file);
		m->run.size = (uint64_t)st.st_size;
	} else if (m->grp.who.rank != m->run.shape.root && m->out_path[0]) {
		m->fd = open(m->out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (m->fd < 0)
			return fail(ctx, -errno, "cannot write %s: %s", m->out_path,
				    strerror(errno));
	}
	/* Every receiver consumes: the progress line, and --out when given. */
	m->run.consume = write_out;
	m->run.read = read_sent;
	m->run.arg = m;
	return 0;
}

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

static void report(struct ctx *ctx, const struct mc_cli *m, const struct rc_mcast_result *r,
		   const struct rc_group *g)
{
	const char *dev = rc_group_dev(g), *rdv_kind = rc_group_rdv_kind(g);
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
	out_str(o, "device", ", device %s\n", dev);
	out_u64(o, "size_bytes", "# %llu bytes", r->size);
	out_u64(o, "chunk_bytes", " in chunks of %llu", (uint64_t)m->run.chunk);
	out_u64(o, "chunks", " (%llu)", (uint64_t)r->chunks);
	out_u64(o, "ring_chunks", ", rings of %llu chunks", (uint64_t)m->run.ring);
	out_str(o, "mem", ", %s memory", rc_mem_kind_name(m->run.mem.kind));
	out_u64(o, "depth", ", depth %llu", (uint64_t)r->depth);
	out_u64(o, "width", ", width %llu\n", (uint64_t)r->width);
	out_str(o, "digest", "# root %s", dname);
	put_digest(o, m->run.digest, r->digest, " %s\n");
	out_text(o, "# %5s %12s %12s %14s %3s  %s\n", "rank", "first(ms)", "last(ms)", "bytes",
		 "ok", dname);
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
			put_digest(o, m->run.digest, x->digest, "  %s");
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
	out_u64(o, "ok_count", "# %llu", (uint64_t)r->ok_count);
	out_u64(o, "receivers_count", " of %llu receivers got the whole blob\n", (uint64_t)(W - 1));
	out_f64(o, "seconds", "# total %.4f s", r->seconds);
	out_f64(o, "link_gbyte_per_s", ", link %.3f GB/s", r->link_bw / 1e9);
	out_f64(o, "link_gbit_per_s", " (%.3f Gb/s)", r->link_bw * 8 / 1e9);
	out_f64(o, "ideal_seconds", ", ideal %.4f s", r->ideal_s);
	out_f64(o, "ratio", ", ratio %.2f\n", ratio);
	group_report(o, g);
}

/* Each receiver's first and last chunk on one timeline (its own clock,
 * from the start barrier), a receiver without the whole blob in red, the
 * blocks usable as ticks. */
static int draw(const struct mc_cli *m, const struct rc_mcast_result *r)
{
	int W = m->grp.who.world, root = m->run.shape.root, n = 0, rc = -ENOMEM;
	size_t N = (size_t)W;
	double *start = calloc(N, sizeof(double)), *end = calloc(N, sizeof(double));
	const double **marks = calloc(N, sizeof(double *));
	int *nmarks = calloc(N, sizeof(int));
	bool *bad = calloc(N, sizeof(bool));
	char **labels = calloc(N, sizeof(char *)), title[160];

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
	snprintf(title, sizeof(title), "rdmactl multicast: %s, %llu bytes to %d receivers",
		 rc_mcast_algo_name(m->run.shape.algo), (unsigned long long)r->size, W - 1);
	struct svg_timeline t = { .n = n,
				  .title = title,
				  .unit = "ms",
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

/* --metrics: the root's figures of every receiver; a receiver's of its own. */
static void mc_metrics(struct metrics *m, const struct mc_cli *mc, const struct rc_mcast_result *r,
		       const struct rc_group *g)
{
	int W = mc->grp.who.world, root = mc->run.shape.root;
	char who[16];

	metrics_label(m, "algo", rc_mcast_algo_name(mc->run.shape.algo));
	metrics_label(m, "device", rc_group_dev(g));
	metrics_label_u64(m, "root", (uint64_t)root);
	metrics_gauge(m, "rdmactl_multicast_ranks", "ranks in the group", W);
	if (mc->grp.who.rank != root) {
		metrics_counter(m, "rdmactl_multicast_received_bytes_total",
				"bytes this rank received", (double)r->self.bytes);
		metrics_gauge(m, "rdmactl_multicast_ok",
			      "1 when this rank holds the whole blob, checked", r->self.ok);
		group_metrics(m, g);
		return;
	}
	metrics_gauge(m, "rdmactl_multicast_size_bytes", "bytes of the blob", (double)r->size);
	metrics_gauge(m, "rdmactl_multicast_chunk_bytes", "bytes per write", (double)mc->run.chunk);
	metrics_gauge(m, "rdmactl_multicast_duration_seconds",
		      "until the last receiver's last chunk", r->seconds);
	metrics_gauge(m, "rdmactl_multicast_ideal_seconds", "the ideal time at the link's rate",
		      r->ideal_s);
	metrics_gauge(m, "rdmactl_multicast_link_bytes_per_second",
		      "the link rate, given or measured", r->link_bw);
	metrics_gauge(m, "rdmactl_multicast_receivers", "ranks that receive", W - 1);
	metrics_gauge(m, "rdmactl_multicast_receivers_ok", "receivers that got the whole blob",
		      r->ok_count);
	metrics_family(m, "rdmactl_multicast_received_bytes_total", METRIC_COUNTER,
		       "bytes each receiver says it received");
	for (int j = 0; j < W; j++) {
		if (j == root || !r->recv[j].reported)
			continue;
		snprintf(who, sizeof(who), "%d", j);
		metrics_sample(m, "", "receiver", who, (double)r->recv[j].bytes);
	}
	group_metrics(m, g);
}

/* The tree's edges, and the root to everyone. */
static int plan(void *arg, const struct rc_endpoint *all, int W, uint8_t *need, struct rc_err *err)
{
	(void)all, (void)W, (void)err;
	rc_mcast_need(arg, need);
	return 0;
}

static int run(struct ctx *ctx, struct mc_cli *m)
{
	int W = m->grp.who.world, root = m->run.shape.root, rc;
	struct rc_group_join join = { .rank = m->grp.who.rank,
				      .world = W,
				      .rendezvous = m->grp.rendezvous,
				      .listen = group_listen(&m->grp, 0),
				      .token = m->grp.token,
				      .dev_name = group_dev(ctx, &m->grp, 0),
				      .timeout_ms = ctx->timeout_ms,
				      .busy_poll = m->busy_poll,
				      .keep_going = true,
				      .recv_depth = rc_mcast_recv_depth(m->run.ring),
				      .plan = plan,
				      .plan_arg = &m->run.shape };
	struct rc_mcast_result res = { 0 };
	struct rc_group_join_out how;
	bool metrics = group_metrics_on(&m->grp, root);
	struct metrics mx;
	struct rc_group *g = NULL;
	struct rc_err e;

	res.recv = calloc((size_t)W, sizeof(*res.recv));
	metrics_init(&mx);
	metrics_label(&mx, "command", "multicast");
	metrics_label_u64(&mx, "rank", (uint64_t)m->grp.who.rank);
	if (!res.recv)
		return fail(ctx, -ENOMEM, "out of memory");
	if ((rc = open_files(ctx, m)))
		goto out;
	if ((rc = rc_group_join(&join, &g, &how, &e))) {
		rc = how.usage ? usage_err(ctx, "%s", e.msg) : fail(ctx, rc, "%s", e.msg);
		goto out;
	}
	progress_init(&m->prog, ctx);
	rc = rc_mcast_run(g, &m->run, &res, &e);
	progress_end(&m->prog);
	if (rc) {
		rc = fail(ctx, rc, "rank %d: %s", m->grp.who.rank, e.msg);
		goto out;
	}
	if (metrics)
		mc_metrics(&mx, m, &res, g);
	if (m->grp.who.rank != root) {
		/* only the root prints the document; a receiver that failed prints
		 * its error (with -j, an error document) */
		if (!res.self.complete)
			rc = fail(ctx, -EIO, "rank %d: %s", m->grp.who.rank, res.self.why);
		else if (!res.self.ok)
			rc = fail(ctx, -EIO, "rank %d: the blob is wrong: %s", m->grp.who.rank,
				  res.self.why);
		else
			ctx->out.printed = true;
		goto out;
	}
	report(ctx, m, &res, g);
	if (m->svg && (rc = draw(m, &res)))
		rc = fail(ctx, rc, "--svg %s: %s", m->svg, strerror(-rc));
	else if (m->svg)
		out_str(&ctx->out, "svg", "# timeline: %s\n", m->svg);
	if (res.ok_count < W - 1) {
		char who[512] = "";
		size_t o = 0;

		for (int j = 0; j < W && o < sizeof(who) - 8; j++)
			if (j != root && !res.recv[j].ok)
				o += (size_t)snprintf(who + o, sizeof(who) - o, "%s%d",
						      o ? ", " : "", j);
		rc = fail(ctx, -EIO, "rank %s did not get the whole blob", who);
	}
out:
	rc_group_close(g);
	if (metrics)
		rc = metrics_commit(ctx, &mx, m->grp.metrics, rc);
	metrics_free(&mx);
	if (m->fd >= 0)
		close(m->fd);
	free(res.recv);
	return rc;
}

/* --plan: the job's figures from the connection plan rc_mcast_need gives,
 * the receives the group keeps per connection and the ring every rank
 * registers, as run would set them. */
static int plan_print(struct ctx *ctx, struct mc_cli *m)
{
	const struct rc_mcast_shape *s = &m->run.shape;
	int W = s->world, rc;
	uint8_t *need = malloc((size_t)W * (size_t)W);
	uint64_t *bytes = calloc((size_t)W, sizeof(uint64_t));
	struct out *o = &ctx->out;
	struct group_plan_in in = { .need = need,
				    .world = W,
				    .recv_depth = rc_mcast_recv_depth(m->run.ring),
				    .buf_bytes = bytes,
				    .buf_what = "receive ring",
				    .ranks_per_node = m->ranks_per_node,
				    .rank = m->grp.who.rank };

	if (!need || !bytes) {
		rc = fail(ctx, -ENOMEM, "out of memory");
		goto out;
	}
	rc_mcast_need(s, need);
	for (int r = 0; r < W; r++)
		bytes[r] = rc_mcast_ring_bytes(m->run.ring, m->run.chunk);
	out_bool(o, "plan", NULL, true);
	out_str(o, "algo", "# multicast plan: algo %s", rc_mcast_algo_name(s->algo));
	if (s->algo == RC_MCAST_TREE)
		out_u64(o, "fanout", ", fanout %llu", (uint64_t)s->fanout);
	out_u64(o, "root", ", root %llu", (uint64_t)s->root);
	out_u64(o, "ranks", ", %llu ranks", (uint64_t)W);
	if (m->ranks_per_node)
		out_u64(o, "ranks_per_node", ", %llu per node", (uint64_t)m->ranks_per_node);
	else
		out_null(o, "ranks_per_node");
	out_u64(o, "ring_chunks", "; rings of %llu chunks", (uint64_t)m->run.ring);
	out_u64(o, "chunk_bytes", " of %llu bytes", (uint64_t)m->run.chunk);
	out_u64(o, "depth", ", depth %llu", (uint64_t)rc_mcast_depth(s));
	out_u64(o, "width", ", width %llu\n", (uint64_t)rc_mcast_width(s));
	rc = group_plan_print(ctx, &in);
out:
	free(need);
	free(bytes);
	return rc;
}

static int do_multicast(struct ctx *ctx, int argc, char **argv)
{
	struct mc_cli m = { .fd = -1 };
	struct opt_vals v;
	int rc = opts_parse(ctx, &cmd_multicast, argc, argv, &v);

	if (rc)
		return rc < 0 ? rc : 0;
	rc = multicast_parse(ctx, &v, &m);
	if (!rc)
		rc = m.plan ? plan_print(ctx, &m) : run(ctx, &m);
	return rc;
}

const struct cmd cmd_multicast = {
	.name = "multicast",
	.run = do_multicast,
	.opts = multicast_opts,
	.summary = "push a blob (model weights) from one rank to all others: flat, chain or tree",
};
