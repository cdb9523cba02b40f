// SPDX-License-Identifier: MIT
/* A region server over libfabric (rdmactl/fabric.h): regions on one RDM
 * endpoint, and the control plane's server side. Nothing is given to a
 * peer, not even an address vector entry, before its HELLO proved the
 * token; every message's length is checked before a field is read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <rdmactl/config_core.h>
#include <rdmactl/parse.h>

#include "ofi_dl.h" /* before libfabric's headers */

#include <rdma/fabric.h>

#include "fab_int.h"

#define NRECV 16 /* receive slots: HELLOs and BYEs in flight */
#define NSEND 8  /* send slots: WELCOMEs in flight */
#define SLOT 1024

struct fclient {
	bool used;
	unsigned char cn[RC_AUTH_NONCE];
	unsigned char ln[RC_AUTH_NONCE]; /* the listener's nonce it was admitted under */
	uint64_t peer;                   /* its address vector entry */
	uint64_t seq;                    /* admitted when: the oldest goes first */
	char hex[RC_FABRIC_HEX];
};

struct fregion_srv {
	struct rc_fregion d;
	struct rc_ofi_mr mr;
	void *mem;
};

struct rc_fsrv {
	struct rc_ofi o;
	struct rc_fabric_info info;
	char token[RC_TOKEN_MAX + 1];
	bool has_token;
	unsigned char ln[RC_AUTH_NONCE]; /* the listener's nonce */
	struct fregion_srv reg[RC_FSRV_REGIONS];
	int nreg;
	unsigned char *ctl; /* NRECV + NSEND slots */
	struct rc_ofi_mr ctl_mr;
	bool sbusy[NSEND];
	struct fclient *cl;
	int max_clients;
	uint64_t seq;
	unsigned char (*seen)[RC_AUTH_NONCE]; /* the replay cache */
	int nseen;
	int replay_max; /* RC_FSRV_REPLAY_MAX, or the test hook's fewer */
	int idle;       /* passes without a completion */
	struct fab_rej rej;
};

static void set_info(struct rc_fsrv *s)
{
	unsigned char tc[RC_AUTH_MAC];

	fab_info_of(&s->o, &s->info);
	fab_hex(s->ln, RC_AUTH_NONCE, s->info.nonce);
	s->info.token_check[0] = '\0';
	if (s->has_token) {
		fab_token_check(s->token, s->ln, s->o.name, s->o.namelen, tc);
		fab_hex(tc, RC_AUTH_MAC, s->info.token_check);
	}
}

int rc_fsrv_create(const struct rc_fsrv_opts *o, struct rc_fsrv **out, struct rc_err *err)
{
	struct rc_ofi_opts oo = { .prov = o->prov,
				  .node = o->addr,
				  .service = o->port,
				  .want_atomic = true,
				  .wait_fd = true };
	struct rc_fsrv *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return rc_err_set(err, ENOMEM, "out of memory");
	s->max_clients = o->max_clients > 0 ? o->max_clients : 64;
	s->cl = calloc((size_t)s->max_clients, sizeof(*s->cl));
	s->seen = calloc(RC_FSRV_REPLAY_MAX, RC_AUTH_NONCE);
	s->replay_max = rc_config()->test_ofi_replay_max > 0 &&
					rc_config()->test_ofi_replay_max < RC_FSRV_REPLAY_MAX
				? (int)rc_config()->test_ofi_replay_max
				: RC_FSRV_REPLAY_MAX;
	s->ctl = aligned_alloc(4096, (NRECV + NSEND) * SLOT);
	if (!s->cl || !s->seen || !s->ctl) {
		rc_fsrv_close(s);
		return rc_err_set(err, ENOMEM, "out of memory");
	}
	if (o->token && o->token[0]) {
		snprintf(s->token, sizeof(s->token), "%s", o->token);
		s->has_token = true;
	}
	if ((rc = rc_auth_nonce(s->ln))) {
		rc_fsrv_close(s);
		return rc_err_set(err, -rc, "cannot make the listener's nonce");
	}
	if ((rc = rc_ofi_open(&s->o, &oo, err)) ||
	    (rc = rc_ofi_reg(&s->o, s->ctl, (NRECV + NSEND) * SLOT, RC_OFI_LOCAL, &s->ctl_mr, err))) {
		rc_fsrv_close(s);
		return rc;
	}
	set_info(s);
	*out = s;
	return 0;
}

