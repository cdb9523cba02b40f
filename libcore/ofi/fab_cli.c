// SPDX-License-Identifier: MIT
/* A client of a region server over libfabric (rdmactl/fabric.h): the
 * descriptor's token check, HELLO, the WELCOME's proof checked before any
 * of its regions is believed, then RMA and atomics on the region. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdmactl/config_core.h>

#include "fab_int.h"
#include <rdmactl/tp_core.h>

double fab_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The local address whose route reaches host (NULL: leave it to libfabric). */
static const char *route_to(const char *host, const char *port, char *buf, size_t len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *ai = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	const char *r = NULL;
	int fd;

	if (getaddrinfo(host, port, &hints, &ai) || !ai)
		return NULL;
	fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && !connect(fd, ai->ai_addr, ai->ai_addrlen) &&
	    !getsockname(fd, (struct sockaddr *)&ss, &sl))
		r = getnameinfo((struct sockaddr *)&ss, sl, buf, (socklen_t)len, NULL, 0,
				NI_NUMERICHOST)
			    ? NULL
			    : buf;
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return r;
}

/* The server's endpoint address: the descriptor's, else host:port as the
 * provider names it. */
static int server_addr(const struct rc_fcli_opts *o, unsigned char *name, size_t *len,
		       struct rc_err *err)
{
	int n;

	if (o->srv_address) {
		if ((n = fab_unhex(o->srv_address, name, RC_OFI_NAME_MAX)) < 0)
			return rc_err_set(err, EINVAL, "the descriptor's address is not hex");
		*len = (size_t)n;
		return 0;
	}
	if (rc_ofi_resolve(o->prov, o->host, o->port, name, len, err))
		return rc_err_opt(err, EHOSTUNREACH,
				  "libfabric's '%s' cannot address %s:%s (give the server's "
				  "descriptor: {descriptor} FILE)",
				  rc_ofi_prov_string(o->prov), o->host, o->port);
	return 0;
}

/* The descriptor's listener nonce, and its token check under our token:
 * a server that does not prove the token is not sent a proof. */
static int check_descriptor(struct rc_fcli *c, const struct rc_fcli_opts *o,
			    const unsigned char *addr, size_t alen, struct rc_err *err)
{
	unsigned char tc[RC_AUTH_MAC], want[RC_AUTH_MAC];

	if (o->srv_nonce && fab_unhex(o->srv_nonce, c->ln, RC_AUTH_NONCE) != RC_AUTH_NONCE)
		return rc_err_set(err, EINVAL, "the descriptor's nonce is not 16 bytes of hex");
	if (!c->token && o->srv_token_check && o->srv_token_check[0])
		return rc_err_opt(err, EKEYREJECTED,
				  "the server requires a token (its descriptor carries a "
				  "token_check) and we hold none: give {token_file} FILE or "
				  "$RDMACTL_TOKEN; nothing was sent");
	if (!c->token)
		return 0;
	if (!o->srv_nonce)
		return rc_err_opt(err, EINVAL,
				  "with a token, a server over libfabric is reached through its "
				  "descriptor ({descriptor} FILE: the region line register -j "
				  "printed), whose nonce the proof is made over");
	fab_token_check(c->token, c->ln, addr, alen, want);
	if (!o->srv_token_check || !o->srv_token_check[0] ||
	    fab_unhex(o->srv_token_check, tc, RC_AUTH_MAC) != RC_AUTH_MAC || !fab_proof_eq(tc, want))
		return rc_err_set(err, EKEYREJECTED,
				  "the server's descriptor does not prove our token (%s): a "
				  "wrong token, or a server without one; nothing was sent",
				  o->srv_token_check && o->srv_token_check[0]
					  ? "its token_check is another token's"
					  : "it carries no token_check");
	return 0;
}

/* Completions until the one of id came (the others of the control plane
 * taken as they come); a failed one fails. */
static int wait_id(struct rc_fcli *c, uintptr_t id, int timeout_ms, const char *what,
		   struct rc_err *err)
{
	double end = fab_now() + timeout_ms / 1e3;
	struct rc_ofi_wc w;
	int n;

	while (fab_now() < end) {
		if ((n = rc_ofi_poll(&c->o, &w, 1, 10, err)) < 0)
			return n;
		if (n && w.err)
			return rc_err_set(err, w.err, "%s failed (%s): %s", what, c->o.prov_name,
					  w.why[0] ? w.why : strerror(w.err));
		if (n && (uintptr_t)w.ctx == id)
			return 0;
	}
	return rc_err_set(err, ETIMEDOUT, "%s: nothing in %d ms", what, timeout_ms);
}

