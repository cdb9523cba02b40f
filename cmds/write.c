// SPDX-License-Identifier: MIT
/* rdmactl write: one-sided RDMA WRITE into a served region. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdmactl/mem.h>

#include "cmds.h"
#include "client_cmds.h"

static const struct cmd_opt write_opts[] = {
	{ "file", 'f', "FILE", "write the contents of FILE (default: stdin)", COMP_FILE },
	{ "pattern", 'P', "PATTERN", "write a generated pattern: zero, seq or random:SEED",
	  COMP_WORDS, "zero|seq|random:1" },
	{ "size", 'S', "SIZE", "bytes to write (default: the file's size)" },
	{ "imm", 'i', "VALUE", "then send VALUE as immediate data (RDMA WRITE_WITH_IMM)" },
	CLIENT_OPTS,
	BENCH_OPTS,
	OPT_END,
};
OPTS_FIT(write_opts);

struct src {
	int fd;
	const char *pattern;
	uint64_t base; /* remote offset of the first byte */
};

static ssize_t fill(void *arg, uint64_t off, void *buf, size_t len)
{
	struct src *s = arg;
	size_t got = 0;

	if (s->pattern)
		return rc_pattern_fill(s->pattern, s->base + off, buf, len) ? -EINVAL : (ssize_t)len;
	while (got < len) {
		ssize_t n = read(s->fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* A write cut by a migration's fence is retried whole at the region's new
 * home: a pattern and a regular file can start over, a pipe cannot. */
static int rewind_src(void *arg)
{
	struct src *s = arg;

	if (s->pattern)
		return 0;
	return lseek(s->fd, 0, SEEK_SET) == 0 ? 0 : -errno;
}

static int do_write(struct ctx *ctx, int argc, char **argv)
{
	const struct cmd *c = &cmd_write;
	struct rc_stream_result res;
	struct rc_client *cl = NULL;
	struct src src = { .fd = STDIN_FILENO };
	struct opt_vals v;
	struct rc_err e;
	uint64_t off = 0, size = 0, imm = 0;
	bool have_size, from_stdin;
	int rc;

	rc = opts_parse(ctx, c, argc, argv, &v);
	if (rc)
		return rc < 0 ? rc : 0;
	if (bench_wanted(c, &v))
		return bench_run(ctx, c, &v, RC_OP_WRITE, 0, 0);
	if ((rc = opt_size(ctx, c, &v, "offset", &off)) || (rc = opt_size(ctx, c, &v, "size", &size)) ||
	    (rc = opt_u64(ctx, c, &v, "imm", &imm)))
		return rc;
	if (imm > UINT32_MAX)
		return usage_err(ctx, "invalid --imm: immediate data is 32 bits (0..4294967295)");
	have_size = opt_has(c, &v, "size");
	src.pattern = opt_get(c, &v, "pattern");
	if (src.pattern && opt_has(c, &v, "file"))
		return usage_err(ctx, "write: give --file or --pattern, not both");
	if (src.pattern && !rc_pattern_valid(src.pattern))
		return usage_err(ctx, "invalid --pattern '%s': expected zero, seq or random:SEED",
				 src.pattern);
	if (src.pattern && !have_size)
		return usage_err(ctx, "write: --pattern needs --size");
	from_stdin = !src.pattern && !opt_has(c, &v, "file");
	if (from_stdin && ctx->session)
		return usage_err(ctx, "write: in the shell, give --file FILE or --pattern PATTERN");
	if (opt_has(c, &v, "file")) {
		struct stat st;

		src.fd = open(opt_get(c, &v, "file"), O_RDONLY | O_CLOEXEC);
		if (src.fd < 0)
			return fail(ctx, -errno, "cannot open '%s': %s", opt_get(c, &v, "file"),
				    strerror(errno));
		if (fstat(src.fd, &st) == 0 && S_ISREG(st.st_mode)) {
			if (!have_size)
				size = (uint64_t)st.st_size;
			else if (size > (uint64_t)st.st_size) {
				rc = usage_err(ctx, "write: --size %llu is larger than '%s' (%lld bytes)",
					       (unsigned long long)size, opt_get(c, &v, "file"),
					       (long long)st.st_size);
				goto out;
			}
			have_size = true;
		}
	}
	if ((rc = client_target(ctx, c, &v, &(struct rc_target){ 0 })))
		goto out;
	rc = client_open(ctx, c, &v, 1, false, STREAM_SQ_DEPTH, &cl);
	if (rc)
		goto out;
	if (!have_size)
		size = off < cl->region.length ? cl->region.length - off : 0;
	if ((rc = rc_client_check(cl, off, size, true, false, &e))) {
		rc = fail(ctx, rc, "%s", e.msg);
		goto out;
	}
	src.base = off;
	struct rc_client_io io = { .fill = fill, .arg = &src };
	struct stat in_st;

	if (src.pattern || (fstat(src.fd, &in_st) == 0 && S_ISREG(in_st.st_mode) && src.fd != STDIN_FILENO))
		io.rewind = rewind_src;

	rc = stream_transfer(ctx, cl, RC_OP_WRITE, off, size, &io, &res);
	if (rc)
		goto out;
	if (from_stdin && res.bytes == size) {
		char extra;
		ssize_t n = read(STDIN_FILENO, &extra, 1);

		if (n > 0) {
			rc = fail(ctx, -EFBIG,
				  "the input is longer than the %llu bytes left in region '%s' from offset %llu; "
				  "the first %llu bytes were written",
				  (unsigned long long)size, cl->region.name, (unsigned long long)off,
				  (unsigned long long)res.bytes);
			goto out;
		}
	}
	if (opt_has(c, &v, "imm")) {
		rc = rc_client_write_imm(cl, off, (uint32_t)imm, ctx->timeout_ms, &e);
		if (rc) {
			rc = fail(ctx, rc, "%s", e.msg);
			goto out;
		}
	}
	out_str(&ctx->out, "operation", NULL, "write");
	out_str(&ctx->out, "peer", "wrote to %s", rc_client_peer(cl));
	out_str(&ctx->out, "region", "/%s", cl->region.name);
	out_u64(&ctx->out, "offset", " at offset %llu", (unsigned long long)off);
	out_str(&ctx->out, "device", " via %s: ", rc_client_device(cl));
	if (opt_has(c, &v, "imm"))
		out_u64(&ctx->out, "imm", NULL, imm);
	report_transfer(ctx, &res);
out:
	client_close(ctx, cl, rc);
	if (src.fd > STDIN_FILENO)
		close(src.fd);
	return rc;
}

const struct cmd cmd_write = {
	.name = "write",
	.run = do_write,
	.opts = write_opts,
	.args = "TARGET",
	.args_comp = COMP_TARGET,
	.summary = "write a file, stdin or a pattern into a served region (RDMA WRITE)",
};
