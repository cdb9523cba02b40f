// SPDX-License-Identifier: MIT
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "session.h"

#define SERVED_MAX 16
#define CLIENTS_MAX 8
#define EVENTS_MAX 64
#define KEY_MAX 640

struct served {
	struct session_served info;
	struct rc_server *s;
	pthread_t thread;
	int stop_fd;
	/* Shared with the thread, under the session's lock. */
	bool exited;
	int rc;
	struct rc_err err;
	struct rc_session *ss;
};

struct kept {
	char key[KEY_MAX];
	struct rc_target t;
	struct rc_client *cl; /* NULL: free slot */
	bool lent;
	unsigned long used;
};

struct queued {
	enum rc_server_event_kind kind;
	char peer[RC_HOST_MAX + 8];
	char region[RC_NAME_MAX];
	bool has_peer, has_region;
	char reason[128];
	bool has_reason;
	uint32_t imm;
};

struct rc_session {
	pthread_mutex_t lock; /* the queue and every served's exit status */
	struct queued q[EVENTS_MAX];
	int qhead, qlen;
	unsigned dropped;
	bool some_exited;

	struct served *served[SERVED_MAX];
	int nserved;
	struct kept kept[CLIENTS_MAX];
	unsigned long tick;
	/* The printer of server events (register's), called by session_drain
	 * with the drain's context: the session queues, the command prints. */
	void (*print_event)(void *ctx, const struct rc_server_event *ev);
};

struct rc_session *session_new(void)
{
	struct rc_session *ss = calloc(1, sizeof(*ss));

	if (ss)
		pthread_mutex_init(&ss->lock, NULL);
	return ss;
}

int session_free(struct rc_session *ss, struct rc_err *err)
{
	int rc = 0, r;

	if (!ss)
		return 0;
	while (ss->nserved) {
		r = session_stop(ss, ss->nserved - 1, rc ? NULL : err);
		if (r && !rc)
			rc = r;
	}
	for (int i = 0; i < CLIENTS_MAX; i++) {
		r = rc_client_close(ss->kept[i].cl);
		if (r && !rc)
			rc = rc_err_set(err, -r, "cannot close a connection to %s: %s",
					ss->kept[i].t.host, strerror(-r));
	}
	pthread_mutex_destroy(&ss->lock);
	free(ss);
	return rc;
}

/* Called by a server's thread. */
static void queue_event(void *arg, const struct rc_server_event *ev)
{
	struct rc_session *ss = arg;
	struct queued *q;

	pthread_mutex_lock(&ss->lock);
	if (ss->qlen == EVENTS_MAX) {
		ss->dropped++;
		pthread_mutex_unlock(&ss->lock);
		return;
	}
	q = &ss->q[(ss->qhead + ss->qlen++) % EVENTS_MAX];
	memset(q, 0, sizeof(*q));
	q->kind = ev->kind;
	q->imm = ev->imm;
	snprintf(q->peer, sizeof(q->peer), "%s", ev->peer ? ev->peer : "");
	snprintf(q->region, sizeof(q->region), "%s", ev->region ? ev->region : "");
	q->has_peer = ev->peer != NULL;
	q->has_region = ev->region != NULL;
	q->has_reason = ev->reason != NULL;
	if (ev->reason)
		snprintf(q->reason, sizeof(q->reason), "%s", ev->reason);
	pthread_mutex_unlock(&ss->lock);
}

void session_server_opts(struct rc_session *ss, struct rc_server_opts *so)
{
	ss->print_event = so->on_event;
	so->on_event = queue_event;
	so->arg = ss;
}

static void *serve_thread(void *arg)
{
	struct served *sv = arg;
	struct rc_err e = { 0 };
	int rc = rc_server_run(sv->s, sv->stop_fd, &e);

	pthread_mutex_lock(&sv->ss->lock);
	sv->rc = rc;
	sv->err = e;
	sv->exited = true;
	if (rc)
		sv->ss->some_exited = true;
	pthread_mutex_unlock(&sv->ss->lock);
	return NULL;
}

