// SPDX-License-Identifier: MIT
/*
 * The region server behind `register`. One thread: the listener's CM event
 * channel and the one completion channel every connection shares (with
 * one shared receive queue, srv_pool.c) are polled together.
 * Data moves one-sided, so the only work here is admitting connections
 * (token check) and answering LIST requests on the control channel; the
 * connections, their requests and their end are srv_conn.c's.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/ops.h>
#include <rdmactl/parse.h>
#include <rdmactl/server.h>
#include <rdmactl/dev_core.h>
#include <rdmactl/mem_core.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/server_core.h>

#include "server_int.h"

#define SRV_FLUSH_SLICE (8u << 20) /* bytes written back per step */

int rc_server_nregions(const struct rc_server *s)
{
	return s->nregions;
}
const struct rc_region *rc_server_region(const struct rc_server *s, int i)
{
	return &s->regions[i];
}
const struct rc_listener *rc_server_listener(const struct rc_server *s)
{
	return s->l;
}
const struct rc_gid_info *rc_server_gid(const struct rc_server *s)
{
	return &s->gid;
}
const char *rc_server_token(const struct rc_server *s)
{
	return s->token[0] ? s->token : NULL;
}
int rc_server_nconns(const struct rc_server *s)
{
	return s->nconns;
}

void rc_server_stats(const struct rc_server *s, struct rc_server_stats *out)
{
	const struct rc_server_stats *st = &s->st;

	*out = (struct rc_server_stats){
		.conns = __atomic_load_n(&st->conns, __ATOMIC_RELAXED),
		.accepted = __atomic_load_n(&st->accepted, __ATOMIC_RELAXED),
		.rejected = __atomic_load_n(&st->rejected, __ATOMIC_RELAXED),
		.dropped = __atomic_load_n(&st->dropped, __ATOMIC_RELAXED),
		.requests = __atomic_load_n(&st->requests, __ATOMIC_RELAXED),
		.imms = __atomic_load_n(&st->imms, __ATOMIC_RELAXED),
		.flush_failed = __atomic_load_n(&st->flush_failed, __ATOMIC_RELAXED),
		.written_bytes = __atomic_load_n(&st->written_bytes, __ATOMIC_RELAXED),
		.writes = __atomic_load_n(&st->writes, __ATOMIC_RELAXED),
	};
}

