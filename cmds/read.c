// SPDX-License-Identifier: MIT
/* rdmactl read: one-sided RDMA READ from a served region. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cmds.h"
#include "client_cmds.h"
#include "rails_cmds.h"

#define READ_OPTS(X) \
	X(RD_SIZE, "size", 'S', "SIZE", "bytes (default: to the region's end)", \
	  OPT_SIZE(struct read_args, size, NULL), OPT_GIVEN(struct read_args, size_given)) \
	X(RD_OUT, "out", 'O', "FILE", "write the bytes to FILE (default: stdout)", COMP_FILE, \
	  OPT_STR(struct read_args, out_path, NULL)) \
	X(RD_STRIPE, "stripe", 0, "SIZE", "with several rails: a rail's chunk", \
	  OPT_SIZE(struct read_args, stripe, "1M"), OPT_GIVEN(struct read_args, stripe_given)) \
	X(RD_RAILS, "rails", 0, "PLAN", "rail plan's rails: auto, gpu:N or numa:N", COMP_WORDS, \
	  "auto|gpu:0|numa:0", OPT_STR(struct read_args, rails_plan, NULL)) \
	CLIENT_OPTS(X, RD) \
	BENCH_OPTS(X, RD)

/* What `read` was asked, parsed and checked. */
struct read_args {
	struct client_args cl;
	struct bench_args bench;
	uint64_t size;
	const char *size_given; /* --size as given, or NULL */
	bool have_size;
	const char *out_path; /* NULL: stdout */
	bool rails;           /* several rails (rails_asked) */
	uint64_t stripe;
	const char *stripe_given; /* --stripe as given, or NULL */
	const char *rails_plan;   /* --rails PLAN, or NULL */
	struct rails_auto ra;     /* its rails */
};

enum { READ_OPTS(OPT_INDEX) READ_NOPTS };
static const struct cmd_opt read_opts[] = { READ_OPTS(OPT_ENTRY) OPT_END };
OPTS_BOUND(read_opts, READ_NOPTS);

