// SPDX-License-Identifier: MIT
/* A write split into work requests of at most the port's largest message
 * (rc_split_len): no piece over the limit, none lost, the immediate data on
 * the last only, and nothing truncated to 32 bits. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdmactl/ops.h>
#include <rdmactl/ops_core.h>

#include "check.h"

struct seen {
	int n;
	uint64_t next; /* where the next piece must start */
	uint64_t total;
	uint32_t max_len;
	int lasts;
	bool last_was_last; /* the last flag came on the final piece */
	int stop_at;        /* return -EIO at this piece (-1: never) */
};

static int piece(void *arg, uint64_t off, uint32_t len, bool last)
{
	struct seen *s = arg;

	if (s->n == s->stop_at)
		return -EIO;
	CHECK_EQ_U64(off, s->next);
	s->next = off + len;
	s->total += len;
	if (len > s->max_len)
		s->max_len = len;
	s->lasts += last;
	s->last_was_last = last;
	s->n++;
	return 0;
}

static struct seen split(uint64_t len, uint32_t max)
{
	struct seen s = { .stop_at = -1 };

	CHECK(rc_split_len(len, max, piece, &s) == 0);
	return s;
}

int main(void)
{
	const uint32_t G = 1u << 30;
	struct seen s;

	/* 4 GiB + 5 bytes: a (uint32_t) cast would have posted 5 bytes */
	s = split((4ULL << 30) + 5, G);
	CHECK_EQ_U64(s.n, 5);
	CHECK_EQ_U64(s.total, (4ULL << 30) + 5);
	CHECK_EQ_U64(s.max_len, G);
	CHECK(s.lasts == 1 && s.last_was_last);
	/* exactly 4 GiB: four full pieces, no empty fifth */
	s = split(4ULL << 30, G);
	CHECK_EQ_U64(s.n, 4);
	CHECK_EQ_U64(s.total, 4ULL << 30);
	/* rxe's 8 MiB limit */
	s = split(20ULL << 20, 8u << 20);
	CHECK_EQ_U64(s.n, 3);
	CHECK_EQ_U64(s.total, 20ULL << 20);
	CHECK_EQ_U64(s.max_len, 8u << 20);
	/* under the limit, and at it: one piece */
	s = split(4096, G);
	CHECK(s.n == 1 && s.total == 4096 && s.lasts == 1);
	s = split(G, G);
	CHECK(s.n == 1 && s.total == G && s.lasts == 1);
	/* a zero-length write (a ring step's notice) is one piece */
	s = split(0, G);
	CHECK(s.n == 1 && s.total == 0 && s.lasts == 1 && s.last_was_last);
	/* 1 TiB + 1 (the most alltoall sends one peer, and a byte): the largest
	 * piece a uint32_t holds */
	s = split((1ULL << 40) + 1, UINT32_MAX);
	CHECK_EQ_U64(s.total, (1ULL << 40) + 1);
	CHECK_EQ_U64(s.n, 257);
	CHECK_EQ_U64(s.max_len, UINT32_MAX);
	CHECK(s.lasts == 1);
	/* the first error stops it */
	s = (struct seen){ .stop_at = 2 };
	CHECK(rc_split_len(10, 3, piece, &s) == -EIO);
	CHECK(s.n == 2 && s.lasts == 0);
	CHECK(rc_split_len(10, 0, piece, &s) == -EINVAL);
	CHECK_DONE();
}
