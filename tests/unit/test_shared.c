// SPDX-License-Identifier: MIT
/* The shared CQ's table of connections by QP number (libcore/verbs/shared.c)
 * at 4096 connections: every completion finds its own connection, one of a
 * closed connection finds none, even once its number is given again. */
#include <errno.h>
#include <stdlib.h>

#include "check.h"

/* Its static functions too. */
#include "../../libcore/verbs/shared.c"
#include <rdmactl/conn_core.h>

#define N 4096

static struct rc_conn conns[N];
static struct ibv_qp qps[N];

/* A permutation of QP numbers, spread as a device gives them. */
static uint32_t qpn_of(int i)
{
	return (uint32_t)((i * 2654435761u) % 16777213u) + 17;
}

int main(void)
{
	struct rc_shared sh = { 0 };
	int found = 0, gone = 0;

	pthread_mutex_init(&sh.mu, NULL);

	for (int i = 0; i < N; i++) {
		qps[i].qp_num = qpn_of(i);
		conns[i].qp = &qps[i];
		CHECK(rc_shared_add(&sh, &conns[i]) == 0);
	}
	CHECK_EQ_U64(sh.n, N);
	for (int i = 1; i < N; i++) /* sorted, no number twice */
		CHECK(sh.ent[i - 1].qpn < sh.ent[i].qpn);
	for (int i = 0; i < N; i++)
		found += rc_shared_conn(&sh, qpn_of(i)) == &conns[i];
	CHECK_EQ_U64(found, N);
	/* A number no connection has, below, between and above them all. */
	CHECK(rc_shared_conn(&sh, 0) == NULL);
	CHECK(rc_shared_conn(&sh, 16777213u + 100) == NULL);
	CHECK(rc_shared_add(&sh, &conns[7]) == -EEXIST);
	/* Every other one closes: its completions left behind find nothing. */
	for (int i = 0; i < N; i += 2)
		rc_shared_remove(&sh, &conns[i]);
	rc_shared_remove(&sh, &conns[0]); /* twice: nothing happens */
	CHECK_EQ_U64(sh.n, N / 2);
	found = 0;
	for (int i = 0; i < N; i++) {
		struct rc_conn *c = rc_shared_conn(&sh, qpn_of(i));

		if (i % 2)
			found += c == &conns[i];
		else
			gone += c == NULL;
	}
	CHECK_EQ_U64(found, N / 2);
	CHECK_EQ_U64(gone, N / 2);
	/* A new connection given a closed one's number is found as itself. */
	static struct rc_conn fresh;
	static struct ibv_qp fresh_qp;

	fresh_qp.qp_num = qpn_of(10);
	fresh.qp = &fresh_qp;
	CHECK(rc_shared_add(&sh, &fresh) == 0);
	CHECK(rc_shared_conn(&sh, qpn_of(10)) == &fresh);
	CHECK(rc_shared_conn(&sh, qpn_of(11)) == &conns[11]);
	free(sh.ent);
	CHECK_DONE();
}