/* The HELLO: made, or (the test hook RDMACTL_TEST_OFI_HELLO, rc_config's
 * test_ofi_hello) saved to a file, replayed from one or spoilt. */
static int hello(struct rc_fcli *c, size_t *len, struct rc_err *err)
{
	const char *hook = rc_config()->test_ofi_hello ? rc_config()->test_ofi_hello : "";
	const char *save = !strncmp(hook, "save:", 5) ? hook + 5 : NULL;
	const char *replay = !strncmp(hook, "replay:", 7) ? hook + 7 : NULL;
	struct fab_head h = { .type = FAB_HELLO,
			      .count = FAB_ROLE_DATA,
			      .addrlen = (uint8_t)c->o.namelen };
	FILE *f;

	if (replay) {
		if (!(f = fopen(replay, "rb")))
			return rc_err_set(err, errno, "cannot read %s", replay);
		*len = fread(c->ctl, 1, 1024, f);
		fclose(f);
		return 0;
	}
	memcpy(h.nonce, c->cn, RC_AUTH_NONCE);
	if (c->token)
		fab_proof_hello(c->token, c->ln, c->cn, FAB_ROLE_DATA, c->o.name, c->o.namelen,
				h.proof);
	if (!strcmp(hook, "spoil"))
		h.proof[0] ^= 1;
	fab_head_put(c->ctl, &h);
	memcpy(c->ctl + FAB_HEAD, c->o.name, c->o.namelen);
	*len = FAB_HEAD + c->o.namelen;
	if (save && (f = fopen(save, "wb"))) {
		fwrite(c->ctl, 1, *len, f);
		fclose(f);
	}
	return 0;
}

/* The WELCOME of len bytes: our nonce, its proof, then its regions. */
static int welcome(struct rc_fcli *c, const char *region, size_t len, struct rc_err *err)
{
	const unsigned char *m = c->ctl + 1024;
	unsigned char want[RC_AUTH_MAC];
	struct fab_head h;

	if (fab_head_get(m, len, &h) || h.type != FAB_WELCOME || h.count > RC_FSRV_REGIONS ||
	    len != FAB_HEAD + (size_t)h.count * FAB_REGION || memcmp(h.nonce, c->cn, RC_AUTH_NONCE))
		return rc_err_set(err, EPROTO, "the server's answer is not a WELCOME to us");
	if (c->token) {
		fab_proof_welcome(c->token, c->ln, c->cn, m + FAB_HEAD, len - FAB_HEAD, want);
		if (!fab_proof_eq(want, h.proof))
			return rc_err_set(err, EKEYREJECTED,
					  "the server did not prove the token in its WELCOME");
	}
	for (int i = 0; i < h.count; i++) {
		struct rc_fregion r;

		if (fab_region_get(m + FAB_HEAD + (size_t)i * FAB_REGION, &r))
			return rc_err_set(err, EPROTO, "the server's WELCOME names a bad region");
		if ((!region || !region[0]) ? h.count == 1 : !strcmp(r.name, region)) {
			c->region = r;
			return 0;
		}
	}
	if (!region || !region[0])
		return rc_err_set(err, EINVAL, "the server serves %d regions: name one", h.count);
	return rc_err_set(err, ENOENT, "the server serves no region '%s'", region);
}

static int handshake(struct rc_fcli *c, const struct rc_fcli_opts *o, struct rc_err *err)
{
	struct rc_ofi_wc w;
	size_t len = 0;
	double end;
	int rc, n;

	if ((rc = rc_auth_nonce(c->cn)))
		return rc_err_set(err, -rc, "cannot make a nonce");
	if ((rc = hello(c, &len, err)) ||
	    (rc = rc_ofi_recv(&c->o, c->ctl + 1024, 1024, &c->ctl_mr, (void *)FAB_ID_RECV, err)) ||
	    (rc = rc_ofi_send(&c->o, c->peer, c->ctl, len, &c->ctl_mr, (void *)FAB_ID_SEND, err)))
		return rc;
	for (end = fab_now() + c->timeout_ms / 1e3; fab_now() < end;) {
		if ((n = rc_ofi_poll(&c->o, &w, 1, 10, err)) < 0)
			return n;
		if (n && w.err)
			return rc_err_set(err, w.err, "cannot reach the server at %s:%s (%s): %s",
					  o->host, o->port, c->o.prov_name,
					  w.why[0] ? w.why : strerror(w.err));
		if (n && (uintptr_t)w.ctx == FAB_ID_RECV)
			return welcome(c, o->region, w.len, err);
	}
	return rc_err_set(err, ETIMEDOUT,
			  "no WELCOME from %s:%s in %d ms (%s): a server that refused our HELLO "
			  "(a wrong token, a replay; its log says which) answers nothing",
			  o->host, o->port, c->timeout_ms, c->o.prov_name);
}

