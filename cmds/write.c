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
#include "rails_cmds.h"

#define WRITE_OPTS(X) \
	X(WR_FILE, "file", 'f', "FILE", "write the contents of FILE (default: stdin)", COMP_FILE, \
	  OPT_STR(struct write_args, file, NULL)) \
	X(WR_PATTERN, "pattern", 'P', "PATTERN", "a pattern: zero, seq or random:SEED", \
	  COMP_WORDS, "zero|seq|random:1", OPT_STR(struct write_args, pattern, NULL)) \
	X(WR_SIZE, "size", 'S', "SIZE", "bytes to write (default: the file's size)", \
	  OPT_SIZE(struct write_args, size, NULL), OPT_GIVEN(struct write_args, size_given)) \
	X(WR_IMM, "imm", 'i', "VALUE", "then send VALUE as immediate data", \
	  OPT_U64(struct write_args, imm64, NULL), OPT_GIVEN(struct write_args, imm_given)) \
	X(WR_STRIPE, "stripe", 0, "SIZE", "with several rails: a rail's chunk", \
	  OPT_SIZE(struct write_args, stripe, "1M"), OPT_GIVEN(struct write_args, stripe_given)) \
	X(WR_RAILS, "rails", 0, "PLAN", "rail plan's rails: auto, gpu:N or numa:N", COMP_WORDS, \
	  "auto|gpu:0|numa:0", OPT_STR(struct write_args, rails_plan, NULL)) \
	CLIENT_OPTS(X, WR) \
	BENCH_OPTS(X, WR)

/* What `write` was asked, parsed and checked. */
struct write_args {
	struct client_args cl;
	struct bench_args bench;
	const char *file;
	const char *pattern;
	uint64_t size;
	const char *size_given; /* --size as given, or NULL */
	bool have_size;
	bool from_stdin;
	bool has_imm;
	uint32_t imm;
	uint64_t imm64; /* --imm as given, checked into imm */
	const char *imm_given;
	bool rails; /* several rails (rails_asked) */
	uint64_t stripe;
	const char *stripe_given; /* --stripe as given, or NULL */
	const char *rails_plan;   /* --rails PLAN, or NULL */
	struct rails_auto ra;     /* its rails */
};

enum { WRITE_OPTS(OPT_INDEX) WRITE_NOPTS };
static const struct cmd_opt write_opts[] = { WRITE_OPTS(OPT_ENTRY) OPT_END };
OPTS_BOUND(write_opts, WRITE_NOPTS);

struct src {
	int fd;
	const char *pattern;
	uint64_t base; /* remote offset of the first byte */
	bool at;       /* several rails: any chunk at any time, so pread at its offset */
};

/* len bytes from fd into buf, at off (pread) when at, else where it stands:
 * fewer at the end of the input, or -errno. */
static ssize_t read_full(int fd, void *buf, size_t len, uint64_t off, bool at)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = at ? pread(fd, (char *)buf + got, len - got, (off_t)(off + got))
			       : read(fd, (char *)buf + got, len - got);

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

