// SPDX-License-Identifier: MIT
/* The meeting point of a rank's rails before each iteration (a2a_int.h),
 * which the exchange (a2a.c) waits at and the rails' run (a2a_rails.c)
 * sets up: apart from both, so neither calls into the other. */
#include <errno.h>
#include <pthread.h>

#include <rdmactl/err_core.h>

#include "a2a_int.h"

int a2a_sync_wait(struct a2a_sync *s, struct rc_err *err)
{
	int rc = 0;

	pthread_mutex_lock(&s->mu);
	if (s->failed < 0 && ++s->arrived == s->n) {
		s->arrived = 0;
		s->round++;
		pthread_cond_broadcast(&s->cv);
	} else if (s->failed < 0) {
		uint64_t round = s->round;

		while (s->failed < 0 && s->round == round)
			pthread_cond_wait(&s->cv, &s->mu);
	}
	if (s->failed >= 0)
		rc = rc_err_set(err, ECANCELED, "rail %d of this rank failed", s->failed + 1);
	pthread_mutex_unlock(&s->mu);
	return rc;
}

void a2a_sync_fail(struct a2a_sync *s, int rail)
{
	pthread_mutex_lock(&s->mu);
	if (s->failed < 0)
		s->failed = rail;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}
