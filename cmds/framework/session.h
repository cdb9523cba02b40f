/* SPDX-License-Identifier: MIT */
/*
 * The interactive shell's state, kept from one command to the next: the
 * servers that `register` started, each served by a thread of its own, and
 * the client connections that write, read and atomic reuse. The shell
 * (cli/) creates it and sets ctx->session; the commands reach it there.
 *
 * Threads: a server belongs to its thread from session_serve() until
 * session_stop() has joined it; only the event queue and the thread's exit
 * status are shared, under the session's lock. Everything else is touched
 * by the shell's thread alone.
 */
#ifndef RDMACTL_SESSION_H
#define RDMACTL_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include <rdmactl/client.h>
#include <rdmactl/server.h>

#include "cmd.h"

/* What `regions` shows of a server: taken before its thread starts. */
struct session_served {
	char addr[RC_HOST_MAX];
	uint16_t port;
	char device[64];
	bool token;
	struct rc_region_desc regions[RC_MAX_REGIONS];
	enum rc_mem_kind mem[RC_MAX_REGIONS];
	int nregions;
};

struct rc_session *session_new(void);
/* Stop every server and close every kept connection. Goes on after a
 * failure and returns the first error (message in err). */
int session_free(struct rc_session *ss, struct rc_err *err);

/* Point a server's events at the session's queue (before rc_server_create).
 * The so->on_event it replaces prints them at session_drain, with the
 * drain's context as its argument. */
void session_server_opts(struct rc_session *ss, struct rc_server_opts *so);
/* Serve s in a thread of its own. On success the session owns s. */
int session_serve(struct rc_session *ss, struct rc_server *s, struct rc_err *err);
int session_nserved(const struct rc_session *ss);
const struct session_served *session_served(const struct rc_session *ss, int i);
/* Stop server i: wake its thread, join it (within one server step), destroy
 * the server. The servers after i move down one. */
int session_stop(struct rc_session *ss, int i, struct rc_err *err);

/* Events queued by the servers, and whether one is waiting. drain prints
 * them through ctx->out, and stops (and reports) a server whose thread
 * ended on an error. Call both from the shell's thread. */
bool session_pending(struct rc_session *ss);
void session_drain(struct rc_session *ss, struct ctx *ctx);

/* Kept client connections, by a key naming everything the connection was
 * opened with. take: an alive connection kept under key, now lent to the
 * caller, or NULL. lend: record a new connection as lent. give_back: keep
 * a lent connection for later when ok, close it otherwise; false when cl is
 * not the session's (the caller closes it). */
struct rc_client *session_client_take(struct rc_session *ss, const char *key);
void session_client_lend(struct rc_session *ss, const char *key, const struct rc_target *t,
			 struct rc_client *cl);
bool session_client_give_back(struct rc_session *ss, struct rc_client *cl, bool ok);

/* Names the shell completes: COMP_REGION (regions served here) or
 * COMP_TARGET (HOST:PORT/REGION of every region served or seen). */
void session_names(const struct rc_session *ss, enum comp_kind kind,
		   void (*emit)(void *arg, const char *name), void *arg);

#endif