static void snapshot(struct session_served *info, const struct rc_server *s)
{
	const struct rc_listener *l = rc_server_listener(s);

	snprintf(info->addr, sizeof(info->addr), "%s", rc_listener_addr(l));
	snprintf(info->device, sizeof(info->device), "%s", rc_listener_device(l));
	info->port = rc_listener_port(l);
	info->token = rc_server_token(s) != NULL;
	info->nregions = rc_server_nregions(s);
	for (int i = 0; i < info->nregions; i++) {
		info->regions[i] = rc_server_region(s, i)->d;
		info->mem[i] = rc_server_region(s, i)->mem.kind;
	}
}

int session_serve(struct rc_session *ss, struct rc_server *s, struct rc_err *err)
{
	struct served *sv;
	sigset_t all, old;
	int rc;

	if (ss->nserved == SERVED_MAX)
		return rc_err_set(err, ENOSPC, "at most %d servers in one shell: 'unregister' one",
				  SERVED_MAX);
	sv = calloc(1, sizeof(*sv));
	if (!sv)
		return rc_err_set(err, ENOMEM, "out of memory");
	sv->ss = ss;
	sv->s = s;
	snapshot(&sv->info, s);
	sv->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (sv->stop_fd < 0) {
		rc = rc_err_set(err, errno, "eventfd: %s", strerror(errno));
		free(sv);
		return rc;
	}
	/* Signals are the shell's: the thread starts with all of them blocked. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&sv->thread, NULL, serve_thread, sv);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		close(sv->stop_fd);
		free(sv);
		return rc_err_set(err, rc, "cannot start a server thread: %s", strerror(rc));
	}
	ss->served[ss->nserved++] = sv;
	return 0;
}

int session_nserved(const struct rc_session *ss)
{
	return ss->nserved;
}

const struct session_served *session_served(const struct rc_session *ss, int i)
{
	return i >= 0 && i < ss->nserved ? &ss->served[i]->info : NULL;
}

int session_stop(struct rc_session *ss, int i, struct rc_err *err)
{
	struct served *sv = ss->served[i];
	struct rc_err d = { 0 };
	char first[sizeof(d.msg)];
	uint64_t one = 1;
	int rc = 0, r;

	/* rc_server_run looks at stop_fd between steps of at most 200 ms. */
	if (write(sv->stop_fd, &one, sizeof(one)) != sizeof(one))
		rc = rc_err_set(err, errno, "cannot wake the server thread: %s", strerror(errno));
	pthread_join(sv->thread, NULL);
	if (sv->rc && !rc)
		rc = rc_err_set(err, sv->err.code ? sv->err.code : EIO, "%s", sv->err.msg);
	/* A failed write-back is data lost: said even after a failed serve. */
	r = rc_server_destroy(sv->s, &d);
	if (r && !rc) {
		rc = rc_err_set(err, -r, "%s", d.msg);
	} else if (r && err) {
		memcpy(first, err->msg, sizeof(first));
		rc_err_set(err, err->code, "%s; then %s", first, d.msg);
	}
	close(sv->stop_fd);
	free(sv);
	memmove(&ss->served[i], &ss->served[i + 1],
		sizeof(ss->served[0]) * (size_t)(ss->nserved - i - 1));
	ss->nserved--;
	return rc;
}

bool session_pending(struct rc_session *ss)
{
	bool any;

	pthread_mutex_lock(&ss->lock);
	any = ss->qlen || ss->dropped || ss->some_exited;
	pthread_mutex_unlock(&ss->lock);
	return any;
}

static bool pop(struct rc_session *ss, struct queued *out, unsigned *dropped)
{
	bool got;

	pthread_mutex_lock(&ss->lock);
	got = ss->qlen > 0;
	if (got) {
		*out = ss->q[ss->qhead];
		ss->qhead = (ss->qhead + 1) % EVENTS_MAX;
		ss->qlen--;
	}
	*dropped = ss->dropped;
	ss->dropped = 0;
	pthread_mutex_unlock(&ss->lock);
	return got;
}

/* A server whose thread ended on its own: take it down and say why. */
static void reap(struct rc_session *ss, struct ctx *ctx)
{
	pthread_mutex_lock(&ss->lock);
	ss->some_exited = false;
	pthread_mutex_unlock(&ss->lock);
	for (int i = ss->nserved - 1; i >= 0; i--) {
		struct served *sv = ss->served[i];
		char where[RC_HOST_MAX + 8];
		struct rc_err e = { 0 };
		bool exited;

		pthread_mutex_lock(&ss->lock);
		exited = sv->exited;
		pthread_mutex_unlock(&ss->lock);
		if (!exited)
			continue;
		snprintf(where, sizeof(where), "%s:%u", sv->info.addr, sv->info.port);
		session_stop(ss, i, &e);
		out_log(&ctx->out, "the server on %s stopped: %s", where, e.msg);
	}
}

