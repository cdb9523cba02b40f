// SPDX-License-Identifier: MIT
/* The sizes of a progress line: the unit that fits the total, never "0/0 MiB". */
#include <stdint.h>
#include <string.h>

#include "client_cmds.h"
#include "check.h"

static void sizes(uint64_t done, uint64_t total, const char *want)
{
	char buf[96];

	progress_sizes(buf, sizeof(buf), done, total);
	if (strcmp(buf, want))
		fprintf(stderr, "progress_sizes(%llu, %llu) = '%s', not '%s'\n",
			(unsigned long long)done, (unsigned long long)total, buf, want);
	CHECK(strcmp(buf, want) == 0);
}

int main(void)
{
	sizes(0, 0, "0 B");
	sizes(100, 512, "100/512 B");
	sizes(512, 4096, "0.5/4 KiB");
	sizes(3 << 10, 100 << 10, "3/100 KiB");
	sizes(1 << 20, 8 << 20, "1/8 MiB");
	sizes(3 << 19, 8 << 20, "1.5/8 MiB");
	sizes(300ULL << 20, 2ULL << 30, "0.3/2 GiB");
	sizes(5ULL << 40, 5ULL << 40, "5/5 TiB");
	/* a total not known (a pipe): what was done, in its own unit */
	sizes(2 << 20, 0, "2 MiB");
	CHECK_DONE();
}
