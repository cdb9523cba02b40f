// SPDX-License-Identifier: MIT
/*
 * kvxfer's --model FILE (a JSON object of the geometry), through the
 * command itself: `kvxfer plan --model FILE --tokens 64` (no device) over
 * a memfd. Whatever the file holds, the command ends with 0 (a plan) or a
 * usage error, never a crash.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cmd.h"
#include "cmds.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static FILE *sink;
	struct ctx ctx = { .prog = "rdmactl", .gid_index = -1, .timeout_ms = 1000 };
	char path[64];
	char *argv[] = { "kvxfer", "plan", "--model", path, "--tokens", "64", NULL };
	int rc;

	if (fd < 0 && (fd = memfd_create("fuzz", 0)) < 0)
		return 0;
	if (!sink && !(sink = fopen("/dev/null", "w")))
		return 0;
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	out_init(&ctx.out, OUT_JSON, sink, sink);
	rc = cmd_dispatch(&ctx, 6, argv);
	out_finish(&ctx.out);
	out_free(&ctx.out);
	FUZZ_CHECK(rc == 0 || ctx.usage_error);
	return 0;
}