int rc_fsrv_add(struct rc_fsrv *s, const char *name, uint64_t len, int access, struct rc_err *err)
{
	struct fregion_srv *r = &s->reg[s->nreg];
	int acc = (access & 1 ? RC_OFI_REMOTE_READ : 0) | (access & 2 ? RC_OFI_REMOTE_WRITE : 0) |
		  (access & 4 ? RC_OFI_REMOTE_ATOMIC : 0);
	int rc;

	if (s->nreg >= RC_FSRV_REGIONS)
		return rc_err_set(err, E2BIG, "a server over libfabric serves %d regions at most",
				  RC_FSRV_REGIONS);
	if (!rc_region_name_valid(name) || strlen(name) >= sizeof(r->d.name))
		return rc_err_set(err, EINVAL, "invalid region name '%s'", name);
	r->mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->mem == MAP_FAILED) {
		r->mem = NULL;
		return rc_err_set(err, ENOMEM, "cannot allocate %llu bytes for region '%s'",
				  (unsigned long long)len, name);
	}
	if ((rc = rc_ofi_reg(&s->o, r->mem, len, acc, &r->mr, err))) {
		munmap(r->mem, len);
		r->mem = NULL;
		return rc;
	}
	snprintf(r->d.name, sizeof(r->d.name), "%s", name);
	r->d.length = len;
	r->d.key = r->mr.key;
	r->d.base = r->mr.base;
	r->d.access = access & 7;
	s->nreg++;
	return 0;
}

int rc_fsrv_nregions(const struct rc_fsrv *s)
{
	return s->nreg;
}

const struct rc_fregion *rc_fsrv_region(const struct rc_fsrv *s, int i)
{
	return i >= 0 && i < s->nreg ? &s->reg[i].d : NULL;
}

const struct rc_fabric_info *rc_fsrv_info(const struct rc_fsrv *s)
{
	return &s->info;
}

static int post_recv(struct rc_fsrv *s, int i, struct rc_err *err)
{
	return rc_ofi_recv(&s->o, s->ctl + (size_t)i * SLOT, SLOT, &s->ctl_mr,
			   (void *)(uintptr_t)(i + 1), err);
}

int rc_fsrv_start(struct rc_fsrv *s, struct rc_err *err)
{
	int rc;

	for (int i = 0; i < NRECV; i++)
		if ((rc = post_recv(s, i, err)))
			return rc;
	return 0;
}

static void event(rc_fsrv_cb cb, void *arg, const char *kind, const char *peer, const char *reason)
{
	struct rc_fsrv_event ev = { .kind = kind, .peer = peer ? peer : "", .reason = reason };

	if (cb)
		cb(arg, &ev);
}

/* Any "N more rejected" of a second that is over told. */
static void rejected_flush(struct rc_fsrv *s, rc_fsrv_cb cb, void *arg)
{
	uint64_t n = fab_rej_flush(&s->rej, fab_now());
	char why[96];

	if (!n)
		return;
	snprintf(why, sizeof(why),
		 "%llu more rejected, not listed one by one (at most %d a second are)",
		 (unsigned long long)n, FAB_REJ_PER_S);
	event(cb, arg, "rejected", NULL, why);
}

/* A rejection told, or counted once FAB_REJ_PER_S were told this second. */
static void rejected(struct rc_fsrv *s, rc_fsrv_cb cb, void *arg, const char *peer,
		     const char *reason)
{
	rejected_flush(s, cb, arg);
	if (fab_rej_list(&s->rej, fab_now()))
		event(cb, arg, "rejected", peer, reason);
}

static bool seen(const struct rc_fsrv *s, const unsigned char cn[RC_AUTH_NONCE])
{
	for (int i = 0; i < s->nseen; i++)
		if (!memcmp(s->seen[i], cn, RC_AUTH_NONCE))
			return true;
	return false;
}

/* A proven client nonce remembered; the cache full, the listener's nonce
 * rotates: every proof made under the old one is worthless from now on. */
