// SPDX-License-Identifier: MIT
/* The progress line (progress.h): every long command draws it here. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "progress.h"
#include <rdmactl/ops.h>

void progress_init(struct progress *p, struct ctx *ctx)
{
	memset(p, 0, sizeof(*p));
	p->ctx = ctx;
	p->start = rc_now();
	p->on = !out_is_json(&ctx->out) && isatty(STDERR_FILENO);
}

void progress_end(struct progress *p)
{
	if (p->on && p->last > 0)
		fprintf(stderr, "\r\033[K");
}

void progress_say(struct progress *p, bool force, const char *fmt, ...)
{
	double now = rc_now();
	va_list ap;

	if (!p->on || (!force && now - p->last < 0.25))
		return;
	p->last = now;
	fputs("\r\033[K", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
}

/* The unit of the binary prefix that fits v, and its size. */
static const char *size_unit(uint64_t v, double *div)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	*div = 1;
	while (u < 4 && v >= 1024 * (uint64_t)*div) {
		*div *= 1024;
		u++;
	}
	return units[u];
}

static void size_fmt(char *buf, size_t n, double v)
{
	snprintf(buf, n, v > 0 && v < 10 && v != (double)(uint64_t)v ? "%.1f" : "%.0f", v);
}

void progress_sizes(char *buf, size_t n, uint64_t done, uint64_t total)
{
	double div;
	const char *unit = size_unit(total > done ? total : done, &div);
	char d[32], t[32];

	size_fmt(d, sizeof(d), (double)done / div);
	size_fmt(t, sizeof(t), (double)total / div);
	if (total)
		snprintf(buf, n, "%s/%s %s", d, t, unit);
	else /* not known (a pipe) */
		snprintf(buf, n, "%s %s", d, unit);
}

void progress_line(void *arg, uint64_t done, uint64_t total)
{
	struct progress *p = arg;
	double el = rc_now() - p->start, rate = el > 0 ? (double)done / el : 0, div;
	const char *unit = size_unit((uint64_t)rate, &div);
	char sizes[96], left[48] = "";

	if (!p->on)
		return;
	progress_sizes(sizes, sizeof(sizes), done, total);
	if (rate > 0 && total > done)
		snprintf(left, sizeof(left), "%.0f s left", (double)(total - done) / rate);
	progress_say(p, false, "%s  %.1f %s/s  %s", sizes, rate / div, unit, left);
}