static ssize_t fill(void *arg, uint64_t off, void *buf, size_t len)
{
	struct src *s = arg;

	if (s->pattern)
		return rc_pattern_fill(s->pattern, s->base + off, buf, len) ? -EINVAL : (ssize_t)len;
	return read_full(s->fd, buf, len, off, s->at);
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

/* Parse: options into a, the source opened into src. */
static int write_parse(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		       struct write_args *a, struct src *src)
{
	int rc;

	memset(a, 0, sizeof(*a));
	if ((rc = client_args_parse(ctx, c, v, WR_TOKEN, &a->cl)) ||
	    (rc = bench_args_parse(ctx, c, v, WR_BENCH, RC_OP_WRITE, &a->bench)))
		return rc;
	if ((rc = opts_fill(ctx, c, v, WR_STRIPE, WR_RAILS + 1, a)) ||
	    (a->rails_plan && (rc = rails_auto_client(ctx, c, a->rails_plan, &a->cl, &a->ra))))
		return rc;
	a->rails = rails_asked(v, &a->cl);
	if ((rc = rails_stripe(ctx, c, a->stripe_given, a->rails, a->stripe)))
		return rc;
	if (a->rails && a->bench.on)
		return usage_err(ctx, "write: --bench and --lat measure one rail: give one device");
	if (a->cl.fab.kind == RC_FABRIC_OFI && a->rails)
		return usage_err(ctx,
				 "write: several rails run over verbs only (--fabric verbs), not "
				 "yet over libfabric");
	if (a->bench.on)
		return 0;
	if ((rc = opts_fill(ctx, c, v, WR_FILE, WR_IMM + 1, a)))
		return rc;
	if (a->imm64 > UINT32_MAX)
		return usage_err(ctx, "invalid --imm: immediate data is 32 bits (0..4294967295)");
	a->imm = (uint32_t)a->imm64;
	a->has_imm = a->imm_given != NULL;
	a->have_size = a->size_given != NULL;
	/* As register refuses it: a write of nothing is a mistake, not a success. */
	if (a->have_size && !a->size)
		return usage_err(ctx, "write: invalid --size '%s': a write moves at least 1 byte",
				 a->size_given);
	src->pattern = a->pattern;
	if (src->pattern && a->file)
		return usage_err(ctx, "write: give --file or --pattern, not both");
	if (src->pattern && !rc_pattern_valid(src->pattern))
		return usage_err(ctx, "invalid --pattern '%s': expected zero, seq or random:SEED",
				 src->pattern);
	if (src->pattern && !a->have_size)
		return usage_err(ctx, "write: --pattern needs --size");
	a->from_stdin = !src->pattern && !a->file;
	if (a->from_stdin && ctx->session)
		return usage_err(ctx, "write: in the shell, give --file FILE or --pattern PATTERN");
	/* a terminal on stdin: say where the data is awaited, or it looks hung */
	if (a->from_stdin && isatty(STDIN_FILENO))
		out_log(&ctx->out,
			"write: the data comes from the terminal (stdin): type it and end with "
			"Ctrl-D, or give --file FILE, --pattern PATTERN or a pipe");
	if (a->file) {
		struct stat st;

		if ((rc = input_file(ctx, "write: --file", a->file)))
			return rc;
		/* the rails read it at any offset (pread), and a FIFO would block open */
		if (a->rails && stat(a->file, &st) == 0 && !S_ISREG(st.st_mode))
			return usage_err(ctx,
					 "write: with several rails, --file is read at any offset: "
					 "'%s' is not a regular file",
					 a->file);
		src->fd = open(a->file, O_RDONLY | O_CLOEXEC);
		if (src->fd < 0)
			return fail(ctx, -errno, "cannot open '%s': %s", a->file, strerror(errno));
		if (fstat(src->fd, &st) == 0 && S_ISREG(st.st_mode)) {
			if (!a->have_size)
				a->size = (uint64_t)st.st_size;
			else if (a->size > (uint64_t)st.st_size)
				return usage_err(ctx,
						 "write: --size %llu is larger than '%s' (%lld bytes)",
						 (unsigned long long)a->size, a->file,
						 (long long)st.st_size);
			a->have_size = true;
		}
	}
	if (a->rails && !src->pattern && !a->file)
		return usage_err(ctx, "write: with several rails, give --file FILE (a regular file) "
				      "or --pattern PATTERN --size SIZE, not standard input");
	return a->rails ? 0 : client_target(ctx, c, v, NULL);
}

/* Run: the transfer over the rails, then the immediate. */
static int write_run(struct ctx *ctx, struct write_args *a, struct src *src, struct rc_rails *r,
		     struct rc_rails_result *res)
{
	struct rc_client *cl = rc_rails_client(r, 0);
	uint64_t off = a->cl.off;
	uint64_t length = rc_client_region(cl)->length;
	struct rc_err e;
	struct stat in_st;
	int rc;

	if (!a->have_size)
		a->size = off < length ? length - off : 0;
	if ((rc = rc_client_check(cl, off, a->size, true, false, &e)))
		return fail(ctx, rc, "%s", ERR_TEXT(e));
	src->base = off;
	src->at = a->rails;
	struct rc_rails_io io = { .fill = fill, .arg = src };

	if (src->pattern ||
	    (src->fd != STDIN_FILENO && fstat(src->fd, &in_st) == 0 && S_ISREG(in_st.st_mode)))
		io.rewind = rewind_src;
	if ((rc = rails_transfer(ctx, r, RC_OP_WRITE, off, a->size, a->stripe, &io, res)))
		return rc;
	if (a->from_stdin && res->total.bytes == a->size) {
		char extra;
		ssize_t n = read(STDIN_FILENO, &extra, 1);

		if (n > 0)
			return fail(ctx, -EFBIG,
				    "the input is longer than the %llu bytes left in region '%s' from offset %llu; "
				    "the first %llu bytes were written",
				    (unsigned long long)a->size, rc_client_region(cl)->name,
				    (unsigned long long)off, (unsigned long long)res->total.bytes);
	}
	if (a->has_imm && (rc = rc_client_write_imm(cl, off, a->imm, ctx->timeout_ms, &e)))
		return fail(ctx, rc, "%s", ERR_TEXT(e));
	return 0;
}

static void write_print(struct ctx *ctx, const struct write_args *a, const struct rc_rails *r,
			const struct rc_rails_result *res)
{
	char peers[RC_RAILS_MAX * (RC_HOST_MAX + 8)], devs[RC_RAILS_MAX * 64];

	rails_names(r, peers, sizeof(peers), devs, sizeof(devs));
	out_str(&ctx->out, "operation", NULL, "write");
	out_str(&ctx->out, "peer", "wrote to %s", peers);
	out_str(&ctx->out, "region", "/%s", rc_client_region(rc_rails_client(r, 0))->name);
	out_u64(&ctx->out, "offset", " at offset %llu", (unsigned long long)a->cl.off);
	out_str(&ctx->out, "device", " via %s: ", devs);
	fabric_verbs_keys(ctx, devs);
	if (a->has_imm)
		out_u64(&ctx->out, "imm", NULL, a->imm);
	rails_report(ctx, r, res, RC_OP_WRITE);
}

static int do_write(struct ctx *ctx, int argc, char **argv)
{
	const struct cmd *c = &cmd_write;
	struct src src = { .fd = STDIN_FILENO };
	struct rc_rails_result res = { .n = 0 };
	struct rc_rails *r = NULL;
	struct write_args a;
	struct opt_vals v;
	int rc;

	rc = opts_parse(ctx, c, argc, argv, &v);
	if (rc)
		return rc < 0 ? rc : 0;
	rc = write_parse(ctx, c, &v, &a, &src);
	if (rc)
		goto out;
	if (a.bench.on) {
		rc = bench_run(ctx, c, &v, &a.cl, &a.bench, RC_OP_WRITE, 0, 0);
		goto out;
	}
	if (a.cl.fab.kind == RC_FABRIC_OFI) {
		rc = fabric_transfer(ctx, c, &v, &a.cl, true, a.size, a.have_size, fill, &src, NULL,
				     a.has_imm ? &a.imm : NULL);
		goto out;
	}
	rc = rails_open(ctx, c, &v, &a.cl, &r);
	if (!rc)
		rc = write_run(ctx, &a, &src, r, &res);
	if (!rc)
		write_print(ctx, &a, r, &res);
	rc = rails_metrics_commit(ctx, a.bench.metrics, RC_OP_WRITE, r, &res, rc);
out:
	rails_close(ctx, r, rc);
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
	.summary = "write a file, stdin or a pattern into a region (RDMA WRITE)",
};
