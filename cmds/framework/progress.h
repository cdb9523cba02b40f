/* SPDX-License-Identifier: MIT */
/*
 * The progress line of every long command (write, read, migrate, kvxfer
 * send, alltoall, multicast, sweep): one line on stderr, redrawn in place,
 * drawn only when stderr is a terminal and the output is text, never in
 * the document.
 */
#ifndef RDMACTL_PROGRESS_H
#define RDMACTL_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ctx;

struct progress {
	struct ctx *ctx;
	double start;
	double last;
	bool on;
};

void progress_init(struct progress *p, struct ctx *ctx);
/* Clear the line (before a line of output, and at the end). */
void progress_end(struct progress *p);
/* The line, in the command's own words (what it does now), at most 4 times a
 * second (any time with force). */
void progress_say(struct progress *p, bool force, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The line of a transfer: bytes done of total, the rate, the time left (a
 * libcore progress callback; arg is the struct progress). */
void progress_line(void *arg, uint64_t done, uint64_t total);
/* "DONE/TOTAL UNIT" in the binary unit that fits TOTAL (B, KiB, MiB, GiB,
 * TiB), one decimal below 10 of it: "0.5/4 KiB", not "0/0 MiB"; "DONE UNIT"
 * when TOTAL is 0 (not known). */
void progress_sizes(char *buf, size_t n, uint64_t done, uint64_t total);

#endif