int rc_fcli_open(const struct rc_fcli_opts *o, struct rc_fcli **out, struct rc_err *err)
{
	char local[NI_MAXHOST];
	struct rc_ofi_opts oo = { .prov = o->prov, .want_atomic = true };
	struct rc_fcli *c = calloc(1, sizeof(*c));
	unsigned char addr[RC_OFI_NAME_MAX];
	size_t alen = 0;
	int rc;

	if (!c)
		return rc_err_set(err, ENOMEM, "out of memory");
	c->token = o->token && o->token[0] ? o->token : NULL;
	c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 10000;
	oo.timeout_ms = c->timeout_ms;
	oo.node = o->bind ? o->bind : route_to(o->host, o->port, local, sizeof(local));
	if ((rc = server_addr(o, addr, &alen, err)) ||
	    (rc = check_descriptor(c, o, addr, alen, err)) || (rc = rc_ofi_open(&c->o, &oo, err)) ||
	    (rc = rc_ofi_reg(&c->o, c->ctl, sizeof(c->ctl), RC_OFI_LOCAL, &c->ctl_mr, err)) ||
	    (rc = rc_ofi_av_insert(&c->o, addr, alen, &c->peer, err)) ||
	    (rc = handshake(c, o, err))) {
		rc_fcli_close(c);
		return rc;
	}
	c->admitted = true;
	fab_info_of(&c->o, &c->info);
	*out = c;
	return 0;
}

const struct rc_fregion *rc_fcli_region(const struct rc_fcli *c)
{
	return &c->region;
}

const struct rc_fabric_info *rc_fcli_info(const struct rc_fcli *c)
{
	return &c->info;
}

static int stage(struct rc_fcli *c, struct rc_err *err)
{
	if (c->stage)
		return 0;
	if (!(c->stage = aligned_alloc(4096, (size_t)FAB_DEPTH * FAB_CHUNK)))
		return rc_err_set(err, ENOMEM, "out of memory");
	return rc_ofi_reg(&c->o, c->stage, (size_t)FAB_DEPTH * FAB_CHUNK, RC_OFI_LOCAL,
			  &c->stage_mr, err);
}

/* The caller's fill or sink, at the region's offset of the transfer. */
struct xfer {
	rc_fcli_fill io;
	void *arg;
	uint64_t base;
};

static ssize_t xfer_fill(void *arg, uint64_t off, void *buf, size_t len)
{
	const struct xfer *x = arg;

	return x->io(x->arg, x->base + off, buf, len);
}

static int xfer_drain(void *arg, uint64_t off, const void *buf, size_t len)
{
	const struct xfer *x = arg;
	ssize_t k = x->io(x->arg, x->base + off, (void *)(uintptr_t)buf, len);

	return k < 0 ? (int)k : 0;
}

int rc_fcli_check(const struct rc_fcli *c, uint64_t off, uint64_t len, int need, struct rc_err *err)
{
	if (off > c->region.length || len > c->region.length - off)
		return rc_err_set(err, ERANGE,
				  "offset %llu + %llu bytes is out of bounds of region '%s' (%llu "
				  "bytes)",
				  (unsigned long long)off, (unsigned long long)len, c->region.name,
				  (unsigned long long)c->region.length);
	if ((c->region.access & need) != need)
		return rc_err_set(err, EACCES, "region '%s' does not allow %s", c->region.name,
				  need & 4   ? "atomics"
				  : need & 2 ? "writes"
					     : "reads");
	return 0;
}

int fab_stream(struct rc_fcli *c, struct rc_stream *s, const struct rc_ofi_mr *mr, uint64_t off,
	       struct rc_stream_result *res, struct rc_err *err)
{
	char who[sizeof(c->region.name) + 16];
	struct rc_ofi_tp t;
	void *ep = &t;
	int rc;

