// SPDX-License-Identifier: MIT
/*
 * The root's feeder: a thread that reads the blob into the ring and hashes
 * it, chunk by chunk and in order, while the multicast's own thread posts
 * the writes. On SoftRoCE a user QP's send path runs inside the posting
 * call (posting a 1M chunk returned 8-13 ms later in the guest), so reading
 * and hashing in the same thread left the link idle for about a tenth of
 * the time to one receiver; here they run beside the post.
 *
 * The feeder touches the ring and the digest only; everything that speaks
 * to the group stays in the multicast's thread, which tells the feeder how
 * far it may fill (slots every live child is done with) and learns how far
 * it filled and hashed. A chunk is published as soon as it is read, so its
 * writes leave before its hash; a slot is refilled only after its hash,
 * since one thread does both in order.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "mcast_int.h"

static void *feed_main(void *arg)
{
	struct mc *m = arg;
	struct feed *f = &m->feed;

	pthread_mutex_lock(&f->mu);
	for (uint32_t c = 0; c < m->n; c++) {
		uint64_t off = (uint64_t)c * m->chunk;
		uint32_t len = mcast_chunk_len(m, c);
		uint8_t *p = mcast_slot_host(m, c);
		struct rc_err e = { 0 };
		int rc;

		while (!f->stop && c >= f->limit)
			pthread_cond_wait(&f->cv, &f->mu);
		if (f->stop)
			break;
		pthread_mutex_unlock(&f->mu);
		rc = m->o->read(m->o->arg, off, p, len, &e);
		pthread_mutex_lock(&f->mu);
		if (rc) {
			if (!e.msg[0])
				rc_err_set(&e, rc, "reading the blob at %llu failed: %s",
					   (unsigned long long)off, strerror(rc < 0 ? -rc : rc));
			f->rc = rc;
			f->err = e;
			pthread_cond_broadcast(&f->cv);
			break;
		}
		f->filled = c + 1;
		pthread_cond_broadcast(&f->cv);
		pthread_mutex_unlock(&f->mu);
		mcast_digest_update(m, p, len);
		pthread_mutex_lock(&f->mu);
		f->hashed = c + 1;
		pthread_cond_broadcast(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

int mcast_feed_start(struct mc *m, struct rc_err *err)
{
	struct feed *f = &m->feed;
	pthread_condattr_t ca;
	int e;

	f->limit = m->n < (uint32_t)m->R ? m->n : (uint32_t)m->R;
	if ((e = pthread_mutex_init(&f->mu, NULL)))
		return rc_err_set(err, e, "cannot start the reader: %s", strerror(e));
	/* its waits are timed on the clock that does not jump */
	if ((e = pthread_condattr_init(&ca)) ||
	    (e = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC)) ||
	    (e = pthread_cond_init(&f->cv, &ca))) {
		pthread_mutex_destroy(&f->mu);
		return rc_err_set(err, e, "cannot start the reader: %s", strerror(e));
	}
	pthread_condattr_destroy(&ca);
	if ((e = pthread_create(&f->t, NULL, feed_main, m))) {
		pthread_cond_destroy(&f->cv);
		pthread_mutex_destroy(&f->mu);
		return rc_err_set(err, e, "cannot start the reader thread: %s", strerror(e));
	}
	f->on = true;
	return 0;
}

void mcast_feed_stop(struct mc *m)
{
	struct feed *f = &m->feed;

	if (!f->on)
		return;
	pthread_mutex_lock(&f->mu);
	f->stop = true;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	pthread_join(f->t, NULL);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	f->on = false;
}

int mcast_feed_sync(struct mc *m, uint32_t limit, bool *moved, struct rc_err *err)
{
	struct feed *f = &m->feed;
	int rc = 0;

	if (!f->on)
		return 0; /* an empty blob: nothing to read */
	pthread_mutex_lock(&f->mu);
	if (limit > f->limit) {
		f->limit = limit;
		pthread_cond_broadcast(&f->cv);
	}
	if (f->rc)
		rc = rc_err_set(err, f->err.code, "%s", f->err.msg);
	if (f->filled != m->have || f->hashed != m->hashed)
		*moved = true;
	m->have = f->filled;
	m->hashed = f->hashed;
	pthread_mutex_unlock(&f->mu);
	return rc;
}

bool mcast_feed_busy(struct mc *m)
{
	struct feed *f = &m->feed;
	bool busy;

	if (!f->on)
		return false;
	pthread_mutex_lock(&f->mu);
	busy = !f->rc && (f->hashed < f->filled || (f->filled < f->limit && f->filled < m->n));
	pthread_mutex_unlock(&f->mu);
	return busy;
}

void mcast_feed_wait(struct mc *m, int ms)
{
	struct feed *f = &m->feed;
	struct timespec ts;

	if (!f->on)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += (long)ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&f->mu);
	if (f->filled == m->have && f->hashed == m->hashed && !f->rc)
		pthread_cond_timedwait(&f->cv, &f->mu, &ts);
	pthread_mutex_unlock(&f->mu);
}
