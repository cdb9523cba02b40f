// SPDX-License-Identifier: MIT
/* The shell session's event queue: servers' threads push, the shell's
 * thread drains in order, an overflow is counted, not lost silently. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "session.h"

#define CHECK(cond) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
			exit(1); \
		} \
	} while (0)

struct pusher {
	struct rc_server_opts so;
	int n;
};

static void *push(void *arg)
{
	struct pusher *p = arg;
	char peer[32];

	for (int i = 0; i < p->n; i++) {
		snprintf(peer, sizeof(peer), "10.0.0.%d:%d", i, 4000 + i);
		p->so.on_event(p->so.arg,
			       &(struct rc_server_event){ .kind = i % 2 ? RC_EV_DISCONNECTED
									: RC_EV_CONNECTED,
							  .peer = peer });
	}
	p->so.on_event(p->so.arg, &(struct rc_server_event){ .kind = RC_EV_REJECTED,
							     .peer = "10.0.0.9:1",
							     .reason = "wrong token" });
	return NULL;
}

static char *drain(struct rc_session *ss, enum out_mode mode, char **errs)
{
	struct ctx ctx = { 0 };
	char *buf = NULL, *ebuf = NULL;
	size_t len = 0, elen = 0;
	FILE *fp = open_memstream(&buf, &len), *efp = open_memstream(&ebuf, &elen);

	out_init(&ctx.out, mode, fp, efp);
	ctx.session = ss;
	session_drain(ss, &ctx);
	out_free(&ctx.out);
	fclose(fp);
	fclose(efp);
	*errs = ebuf;
	return buf;
}

/* Several servers' threads pushing at once while the shell's thread drains:
 * each thread's events come out in its order, none twice, and every event
 * is either printed or counted as dropped. */
#define NPUSHERS 4
#define PER_PUSHER 20000

struct racer {
	struct rc_server_opts so;
	pthread_barrier_t *go;
	int id;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	char peer[32];

	pthread_barrier_wait(r->go);
	for (int i = 0; i < PER_PUSHER; i++) {
		snprintf(peer, sizeof(peer), "10.%d.0.0:%d", r->id, i);
		r->so.on_event(r->so.arg,
			       &(struct rc_server_event){ .kind = RC_EV_CONNECTED, .peer = peer });
	}
	return NULL;
}

/* Count the drained lines "10.K.0.0:I: connected" and the dropped ones. */
static void tally(const char *text, const char *errs, int *next, long *printed, long *dropped)
{
	for (const char *l = text; l && *l;) {
		int k, i, n = 0;

		CHECK(sscanf(l, "10.%d.0.0:%d: connected\n%n", &k, &i, &n) == 2 && n > 0);
		CHECK(k >= 0 && k < NPUSHERS);
		CHECK(i >= next[k]); /* in order, never twice */
		next[k] = i + 1;
		(*printed)++;
		l += n;
	}
	for (const char *l = errs; l && *l;) {
		unsigned d;
		int n = 0;

		CHECK(sscanf(l, "rdmactl: %u server events were dropped (too many at once)\n%n", &d,
			     &n) == 1 &&
		      n > 0);
		*dropped += d;
		l += n;
	}
}

static void concurrent_pushers(void)
{
	struct rc_session *ss = session_new();
	struct racer r[NPUSHERS];
	pthread_t t[NPUSHERS];
	pthread_barrier_t go;
	int next[NPUSHERS] = { 0 }, rounds = 0;
	long printed = 0, dropped = 0;
	struct rc_err e;

	CHECK(ss);
	CHECK(pthread_barrier_init(&go, NULL, NPUSHERS + 1) == 0);
	for (int k = 0; k < NPUSHERS; k++) {
		r[k] = (struct racer){ .go = &go, .id = k };
		r[k].so.on_event = register_on_event; /* as register sets it up */
		session_server_opts(ss, &r[k].so);
		CHECK(pthread_create(&t[k], NULL, race, &r[k]) == 0);
	}
	pthread_barrier_wait(&go);
	/* Drain while they push: the queue is shared by all five threads. */
	while (printed + dropped < (long)NPUSHERS * PER_PUSHER && rounds < 10000000) {
		char *errs, *text = drain(ss, OUT_TEXT, &errs);

		tally(text, errs, next, &printed, &dropped);
		free(text);
		free(errs);
		rounds++;
	}
	for (int k = 0; k < NPUSHERS; k++)
		pthread_join(t[k], NULL);
	{
		char *errs, *text = drain(ss, OUT_TEXT, &errs);

		tally(text, errs, next, &printed, &dropped);
		free(text);
		free(errs);
	}
	CHECK(printed + dropped == (long)NPUSHERS * PER_PUSHER);
	CHECK(printed > 0);
	CHECK(!session_pending(ss));
	pthread_barrier_destroy(&go);
	CHECK(session_free(ss, &e) == 0);
}

int main(void)
{
	struct rc_session *ss = session_new();
	struct pusher p = { .n = 4 };
	struct rc_err e;
	pthread_t t;
	char *text, *errs;

	CHECK(ss);
	CHECK(!session_pending(ss));
	/* As register sets it up: its printer, replaced by the session's queue. */
	p.so.on_event = register_on_event;
	session_server_opts(ss, &p.so);
	CHECK(p.so.on_event && p.so.arg == ss);

	pthread_create(&t, NULL, push, &p);
	pthread_join(t, NULL);
	CHECK(session_pending(ss));
	text = drain(ss, OUT_TEXT, &errs);
	CHECK(!strcmp(text, "10.0.0.0:4000: connected\n"
			    "10.0.0.1:4001: disconnected\n"
			    "10.0.0.2:4002: connected\n"
			    "10.0.0.3:4003: disconnected\n"
			    "10.0.0.9:1: rejected: wrong token\n"));
	CHECK(!*errs);
	CHECK(!session_pending(ss));
	free(text);
	free(errs);

	/* JSON: one compact document a line. */
	p.n = 1;
	pthread_create(&t, NULL, push, &p);
	pthread_join(t, NULL);
	text = drain(ss, OUT_JSON, &errs);
	CHECK(!strcmp(text,
		      "{\"schema_version\":2,\"event\":\"connected\",\"peer\":\"10.0.0.0:4000\"}\n"
		      "{\"schema_version\":2,\"event\":\"rejected\",\"peer\":\"10.0.0.9:1\","
		      "\"reason\":\"wrong token\"}\n"));
	free(text);
	free(errs);

	/* More than the queue holds: the rest is counted. */
	p.n = 99;
	pthread_create(&t, NULL, push, &p);
	pthread_join(t, NULL);
	text = drain(ss, OUT_TEXT, &errs);
	CHECK(strstr(text, "10.0.0.63:4063: disconnected\n"));
	CHECK(!strstr(text, "10.0.0.64:"));
	CHECK(!strcmp(errs, "rdmactl: 36 server events were dropped (too many at once)\n"));
	free(text);
	free(errs);

	CHECK(session_client_take(ss, "nobody|7471") == NULL);
	CHECK(!session_client_give_back(ss, (struct rc_client *)&p, true));
	CHECK(session_nserved(ss) == 0 && session_served(ss, 0) == NULL);
	CHECK(session_free(ss, &e) == 0);
	for (int i = 0; i < 20; i++)
		concurrent_pushers();
	return 0;
}