	snprintf(who, sizeof(who), "region '%s'", c->region.name);
	if ((rc = rc_ofi_tp_init(&t, &c->o, c->peer, who, s->depth, s->timeout_ms, err)))
		return rc;
	s->nconns = 1;
	s->tp = &rc_ofi_transport;
	s->eps = &ep;
	s->lkey = rc_ofi_tp_key(&t, mr);
	s->raddr = c->region.base + off;
	s->rkey = c->region.key;
	s->batch = 1;
	s->signal_every = 1; /* libfabric completes each */
	rc = rc_stream_run(s, res, err);
	rc_ofi_tp_quiesce(&t, 500); /* a failed run's operations still in flight */
	rc_ofi_tp_fini(&t);
	return rc;
}

int rc_fcli_transfer(struct rc_fcli *c, bool write, uint64_t off, uint64_t len, rc_fcli_fill io,
		     void *arg, uint64_t *done, double *seconds, struct rc_err *err)
{
	struct xfer x = { .io = io, .arg = arg, .base = off };
	struct rc_stream_result res = { 0 };
	int rc;

	*done = 0;
	*seconds = 0;
	if ((rc = rc_fcli_check(c, off, len, write ? 2 : 1, err)) || (rc = stage(c, err)))
		return rc;
	/* FAB_DEPTH pieces in flight, read back in offset order */
	struct rc_stream s = { .op = write ? RC_OP_WRITE : RC_OP_READ,
			       .buf = c->stage,
			       .chunk = c->o.max_msg < FAB_CHUNK ? c->o.max_msg : FAB_CHUNK,
			       .depth = FAB_DEPTH,
			       .total = len,
			       .fill = write ? xfer_fill : NULL,
			       .drain = write ? NULL : xfer_drain,
			       .arg = &x,
			       .timeout_ms = c->timeout_ms };

	rc = fab_stream(c, &s, &c->stage_mr, off, &res, err);
	*done = res.bytes;
	*seconds = res.seconds;
	return rc;
}

int rc_fcli_atomic(struct rc_fcli *c, bool cas, uint64_t off, uint64_t a, uint64_t b, uint64_t *old,
		   struct rc_err *err)
{
	uint64_t *w = (uint64_t *)(void *)(c->ctl + 1024 + 512);
	int rc;

	if (off % 8 || off > c->region.length || c->region.length - off < 8)
		return rc_err_set(err, ERANGE, "offset %llu is out of bounds of region '%s'",
				  (unsigned long long)off, c->region.name);
	if (!(c->region.access & 4))
		return rc_err_set(err, EACCES, "region '%s' does not allow atomics", c->region.name);
	if ((rc = rc_ofi_atomic(&c->o, c->peer, cas ? b : a, cas ? &a : NULL, w, &c->ctl_mr,
				c->region.base + off, c->region.key, (void *)FAB_ID_ATOMIC, err)) ||
	    (rc = wait_id(c, FAB_ID_ATOMIC, c->timeout_ms,
			  cas ? "compare-and-swap" : "fetch-and-add", err)))
		return rc;
	*old = w[0];
	return 0;
}

int rc_fcli_write_imm(struct rc_fcli *c, uint64_t off, uint32_t imm, struct rc_err *err)
{
	uint64_t data = imm;
	int rc;

	if ((rc = rc_fcli_check(c, off, 0, 2, err)) ||
	    (rc = rc_ofi_write(&c->o, c->peer, c->ctl, 0, &c->ctl_mr, c->region.base + off,
			       c->region.key, &data, (void *)FAB_ID_IMM, err)))
		return rc;
	return wait_id(c, FAB_ID_IMM, c->timeout_ms, "the immediate data", err);
}

void rc_fcli_close(struct rc_fcli *c)
{
	struct rc_err e;

	if (!c)
		return;
	if (c->admitted) {
		struct fab_head h = { .type = FAB_BYE, .count = FAB_ROLE_DATA };

		memcpy(h.nonce, c->cn, RC_AUTH_NONCE);
		if (c->token)
			fab_proof_bye(c->token, c->ln, c->cn, h.proof);
		fab_head_put(c->ctl, &h);
		if (!rc_ofi_send(&c->o, c->peer, c->ctl, FAB_HEAD, &c->ctl_mr, (void *)FAB_ID_SEND,
				 &e))
			wait_id(c, FAB_ID_SEND, 1000, "BYE", &e);
	}
	if (c->stage)
		rc_ofi_dereg(&c->stage_mr);
	rc_ofi_dereg(&c->ctl_mr);
	rc_ofi_close(&c->o);
	free(c->stage);
	free(c);
}
