// SPDX-License-Identifier: MIT
/* rdmactl read: one-sided RDMA READ from a served region. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "client_cmds.h"

static const struct cmd_opt read_opts[] = {
	{ "size", 'S', "SIZE", "bytes to read (default: to the end of the region)" },
	{ "out", 'O', "FILE", "write the bytes to FILE (default: stdout)", COMP_FILE },
	CLIENT_OPTS,
	BENCH_OPTS,
	OPT_END,
};
OPTS_FIT(read_opts);

static int drain(void *arg, uint64_t off, const void *buf, size_t len)
{
	int fd = *(int *)arg;
	size_t done = 0;

	(void)off;
	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

static int do_read(struct ctx *ctx, int argc, char **argv)
{
	const struct cmd *c = &cmd_read;
	struct rc_stream_result res;
	struct rc_client *cl = NULL;
	struct opt_vals v;
	struct rc_err e;
	const char *out_path;
	uint64_t off = 0, size = 0;
	int fd = STDOUT_FILENO, rc;

	rc = opts_parse(ctx, c, argc, argv, &v);
	if (rc)
		return rc < 0 ? rc : 0;
	if (bench_wanted(c, &v))
		return bench_run(ctx, c, &v, RC_OP_READ, 0, 0);
	if ((rc = opt_size(ctx, c, &v, "offset", &off)) || (rc = opt_size(ctx, c, &v, "size", &size)))
		return rc;
	out_path = opt_get(c, &v, "out");
	if (out_path && !strcmp(out_path, "-"))
		out_path = NULL;
	if (!out_path && out_is_json(&ctx->out))
		return usage_err(ctx, "read: with -j the JSON report takes stdout: give --out FILE");
	if (!out_path && isatty(STDOUT_FILENO))
		return usage_err(ctx, "read: refusing to write binary data to a terminal: give --out FILE or redirect stdout");
	if ((rc = client_target(ctx, c, &v, &(struct rc_target){ 0 })))
		return rc;
	rc = client_open(ctx, c, &v, 1, false, STREAM_SQ_DEPTH, &cl);
	if (rc)
		return rc;
	if (!opt_has(c, &v, "size"))
		size = off < cl->region.length ? cl->region.length - off : 0;
	if ((rc = rc_client_check(cl, off, size, false, false, &e))) {
		rc = fail(ctx, rc, "%s", e.msg);
		goto out;
	}
	if (out_path) {
		fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			rc = fail(ctx, -errno, "cannot create '%s': %s", out_path, strerror(errno));
			goto out;
		}
	}
	struct rc_client_io io = { .drain = drain, .arg = &fd };

	rc = stream_transfer(ctx, cl, RC_OP_READ, off, size, &io, &res);
	if (rc)
		goto out;
	if (fd != STDOUT_FILENO && fsync(fd) < 0 && errno != EINVAL) {
		rc = fail(ctx, -errno, "cannot write '%s': %s", out_path, strerror(errno));
		goto out;
	}
	if (out_path) {
		out_str(&ctx->out, "operation", NULL, "read");
		out_str(&ctx->out, "peer", "read from %s", rc_client_peer(cl));
		out_str(&ctx->out, "region", "/%s", cl->region.name);
		out_u64(&ctx->out, "offset", " at offset %llu", (unsigned long long)off);
		out_str(&ctx->out, "out", " into %s", out_path);
		out_str(&ctx->out, "device", " via %s: ", rc_client_device(cl));
		report_transfer(ctx, &res);
	} else if (ctx->verbose) {
		out_log(&ctx->out, "read %llu bytes from %s/%s in %.3f s",
			(unsigned long long)res.bytes, rc_client_peer(cl), cl->region.name,
			res.seconds);
	}
out:
	client_close(ctx, cl, rc);
	if (fd != STDOUT_FILENO && close(fd) < 0 && !rc)
		rc = fail(ctx, -errno, "cannot write '%s': %s", out_path, strerror(errno));
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