/* len bytes of buf to fd, at off (pwrite) when at, else where it stands. */
static int write_full(int fd, const void *buf, size_t len, uint64_t off, bool at)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n =
			at ? pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done))
			   : write(fd, (const char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

/* Where the bytes land: at their offset (pwrite) on several rails, which
 * land chunks in any order, else in order where fd stands. */
struct sink {
	int fd;
	bool at;
};

static int drain(void *arg, uint64_t off, const void *buf, size_t len)
{
	const struct sink *s = arg;

	return write_full(s->fd, buf, len, off, s->at);
}

static ssize_t drain_ofi(void *arg, uint64_t off, void *buf, size_t len)
{
	int rc = drain(arg, off, buf, len);

	return rc ? rc : (ssize_t)len;
}

/* Over libfabric: the bytes into --out (created here) or stdout. */
static int read_ofi(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		    const struct read_args *a)
{
	struct sink sk = { .fd = STDOUT_FILENO };
	int rc;

	if (a->out_path &&
	    (sk.fd = open(a->out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		return fail(ctx, -errno, "cannot create '%s': %s", a->out_path, strerror(errno));
	rc = fabric_transfer(ctx, c, v, &a->cl, false, a->size, a->have_size, drain_ofi, &sk,
			     a->out_path, NULL);
	if (sk.fd != STDOUT_FILENO && close(sk.fd) < 0 && !rc)
		rc = fail(ctx, -errno, "cannot write '%s': %s", a->out_path, strerror(errno));
	return rc;
}

static int read_parse(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		      struct read_args *a)
{
	struct stat st;
	int rc;

	memset(a, 0, sizeof(*a));
	if ((rc = client_args_parse(ctx, c, v, RD_TOKEN, &a->cl)) ||
	    (rc = bench_args_parse(ctx, c, v, RD_BENCH, RC_OP_READ, &a->bench)))
		return rc;
	if ((rc = opts_fill(ctx, c, v, RD_STRIPE, RD_RAILS + 1, a)) ||
	    (a->rails_plan && (rc = rails_auto_client(ctx, c, a->rails_plan, &a->cl, &a->ra))))
		return rc;
	a->rails = rails_asked(v, &a->cl);
	if ((rc = rails_stripe(ctx, c, a->stripe_given, a->rails, a->stripe)))
		return rc;
	if (a->rails && a->bench.on)
		return usage_err(ctx, "read: --bench and --lat measure one rail: give one device");
	if (a->cl.fab.kind == RC_FABRIC_OFI && a->rails)
		return usage_err(ctx,
				 "read: several rails run over verbs only (--fabric verbs), not "
				 "yet over libfabric");
	if (a->bench.on)
		return 0;
	if ((rc = opts_fill(ctx, c, v, RD_SIZE, RD_OUT + 1, a)))
		return rc;
	a->have_size = a->size_given != NULL;
	if (a->have_size && !a->size)
		return usage_err(ctx, "read: invalid --size '%s': a read moves at least 1 byte",
				 a->size_given);
	if (a->out_path && !strcmp(a->out_path, "-"))
		a->out_path = NULL;
	if (!a->out_path && out_is_json(&ctx->out))
		return usage_err(ctx, "read: with -j the JSON report takes stdout: give --out FILE");
	if (!a->out_path && isatty(STDOUT_FILENO))
		return usage_err(
			ctx,
			"read: refusing to write binary data to a terminal: give --out FILE or redirect stdout");
	if (a->out_path && (rc = output_file(ctx, "read: --out", a->out_path)))
		return rc;
	if (a->rails && !a->out_path)
		return usage_err(ctx, "read: with several rails, give --out FILE (the rails land "
				      "their chunks in any order)");
	if (a->rails && stat(a->out_path, &st) == 0 && !S_ISREG(st.st_mode))
		return usage_err(ctx,
				 "read: with several rails, --out is written at any offset: "
				 "'%s' is not a regular file",
				 a->out_path);
	return a->rails ? 0 : client_target(ctx, c, v, NULL);
}

/* Run: the bytes over the rails into sk->fd (opened here when --out names a
 * file, and closed). */
static int read_run(struct ctx *ctx, struct read_args *a, struct rc_rails *r, struct sink *sk,
		    struct rc_rails_result *res)
{
	struct rc_client *cl = rc_rails_client(r, 0);
	uint64_t off = a->cl.off;
	uint64_t length = rc_client_region(cl)->length;
	struct rc_err e;
	int rc;

	if (!a->have_size)
		a->size = off < length ? length - off : 0;
	if ((rc = rc_client_check(cl, off, a->size, false, false, &e)))
		return fail(ctx, rc, "%s", ERR_TEXT(e));
	if (a->out_path) {
		sk->fd = open(a->out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (sk->fd < 0) {
			sk->fd = STDOUT_FILENO;
			return fail(ctx, -errno, "cannot create '%s': %s", a->out_path,
				    strerror(errno));
		}
	}
	sk->at = a->rails;
	struct rc_rails_io io = { .drain = drain, .arg = sk };

	rc = rails_transfer(ctx, r, RC_OP_READ, off, a->size, a->stripe, &io, res);
	if (!rc && sk->fd != STDOUT_FILENO && fsync(sk->fd) < 0 && errno != EINVAL)
		rc = fail(ctx, -errno, "cannot write '%s': %s", a->out_path, strerror(errno));
	if (sk->fd != STDOUT_FILENO && close(sk->fd) < 0 && !rc)
		rc = fail(ctx, -errno, "cannot write '%s': %s", a->out_path, strerror(errno));
	sk->fd = STDOUT_FILENO;
	return rc;
}

static void read_print(struct ctx *ctx, const struct read_args *a, const struct rc_rails *r,
		       const struct rc_rails_result *res)
{
	char peers[RC_RAILS_MAX * (RC_HOST_MAX + 8)], devs[RC_RAILS_MAX * 64];
	const char *region = rc_client_region(rc_rails_client(r, 0))->name;

	rails_names(r, peers, sizeof(peers), devs, sizeof(devs));
	if (a->out_path) {
		out_str(&ctx->out, "operation", NULL, "read");
		out_str(&ctx->out, "peer", "read from %s", peers);
		out_str(&ctx->out, "region", "/%s", region);
		out_u64(&ctx->out, "offset", " at offset %llu", (unsigned long long)a->cl.off);
		out_str(&ctx->out, "out", " into %s", a->out_path);
		out_str(&ctx->out, "device", " via %s: ", devs);
		fabric_verbs_keys(ctx, devs);
		rails_report(ctx, r, res, RC_OP_READ);
	} else if (ctx->verbose) {
		out_log(&ctx->out, "read %llu bytes from %s/%s in %.3f s",
			(unsigned long long)res->total.bytes, peers, region, res->total.seconds);
	}
}

static int do_read(struct ctx *ctx, int argc, char **argv)
{
	const struct cmd *c = &cmd_read;
	struct rc_rails_result res = { .n = 0 };
	struct sink sk = { .fd = STDOUT_FILENO };
	struct rc_rails *r = NULL;
	struct read_args a;
	struct opt_vals v;
	int rc;

	rc = opts_parse(ctx, c, argc, argv, &v);
	if (rc)
		return rc < 0 ? rc : 0;
	if ((rc = read_parse(ctx, c, &v, &a)))
		return rc;
	if (a.bench.on)
		return bench_run(ctx, c, &v, &a.cl, &a.bench, RC_OP_READ, 0, 0);
	if (a.cl.fab.kind == RC_FABRIC_OFI)
		return read_ofi(ctx, c, &v, &a);
	rc = rails_open(ctx, c, &v, &a.cl, &r);
	if (!rc)
		rc = read_run(ctx, &a, r, &sk, &res);
	if (!rc)
		read_print(ctx, &a, r, &res);
	rc = rails_metrics_commit(ctx, a.bench.metrics, RC_OP_READ, r, &res, rc);
	rails_close(ctx, r, rc);
	return rc;
}

const struct cmd cmd_read = {
	.name = "read",
	.run = do_read,
	.opts = read_opts,
	.args = "TARGET",
	.args_comp = COMP_TARGET,
	.summary = "read bytes of a served region to stdout or a file (RDMA READ)",
};