static void remember(struct rc_fsrv *s, const unsigned char cn[RC_AUTH_NONCE], rc_fsrv_cb cb,
		     void *arg)
{
	memcpy(s->seen[s->nseen++], cn, RC_AUTH_NONCE);
	if (s->nseen < s->replay_max || rc_auth_nonce(s->ln))
		return;
	s->nseen = 0;
	set_info(s);
	event(cb, arg, "rotated", NULL, s->info.nonce);
}

static struct fclient *client_slot(struct rc_fsrv *s, rc_fsrv_cb cb, void *arg)
{
	struct fclient *old = &s->cl[0];

	for (int i = 0; i < s->max_clients; i++) {
		if (!s->cl[i].used)
			return &s->cl[i];
		if (s->cl[i].seq < old->seq)
			old = &s->cl[i];
	}
	rc_ofi_av_remove(&s->o, old->peer);
	event(cb, arg, "left", old->hex, "the oldest client, for room");
	old->used = false;
	return old;
}

static int send_slot(struct rc_fsrv *s)
{
	for (int i = 0; i < NSEND; i++)
		if (!s->sbusy[i])
			return i;
	return -1;
}

/* The WELCOME to a proven client: its nonce, the regions, the proof. */
static int welcome(struct rc_fsrv *s, struct fclient *c, struct rc_err *err)
{
	int i = send_slot(s);
	unsigned char *m;
	struct fab_head h = { .type = FAB_WELCOME, .count = (uint8_t)s->nreg };
	size_t len = FAB_HEAD + (size_t)s->nreg * FAB_REGION;
	int rc;

	if (i < 0)
		return rc_err_set(err, EBUSY, "no send slot free");
	m = s->ctl + (size_t)(NRECV + i) * SLOT;
	for (int r = 0; r < s->nreg; r++)
		fab_region_put(m + FAB_HEAD + (size_t)r * FAB_REGION, &s->reg[r].d);
	memcpy(h.nonce, c->cn, RC_AUTH_NONCE);
	if (s->has_token)
		fab_proof_welcome(s->token, s->ln, c->cn, m + FAB_HEAD, len - FAB_HEAD, h.proof);
	fab_head_put(m, &h);
	rc = rc_ofi_send(&s->o, c->peer, m, len, &s->ctl_mr, (void *)(uintptr_t)(100 + i), err);
	if (!rc)
		s->sbusy[i] = true;
	return rc;
}

/* A HELLO of len bytes: checked whole before anything is allocated. */
static void on_hello(struct rc_fsrv *s, const unsigned char *m, size_t len,
		     const struct fab_head *h, rc_fsrv_cb cb, void *arg)
{
	unsigned char want[RC_AUTH_MAC];
	char hex[RC_FABRIC_HEX];
	struct fclient *c;
	struct rc_err e;

	if (h->count != FAB_ROLE_DATA || !h->addrlen || h->addrlen > RC_OFI_NAME_MAX ||
	    len != FAB_HEAD + (size_t)h->addrlen)
		return rejected(s, cb, arg, NULL, "a malformed HELLO");
	fab_hex(m + FAB_HEAD, h->addrlen, hex);
	if (s->has_token) {
		fab_proof_hello(s->token, s->ln, h->nonce, h->count, m + FAB_HEAD, h->addrlen, want);
		if (!fab_proof_eq(want, h->proof))
			return rejected(s, cb, arg, hex,
					"HELLO's proof is not the token's over this listener's nonce");
	}
	if (seen(s, h->nonce))
		return rejected(s, cb, arg, hex, "a replayed HELLO (its nonce was seen)");
	c = client_slot(s, cb, arg);
	if (rc_ofi_av_insert(&s->o, m + FAB_HEAD, h->addrlen, &c->peer, &e))
		return rejected(s, cb, arg, hex, e.msg);
	memcpy(c->cn, h->nonce, RC_AUTH_NONCE);
	memcpy(c->ln, s->ln, RC_AUTH_NONCE);
	snprintf(c->hex, sizeof(c->hex), "%s", hex);
	c->used = true;
	c->seq = ++s->seq;
	/* answered under the nonce it proved over; remembered after, which may
	 * rotate the nonce */
	if (welcome(s, c, &e)) {
		rc_ofi_av_remove(&s->o, c->peer);
		c->used = false;
		rejected(s, cb, arg, hex, e.msg);
	} else {
		event(cb, arg, "admitted", hex, NULL);
	}
	remember(s, h->nonce, cb, arg);
}

