// SPDX-License-Identifier: MIT
/*
 * migrate's --blocks list (OFFSET LENGTH [DST_OFFSET] lines, or JSON), fed
 * whole to the command's own reader (cmds/migrate.c, compiled in here for
 * its static functions) through a memfd: every block it accepts has a
 * length, and there are at most MAX_BLOCKS of them.
 */
#define _GNU_SOURCE
#include <sys/mman.h>

#include "../../cmds/migrate.c"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const fmts[] = { "auto", "text", "json" };
	static int fd = -1;
	static FILE *sink;
	struct mig_plan p = { 0 };
	struct ctx ctx = { .prog = "rdmactl", .gid_index = -1, .timeout_ms = 1000 };
	char path[64];

	if (size < 1)
		return 0;
	if (fd < 0 && (fd = memfd_create("fuzz", 0)) < 0)
		return 0;
	if (!sink && !(sink = fopen("/dev/null", "w")))
		return 0;
	if (ftruncate(fd, 0) || pwrite(fd, data + 1, size - 1, 0) != (ssize_t)(size - 1))
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	out_init(&ctx.out, data[0] & 4 ? OUT_JSON : OUT_TEXT, sink, sink);
	if (read_blocks(&ctx, &p, path, fmts[data[0] % 3]) == 0) {
		FUZZ_CHECK(p.n > 0 && p.n <= MAX_BLOCKS);
		for (size_t i = 0; i < p.n; i++)
			FUZZ_CHECK(p.ext[i].len > 0);
	}
	out_finish(&ctx.out);
	out_free(&ctx.out);
	free(p.ext);
	return 0;
}
