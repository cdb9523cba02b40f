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

#include "cmds.h"
#include "multicast.h"

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

/* The tree's edges, and the root to everyone. */
static int plan(void *arg, const struct rc_endpoint *all, int W, uint8_t *need, struct rc_err *err)
{
	(void)all, (void)W, (void)err;
	rc_mcast_need(arg, need);
	return 0;
}

/* This rank's part on its rails: rc_mcast_run_rails runs one rail, or a
 * slice on each of several, whose results are then merged into res (one
 * rail's result is res itself). */
static int run_part(struct mc_cli *m, struct rc_group *const *g, struct rc_mcast_result *res,
		    struct rc_err *e)
{
	int W = m->grp.who.world, n = m->nrails, rc;
	struct rc_mcast_result *per = n > 1 ? m->rail : res;

	for (int i = 0; i < n && n > 1; i++)
		if (!(m->rail[i].recv = calloc((size_t)W, sizeof(*m->rail[i].recv))))
			return rc_err_set(e, ENOMEM, "out of memory");
	if (!(rc = rc_mcast_run_rails(g, n, &m->run, per, e)) && n > 1)
		mc_rails_merge(m, res, g);
	return rc;
}

/* What every rank must be given alike: the shape, the rings, the digest
 * and the blocks whose times the receivers tell (a rank given no --chunk
 * takes the root's, which the root's hello checks). */
static void settings(const struct mc_cli *m, struct group_settings *gs)
{
	const struct rc_mcast_opts *o = &m->run;
	struct rc_group_setting *s;

	group_setting(gs, "--root", "%d", o->shape.root);
	group_setting(gs, "--algo", "%s", rc_mcast_algo_name(o->shape.algo));
	if (o->shape.algo == RC_MCAST_TREE)
		group_setting(gs, "--fanout", "%d", o->shape.fanout);
	s = group_setting(gs, "--chunk", "%s", o->chunk ? m->chunk : "");
	s->data = o->chunk ? &o->chunk : NULL; /* 128K and 131072 agree */
	s->len = o->chunk ? sizeof(o->chunk) : 0;
	s->any_if_empty = true;
	group_setting(gs, "--ring", "%d", o->ring);
	group_setting(gs, "--digest", "%s", m->num.digest ? "sha256" : "xxh64");
	s = group_setting(gs, "--block-sizes", "%s", m->blocks ? m->blocks : "");
	s->data = m->blocks ? o->block_ends : NULL;
	s->len = m->blocks ? (size_t)o->nblocks * sizeof(*o->block_ends) : 0;
}

/* --metrics: the command's labels; the report built in text mode too. */
static void metrics_start(struct ctx *ctx, struct metrics *mx, bool on, int rank)
{
	metrics_init(mx);
	metrics_label(mx, "command", "multicast");
	metrics_label_u64(mx, "rank", (uint64_t)rank);
	if (on)
		out_keep_tree(&ctx->out);
}

/* --metrics: the report's figures (the root's, or a receiver's own) and the
 * group's, then the outcome. */
static int metrics_end(struct ctx *ctx, struct metrics *mx, const char *path, bool root, int rc)
{
	json_t *doc = out_tree(&ctx->out);

	metrics_labels_from(mx, doc, "algo,device,root");
	if (root)
		metrics_render(mx, doc, &mc_metric_table);
	else
		metrics_render(mx, doc, &mc_self_metric_table);
	metrics_render(mx, doc, &group_metric_table);
	return metrics_commit(ctx, mx, path, rc);
}

static int run(struct ctx *ctx, struct mc_cli *m)
{
	int W = m->grp.who.world, root = m->run.shape.root, rc;
	struct rc_group_join join = { .rank = m->grp.who.rank,
				      .world = W,
				      .token = m->grp.token,
				      .timeout_ms = ctx->timeout_ms,
				      .busy_poll = m->busy_poll,
				      .keep_going = true,
				      .recv_depth = rc_mcast_recv_depth(m->run.ring),
				      .plan = plan,
				      .plan_arg = &m->run.shape };
	struct rc_mcast_result res = { 0 };
	bool metrics = group_metrics_on(&m->grp, root);
	struct metrics mx;
	struct rc_group *g[RC_RAILS_MAX] = { 0 };
	struct group_settings gs = { .n = 0 };
	struct rc_err e;

	m->nrails = m->grp.nrails > 1 ? m->grp.nrails : 1;
	res.recv = calloc((size_t)W, sizeof(*res.recv));
	metrics_start(ctx, &mx, metrics, m->grp.who.rank);
	if (!res.recv)
		return fail(ctx, -ENOMEM, "out of memory");
	if ((rc = open_files(ctx, m)))
		goto out;
	settings(m, &gs);
	if ((rc = group_join_rails(ctx, &m->grp, &join, &gs, g)))
		goto out;
	progress_init(&m->prog, ctx);
	/* the rails' threads would share the line: none on several */
	m->prog.on = m->prog.on && m->nrails == 1;
	rc = run_part(m, g, &res, &e);
	progress_end(&m->prog);
	if (rc) {
		rc = fail(ctx, rc, "rank %d: %s", m->grp.who.rank, ERR_TEXT(e));
		goto out;
	}
	if (m->grp.who.rank != root) {
		if (metrics)
			mc_self_report(&ctx->out, m, &res, g);
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
	mc_report(ctx, m, &res, g);
	if (m->svg && (rc = mc_draw(m, &res)))
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
	for (int i = RC_RAILS_MAX - 1; i >= 0; i--)
		rc_group_close(g[i]);
	if (metrics)
		rc = metrics_end(ctx, &mx, m->grp.metrics, m->grp.who.rank == root, rc);
	metrics_free(&mx);
	if (m->fd >= 0)
		close(m->fd);
	for (int i = 0; i < RC_RAILS_MAX; i++)
		free(m->rail[i].recv);
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
	uint32_t chunk;
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
	/* --chunk auto: the root's pick for --size, else the largest it picks */
	chunk = m->run.chunk  ? m->run.chunk
		: m->num.size ? rc_mcast_auto_chunk(s, m->num.size)
			      : RC_MCAST_CHUNK_MAX;
	for (int r = 0; r < W; r++)
		bytes[r] = rc_mcast_ring_bytes(m->run.ring, chunk);
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
	out_u64(o, "chunk_bytes", " of %llu bytes", (uint64_t)chunk);
	if (!m->run.chunk)
		out_text(o, m->num.size ? " (--chunk auto)" : " (--chunk auto: at most)");
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
	.summary = "push a blob (model weights) from one rank to all others",
};