/* A BYE: the client's entry goes, if the BYE is its own. */
static void on_bye(struct rc_fsrv *s, size_t len, const struct fab_head *h, rc_fsrv_cb cb, void *arg)
{
	unsigned char want[RC_AUTH_MAC];

	if (len != FAB_HEAD)
		return rejected(s, cb, arg, NULL, "a malformed BYE");
	for (int i = 0; i < s->max_clients; i++) {
		struct fclient *c = &s->cl[i];

		if (!c->used || memcmp(c->cn, h->nonce, RC_AUTH_NONCE))
			continue;
		/* proven over the nonce the client was admitted under */
		fab_proof_bye(s->token, c->ln, h->nonce, want);
		if (s->has_token && !fab_proof_eq(want, h->proof))
			return rejected(s, cb, arg, c->hex, "BYE's proof is not the token's");
		rc_ofi_av_remove(&s->o, c->peer);
		c->used = false;
		event(cb, arg, "left", c->hex, NULL);
		return;
	}
}

static void on_message(struct rc_fsrv *s, int slot, size_t len, rc_fsrv_cb cb, void *arg)
{
	const unsigned char *m = s->ctl + (size_t)slot * SLOT;
	struct fab_head h;

	if (len > SLOT || fab_head_get(m, len, &h))
		return rejected(s, cb, arg, NULL, "a message that is not rdmactl's");
	if (h.type == FAB_HELLO)
		on_hello(s, m, len, &h, cb, arg);
	else if (h.type == FAB_BYE)
		on_bye(s, len, &h, cb, arg);
	else
		rejected(s, cb, arg, NULL, "a message of an unknown type");
}

/* One completion: a message (the slot reposted), or a send's end. */
static int on_wc(struct rc_fsrv *s, const struct rc_ofi_wc *w, rc_fsrv_cb cb, void *arg,
		 struct rc_err *err)
{
	uintptr_t id = (uintptr_t)w->ctx;

	if (id >= 100 && id < 100 + NSEND) {
		s->sbusy[id - 100] = false;
		return 0;
	}
	/* Not a receive slot's: a client's write with immediate data. A message
	 * that carries data too (fi_senddata) took a slot, and is read and the
	 * slot posted again below like any other. */
	if (id < 1 || id > NRECV) {
		struct rc_fsrv_event ev = { .kind = "imm", .peer = "", .imm = (uint32_t)w->data };

		if (!w->err && (w->flags & FI_REMOTE_CQ_DATA) && cb)
			cb(arg, &ev);
		return 0;
	}
	if (!w->err)
		on_message(s, (int)id - 1, w->len, cb, arg);
	else
		rejected(s, cb, arg, NULL, w->why[0] ? w->why : "a receive failed");
	return post_recv(s, (int)id - 1, err);
}

int rc_fsrv_step(struct rc_fsrv *s, int timeout_ms, rc_fsrv_cb cb, void *arg, struct rc_err *err)
{
	struct rc_ofi_wc wc[8];
	struct timespec t0, t;
	int n, rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		rejected_flush(s, cb, arg);
		if ((n = rc_ofi_poll(&s->o, wc, 8, 0, err)) < 0)
			return n;
		for (int i = 0; i < n; i++)
			if ((rc = on_wc(s, &wc[i], cb, arg, err)))
				return rc;
		if (n) {
			s->idle = 0;
			return 0;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		long spent = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;

		if (spent >= timeout_ms)
			return 0;
		/* asleep on the queue's file descriptor where there is one */
		if (rc_ofi_wait(&s->o, (int)(timeout_ms - spent)) >= 0)
			continue;
		/* else busy a while after traffic (the provider's progress is ours) */
		struct timespec nap = { 0, ++s->idle < 20000 ? 10000 : 1000000 };

		nanosleep(&nap, NULL);
	}
}

void rc_fsrv_close(struct rc_fsrv *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nreg; i++) {
		rc_ofi_dereg(&s->reg[i].mr);
		munmap(s->reg[i].mem, s->reg[i].d.length);
	}
	rc_ofi_dereg(&s->ctl_mr);
	rc_ofi_close(&s->o);
	free(s->ctl);
	free(s->cl);
	free(s->seen);
	free(s);
}