int rc_server_create(const struct rc_server_opts *o, struct rc_server **out, struct rc_err *err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
	struct rc_server *s;
	int rc;

	if (o->token && !rc_token_valid(o->token))
		return rc_err_set(err, EINVAL,
				  "a token is 1 to %d printable characters without spaces",
				  RC_TOKEN_MAX);
	if (o->admin_token && !rc_token_valid(o->admin_token))
		return rc_err_set(err, EINVAL,
				  "an admin token is 1 to %d printable characters without spaces",
				  RC_TOKEN_MAX);
	if (o->admin_token && o->token && !strcmp(o->admin_token, o->token))
		return rc_err_set(err, EINVAL,
				  "the admin token must differ from the token: it grants more");
	s = calloc(1, sizeof(*s));
	if (!s)
		return rc_err_set(err, ENOMEM, "out of memory");
	s->o = *o;
	if (o->flush_every_ms > 0)
		s->flush.at = rc_now() + o->flush_every_ms / 1000.0;
	s->max_conns = o->max_conns > 0 && o->max_conns <= SRV_MAX_CONNS ? o->max_conns : 64;
	if (o->token)
		strcpy(s->token, o->token);
	if (o->admin_token)
		strcpy(s->admin, o->admin_token);
	rc = rc_listen(o->addr, o->port, o->dev_name, &s->l, err);
	if (rc) {
		free(s);
		return rc;
	}
	rc = -ENOENT;
	if (o->gid_index < 0 && !getaddrinfo(o->addr, NULL, &hints, &ai)) {
		rc = rc_gid_find_addr(s->l->verbs, s->l->port_num, ai->ai_addr, &s->gid);
		freeaddrinfo(ai);
	}
	if (rc)
		rc = rc_gid_pick(s->l->verbs, s->l->port_num, o->gid_index, &s->gid, err);
	if (!rc)
		rc = srv_pool_create(s, err);
	if (rc) {
		srv_pool_destroy(s);
		rc_listener_close(s->l);
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int rc_server_add_region(struct rc_server *s, const char *name, enum rc_mem_kind kind, size_t len,
			 const char *path, enum rc_access access, struct rc_err *err)
{
	struct rc_mem_spec spec = { .kind = kind, .len = len, .path = path };

	return rc_server_add_region_spec(s, name, &spec, access, err);
}

int rc_server_add_region_spec(struct rc_server *s, const char *name, const struct rc_mem_spec *spec,
			      enum rc_access access, struct rc_err *err)
{
	enum rc_mem_kind kind = spec->kind;
	const char *path = spec->path;
	size_t len = spec->len;
	struct rc_region *r;
	int rc;

	if (!rc_region_name_valid(name))
		return rc_err_set(err, EINVAL,
				  "invalid region name '%s': 1 to %d of A-Z a-z 0-9 _ . -", name,
				  RC_NAME_MAX - 1);
	for (int i = 0; i < s->nregions; i++)
		if (!strcmp(s->regions[i].d.name, name))
			return rc_err_set(err, EEXIST, "a region named '%s' is already served",
					  name);
	if (s->nregions >= RC_MAX_REGIONS)
		return rc_err_set(err, ENOSPC, "at most %d regions per server", RC_MAX_REGIONS);
	r = &s->regions[s->nregions];
	memset(r, 0, sizeof(*r));
	rc = rc_mem_alloc_spec(&r->mem, spec, access != RC_ACCESS_RO, err);
	if (rc)
		return rc;
	/* GPU memory: dma-buf, peer memory, then a bounce buffer (mem.c). */
	rc = rc_mem_register(&r->mem, s->l->pd, rc_access_ibv(access), &r->mr,
			     kind == RC_MEM_CUDA ? err : NULL);
	if (rc && kind == RC_MEM_CUDA) {
		rc_mem_free(&r->mem);
		return rc;
	}
	if (rc) {
		int e = -rc;

		rc_mem_free(&r->mem);
		if (e == ENOMEM || e == EPERM)
			return rc_err_set(err, e,
					  "cannot register %zu bytes on %s: %s (is the memlock limit, "
					  "ulimit -l, large enough?)",
					  len, s->l->dev_name, strerror(e));
		return rc_err_set(err, e, "cannot register %zu bytes on %s: %s", len,
				  s->l->dev_name, strerror(e));
	}
	snprintf(r->d.name, sizeof(r->d.name), "%s", name);
	r->d.addr = r->mem.mr_addr;
	r->d.length = r->mem.len;
	r->d.rkey = r->mr->rkey;
	r->d.access = access;
	if (path)
		snprintf(r->path, sizeof(r->path), "%s", path);
	s->nregions++;
	return 0;
}

/*
 * --flush-every: each pass writes every writable file-backed region back to
 * its file (pwrite, then fsync at the region's end), in slices of
 * SRV_FLUSH_SLICE per step, so that a large region does not hold up the
 * keepalive and the LIST answers for the whole write. A failure is reported
 * and the pass goes on with the next region; the next pass tries again.
 * Returns whether a pass is still under way (the step then does not wait).
 */
static bool flush_step(struct rc_server *s)
{
	if (s->o.flush_every_ms <= 0)
		return false;
	if (!s->flush.on) {
		if (rc_now() < s->flush.at)
			return false;
		s->flush.on = true;
		s->flush.reg = 0;
		s->flush.off = 0;
	}
	while (s->flush.reg < s->nregions) {
		struct rc_region *r = &s->regions[s->flush.reg];
		size_t left = r->mem.len - s->flush.off,
		       n = left < SRV_FLUSH_SLICE ? left : SRV_FLUSH_SLICE;
		struct rc_err e = { 0 };

		if (r->mem.kind != RC_MEM_FILE || !r->mem.writable || r->shared || !left) {
			s->flush.reg++;
			s->flush.off = 0;
			continue;
		}
		if (rc_mem_sync_range(&r->mem, s->flush.off, n, &e)) {
			struct rc_server_event ev = { .kind = RC_EV_FLUSH_FAILED,
						      .region = r->d.name,
						      .reason = e.msg };

			SRV_COUNT(s, flush_failed, 1);
			if (s->o.on_event)
				s->o.on_event(s->o.arg, &ev);
			n = left; /* on to the next region */
		}
		s->flush.off += n;
		if (s->flush.off == r->mem.len) {
			s->flush.reg++;
			s->flush.off = 0;
		}
		return true;
	}
	s->flush.on = false;
	s->flush.at = rc_now() + s->o.flush_every_ms / 1000.0;
	return false;
}

int rc_server_step(struct rc_server *s, int timeout_ms, struct rc_err *err)
{
	int r, mfd = srv_mig_fd(s->mig);
	struct pollfd pfd[3] = {
		{ .fd = s->sh->cch->fd, .events = POLLIN },
		{ .fd = s->l->ech->fd, .events = POLLIN },
		{ .fd = mfd, .events = POLLIN },
	};

	if (flush_step(s))
		timeout_ms = 0;
	srv_keepalive(s);
	/* Completions a bounded pass left: the channel will not tell again. */
	if (srv_poll_cq(s))
		timeout_ms = 0;
	r = poll(pfd, mfd >= 0 ? 3 : 2, timeout_ms);
	if (r < 0)
		return errno == EINTR ? 0
				      : rc_err_set(err, errno, "poll failed: %s", strerror(errno));
	/* Completions first: a connection may be dropped by a CM event below. */
	srv_poll_cq(s);
	if (mfd >= 0 && (pfd[2].revents & POLLIN)) {
		struct srv_mig_host mh = srv_mig_host_of(s);

		srv_mig_poll(s->mig, &mh);
	}
	return srv_handle_cm(s, err);
}

int rc_server_run(struct rc_server *s, int stop_fd, struct rc_err *err)
{
	for (;;) {
		struct pollfd p = { .fd = stop_fd, .events = POLLIN };
		int rc;

		if (poll(&p, 1, 0) > 0)
			return 0;
		rc = rc_server_step(s, 200, err);
		if (rc)
			return rc;
	}
}

int rc_server_destroy(struct rc_server *s, struct rc_err *err)
{
	struct rc_err other = { 0 };
	int rc = 0, synced = 0, r;

	if (!s)
		return 0;
	srv_mig_free(s->mig); /* its connection shares the listener's PD */
	s->mig = NULL;
	while (s->nconns)
		srv_drop_conn(s, s->conns[s->nconns - 1], false, false, NULL);
	srv_pool_destroy(s);
	/* A region whose content did not reach its file is data lost: that
	 * error is the one returned, whatever else failed before or after. */
	for (int i = 0; i < s->nregions; i++) {
		struct rc_region *reg = &s->regions[i];
		struct rc_err e = { 0 };

		if (reg->mr && (r = ibv_dereg_mr(reg->mr)) && !rc) /* its error, not errno */
			rc = rc_err_set(&other, r, "cannot deregister region '%s': %s", reg->d.name,
					strerror(abs(r)));
		if (reg->shared) /* another server's memory: it writes back and frees */
			continue;
		r = rc_mem_sync(&reg->mem, &e);
		if (r && !synced)
			synced = rc_err_set(err, -r, "region '%s': %s", reg->d.name, e.msg);
		r = rc_mem_free(&reg->mem);
		if (r && !rc)
			rc = rc_err_set(&other, -r, "cannot release region '%s': %s", reg->d.name,
					strerror(-r));
	}
	r = rc_listener_close(s->l);
	if (r && !rc)
		rc = rc_err_set(&other, -r, "cannot close the listener: %s", strerror(-r));
	free(s);
	if (synced)
		return synced;
	if (rc && err)
		*err = other;
	return rc;
}
