// SPDX-License-Identifier: MIT
/* The multicast root's feeder (libcore/mcast/feed.c) without a device: it
 * reads the blob in order and hashes all of it, stops at the slots it was
 * given until told more, hands a failed read's error to the multicast's
 * thread, and is joined when stopped while it waits. The ring's slots
 * against the children's completions are the guest's to test (a blob many
 * rings long, whole at every receiver: tests/rxe/multicast.bats). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcast_int.h"
#include "check.h"

#define CHUNK 4096u

struct src {
	uint64_t next;    /* the offset the next read must ask for */
	uint64_t fail_at; /* a read at this offset fails (UINT64_MAX: none) */
	bool silent;      /* ... without a message */
	int reads;
};

static int src_read(void *arg, uint64_t off, void *buf, size_t len, struct rc_err *err)
{
	struct src *s = arg;

	s->reads++;
	if (off != s->next)
		return rc_err_set(err, EINVAL, "read at %llu, %llu expected",
				  (unsigned long long)off, (unsigned long long)s->next);
	if (off == s->fail_at && s->silent)
		return -EIO;
	if (off == s->fail_at)
		return rc_err_set(err, EIO, "cannot read the blob at %llu", (unsigned long long)off);
	s->next = off + len;
	return rc_pattern_fill("random:7", off, buf, len) ? -EINVAL : 0;
}

/* A root with no children over a ring of R chunks: a blob of size bytes. */
static void setup(struct mc *m, struct rc_mcast_opts *o, struct src *s, uint64_t size, int R)
{
	memset(m, 0, sizeof(*m));
	memset(o, 0, sizeof(*o));
	memset(s, 0, sizeof(*s));
	s->fail_at = UINT64_MAX;
	o->read = src_read;
	o->arg = s;
	o->digest = RC_MCAST_DIGEST_XXH64;
	m->o = o;
	m->parent = -1;
	m->R = R;
	m->chunk = CHUNK;
	m->size = size;
	m->n = (uint32_t)((size + CHUNK - 1) / CHUNK);
	m->mem.buf = calloc((size_t)R, CHUNK);
	rc_xxh64_init(&m->dg.xxh, 0);
}

/* Sync until everything is hashed or the feeder failed; its rc. */
static int drain(struct mc *m, struct rc_err *err)
{
	for (int i = 0; i < 100000; i++) {
		bool moved = false;
		int rc = mcast_feed_sync(m, m->n, &moved, err);

		if (rc || m->hashed == m->n)
			return rc;
		if (!moved)
			mcast_feed_wait(m, 1);
	}
	return -ETIMEDOUT;
}

static void test_whole_blob(void)
{
	uint64_t size = 10 * CHUNK + 123; /* a short last chunk */
	struct rc_mcast_opts o;
	struct src s;
	struct mc m;
	struct rc_err err = { 0 };
	struct rc_xxh64 want;
	uint8_t *blob = malloc(size);

	setup(&m, &o, &s, size, 3);
	CHECK(blob && m.mem.buf);
	CHECK_EQ_U64(mcast_feed_start(&m, &err), 0);
	CHECK_EQ_U64(drain(&m, &err), 0);
	CHECK_EQ_U64(m.have, m.n);
	CHECK_EQ_U64(m.hashed, 11);
	mcast_feed_stop(&m);
	CHECK_EQ_U64(s.next, size); /* every byte, in order, once */
	CHECK_EQ_U64(s.reads, 11);
	rc_pattern_fill("random:7", 0, blob, size);
	rc_xxh64_init(&want, 0);
	rc_xxh64_update(&want, blob, size);
	CHECK_EQ_U64(rc_xxh64_value(&m.dg.xxh), rc_xxh64_value(&want));
	/* and the digest is not of something else: one byte off differs */
	blob[size - 1] ^= 1;
	rc_xxh64_init(&want, 0);
	rc_xxh64_update(&want, blob, size);
	CHECK(rc_xxh64_value(&m.dg.xxh) != rc_xxh64_value(&want));
	free(blob);
	free(m.mem.buf);
}

static uint32_t under_lock(struct mc *m, const uint32_t *field)
{
	uint32_t v;

	pthread_mutex_lock(&m->feed.mu);
	v = *field;
	pthread_mutex_unlock(&m->feed.mu);
	return v;
}

/* Untold, it fills the ring's R slots and waits there; stop joins it. */
static void test_waits_for_slots(void)
{
	struct rc_mcast_opts o;
	struct src s;
	struct mc m;
	struct rc_err err = { 0 };

	setup(&m, &o, &s, 20 * CHUNK, 4);
	CHECK_EQ_U64(mcast_feed_start(&m, &err), 0);
	for (int i = 0; i < 5000 && under_lock(&m, &m.feed.hashed) < 4; i++)
		mcast_feed_wait(&m, 1);
	nanosleep(&(struct timespec){ .tv_nsec = 20000000 }, NULL); /* time to overrun */
	CHECK_EQ_U64(under_lock(&m, &m.feed.filled), 4);
	CHECK_EQ_U64(s.reads, 4);
	CHECK(mcast_feed_busy(&m) == false);
	mcast_feed_stop(&m);
	CHECK_EQ_U64(m.feed.on, 0);
	free(m.mem.buf);
}

/* A read of chunk at that fails (silent: without a message): the
 * multicast's thread gets its error (the feeder names a silent one), with
 * what was read before it, and the feeder stops reading. */
static void read_fails(uint32_t at, bool silent, const char *msg)
{
	struct rc_mcast_opts o;
	struct src s;
	struct mc m;
	struct rc_err err = { 0 };

	setup(&m, &o, &s, 8 * CHUNK, 8);
	s.fail_at = (uint64_t)at * CHUNK;
	s.silent = silent;
	CHECK_EQ_U64(mcast_feed_start(&m, &err), 0);
	CHECK(drain(&m, &err) == -EIO);
	CHECK_STR(err.msg, msg);
	CHECK_EQ_U64(err.code, EIO);
	CHECK_EQ_U64(m.have, at);
	CHECK(mcast_feed_busy(&m) == false);
	mcast_feed_stop(&m);
	CHECK_EQ_U64(s.reads, at + 1);
	free(m.mem.buf);
}

int main(void)
{
	test_whole_blob();
	test_waits_for_slots();
	read_fails(5, false, "cannot read the blob at 20480");
	read_fails(2, true, "reading the blob at 8192 failed: Input/output error");
	CHECK_DONE();
}