void session_drain(struct rc_session *ss, struct ctx *ctx)
{
	bool fresh = false;
	struct queued q;
	unsigned dropped;

	for (;;) {
		bool got = pop(ss, &q, &dropped);

		/* Between commands the last document is still there: each event
		 * is a document of its own. */
		if (got && !fresh) {
			out_reset(&ctx->out);
			fresh = true;
		}
		if (dropped)
			out_log(&ctx->out, "%u server events were dropped (too many at once)",
				dropped);
		if (!got)
			break;
		if (ss->print_event)
			ss->print_event(ctx, &(struct rc_server_event){
						     .kind = q.kind,
						     .peer = q.has_peer ? q.peer : NULL,
						     .region = q.has_region ? q.region : NULL,
						     .reason = q.has_reason ? q.reason : NULL,
						     .imm = q.imm });
	}
	reap(ss, ctx);
}

struct rc_client *session_client_take(struct rc_session *ss, const char *key)
{
	for (int i = 0; i < CLIENTS_MAX; i++) {
		struct kept *k = &ss->kept[i];

		if (!k->cl || k->lent || strcmp(k->key, key))
			continue;
		if (!rc_client_alive(k->cl)) {
			rc_client_close(k->cl);
			k->cl = NULL;
			return NULL;
		}
		k->lent = true;
		k->used = ++ss->tick;
		return k->cl;
	}
	return NULL;
}

void session_client_lend(struct rc_session *ss, const char *key, const struct rc_target *t,
			 struct rc_client *cl)
{
	struct kept *slot = NULL;

	/* A free slot, or else the one idle the longest. */
	for (int i = 0; i < CLIENTS_MAX; i++) {
		struct kept *k = &ss->kept[i];

		if (!k->cl) {
			slot = k;
			break;
		}
		if (!k->lent && (!slot || k->used < slot->used))
			slot = k;
	}
	if (!slot)
		return; /* all lent: this one is not kept */
	rc_client_close(slot->cl);
	snprintf(slot->key, sizeof(slot->key), "%s", key);
	slot->t = *t;
	slot->cl = cl;
	slot->lent = true;
	slot->used = ++ss->tick;
}

bool session_client_give_back(struct rc_session *ss, struct rc_client *cl, bool ok)
{
	for (int i = 0; i < CLIENTS_MAX; i++) {
		struct kept *k = &ss->kept[i];

		if (k->cl != cl)
			continue;
		k->lent = false;
		if (!ok) {
			rc_client_close(cl);
			k->cl = NULL;
		}
		return true;
	}
	return false;
}

static void emit_target(const char *host, const char *port, const char *region,
			void (*emit)(void *arg, const char *name), void *arg)
{
	char buf[RC_HOST_MAX + RC_NAME_MAX + 16];
	bool v6 = strchr(host, ':') != NULL;

	snprintf(buf, sizeof(buf), "%s%s%s:%s/%s", v6 ? "[" : "", host, v6 ? "]" : "", port, region);
	emit(arg, buf);
}

void session_names(const struct rc_session *ss, enum comp_kind kind,
		   void (*emit)(void *arg, const char *name), void *arg)
{
	char port[8];

	for (int i = 0; i < ss->nserved; i++) {
		const struct session_served *info = &ss->served[i]->info;

		snprintf(port, sizeof(port), "%u", info->port);
		for (int j = 0; j < info->nregions; j++) {
			if (kind == COMP_REGION)
				emit(arg, info->regions[j].name);
			else
				emit_target(info->addr, port, info->regions[j].name, emit, arg);
		}
	}
	if (kind != COMP_TARGET)
		return;
	for (int i = 0; i < CLIENTS_MAX; i++) {
		const struct kept *k = &ss->kept[i];
		int n = 0;
		const struct rc_region_desc *all = k->cl ? rc_client_regions(k->cl, &n) : NULL;

		for (int j = 0; j < n; j++)
			emit_target(k->t.host, k->t.port, all[j].name, emit, arg);
	}
}
