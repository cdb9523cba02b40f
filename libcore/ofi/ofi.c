// SPDX-License-Identifier: MIT
/* The libfabric transport's core: an RDM endpoint, its AV and CQ, memory
 * registration as the provider's mode bits ask, and the posts
 * (libcore/ofi/ofi_core.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ofi_dl.h" /* before libfabric's headers */

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <rdmactl/ofi_core.h>
#include <rdmactl/parse_core.h>

/* What rdmactl handles of the FI_MR_* bits; a provider that asks for
 * others (FI_MR_RAW, FI_MR_RMA_EVENT, FI_MR_MMU_NOTIFY) is not offered. */
#define MR_MODES (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT)
#define CAPS (FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

/* rdmactl's short names of providers, each over ofi_rxm */
static const struct {
	const char *name, *prov;
} short_names[] = { { "tcp", "tcp;ofi_rxm" }, { "verbs", "verbs;ofi_rxm" } };

const char *rc_ofi_prov_string(const char *prov)
{
	for (size_t i = 0; i < sizeof(short_names) / sizeof(short_names[0]); i++)
		if (!strcmp(prov, short_names[i].name))
			return short_names[i].prov;
	return prov;
}

const char *rc_ofi_short_name(const char *prov)
{
	for (size_t i = 0; i < sizeof(short_names) / sizeof(short_names[0]); i++)
		if (!strcmp(prov, short_names[i].prov))
			return short_names[i].name;
	return prov;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int fi_fail(struct rc_err *err, int rc, const char *what, const struct rc_ofi *o)
{
	int code = rc < 0 ? -rc : rc;

	return rc_err_set(err, code > 0 && code < 256 ? code : EIO, "%s (%s): %s", what,
			  o && o->prov_name[0] ? o->prov_name : "libfabric", fi_strerror(code));
}

/* Why fi_getinfo found nothing for prov: the provider is absent, or has no
 * RDM endpoint with what is asked. */
static int no_info(const char *prov, uint64_t caps, struct rc_err *err)
{
	struct fi_info *hints = fi_allocinfo(), *any = NULL;
	bool exists;

	if (!hints)
		return rc_err_set(err, ENOMEM, "out of memory");
	hints->fabric_attr->prov_name = strdup(prov);
	exists = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &any) == 0;
	fi_freeinfo(any);
	fi_freeinfo(hints);
	if (!exists)
		return rc_err_set(err, ENODEV,
				  "libfabric has no provider '%s' here (fi_info -l lists those "
				  "there are)",
				  prov);
	return rc_err_set(err, EOPNOTSUPP,
			  "libfabric's '%s' offers no reliable datagram endpoint (FI_EP_RDM) "
			  "with messages, RMA read and write%s under memory modes rdmactl handles",
			  prov, caps & FI_ATOMIC ? " and 64-bit atomics" : "");
}

struct fi_info *rc_ofi_hints(const char *prov, bool want_atomic)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->ep_attr->type = FI_EP_RDM;
	h->caps = CAPS | (want_atomic ? FI_ATOMIC : 0);
	h->mode = 0;
	h->domain_attr->mr_mode = MR_MODES;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->fabric_attr->prov_name = strdup(rc_ofi_prov_string(prov));
	if (!h->fabric_attr->prov_name) {
		fi_freeinfo(h);
		return NULL;
	}
	return h;
}

static int open_objects(struct rc_ofi *o, const struct rc_ofi_opts *opts, struct rc_err *err)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_DATA,
				  .size = (size_t)(opts->cq_depth > 0 ? opts->cq_depth : 1024),
				  .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr ava = { .type = o->info->domain_attr->av_type, .count = RC_OFI_PEERS };
	int rc;

	if (ava.type == FI_AV_UNSPEC)
		ava.type = FI_AV_TABLE;
	if ((rc = fi_fabric(o->info->fabric_attr, &o->fabric, NULL)))
		return fi_fail(err, rc, "cannot open the fabric", o);
	if ((rc = fi_domain(o->fabric, o->info, &o->domain, NULL)))
		return fi_fail(err, rc, "cannot open the domain", o);
	/* a file descriptor to sleep on where asked and the provider has one;
	 * else a queue that is only polled */
	if (opts->wait_fd) {
		cqa.wait_obj = FI_WAIT_FD;
		if (fi_cq_open(o->domain, &cqa, &o->cq, NULL) ||
		    fi_control(&o->cq->fid, FI_GETWAIT, &o->wait_fd) || o->wait_fd < 0) {
			if (o->cq)
				fi_close(&o->cq->fid);
			o->cq = NULL;
			o->wait_fd = -1;
			cqa.wait_obj = FI_WAIT_NONE;
		}
	}
	if (!o->cq && (rc = fi_cq_open(o->domain, &cqa, &o->cq, NULL)))
		return fi_fail(err, rc, "cannot open a completion queue", o);
	if ((rc = fi_av_open(o->domain, &ava, &o->av, NULL)))
		return fi_fail(err, rc, "cannot open an address vector", o);
	if ((rc = fi_endpoint(o->domain, o->info, &o->ep, NULL)))
		return fi_fail(err, rc, "cannot open an endpoint", o);
	if ((rc = fi_ep_bind(o->ep, &o->av->fid, 0)) ||
	    (rc = fi_ep_bind(o->ep, &o->cq->fid, FI_TRANSMIT | FI_RECV)))
		return fi_fail(err, rc, "cannot bind the endpoint", o);
	if ((rc = fi_enable(o->ep)))
		return fi_fail(err, rc, "cannot enable the endpoint", o);
	o->namelen = sizeof(o->name);
	if ((rc = fi_getname(&o->ep->fid, o->name, &o->namelen)))
		return fi_fail(err, rc, "cannot read the endpoint's address", o);
	return 0;
}

/* 64-bit fetch-and-add and compare-and-swap, as the atomics of rdmactl. */
static bool has_atomics(struct rc_ofi *o)
{
	struct fi_atomic_attr a;

	return fi_query_atomic(o->domain, FI_UINT64, FI_SUM, &a, FI_FETCH_ATOMIC) == 0 &&
	       fi_query_atomic(o->domain, FI_UINT64, FI_CSWAP, &a, FI_COMPARE_ATOMIC) == 0;
}

static void note_info(struct rc_ofi *o)
{
	const struct fi_info *i = o->info;

	snprintf(o->prov_name, sizeof(o->prov_name), "%s", i->fabric_attr->prov_name);
	snprintf(o->domain_name, sizeof(o->domain_name), "%s", i->domain_attr->name);
	snprintf(o->fabric_name, sizeof(o->fabric_name), "%s", i->fabric_attr->name);
	o->mr_mode = i->domain_attr->mr_mode;
	if (o->mr_mode == FI_MR_BASIC) /* the old word for these three */
		o->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	o->key_size = i->domain_attr->mr_key_size;
	o->cq_data = i->domain_attr->cq_data_size >= 4;
	o->max_msg = i->ep_attr->max_msg_size;
	o->inject = i->tx_attr->inject_size;
}

int rc_ofi_open(struct rc_ofi *o, const struct rc_ofi_opts *opts, struct rc_err *err)
{
	uint64_t caps = CAPS | (opts->want_atomic ? FI_ATOMIC : 0);
	struct fi_info *hints;
	const char *service = opts->service && strcmp(opts->service, "0") ? opts->service : NULL;
	int rc;

	memset(o, 0, sizeof(*o));
	o->wait_fd = -1;
	o->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 5000;
	if (!(hints = rc_ofi_hints(opts->prov, opts->want_atomic)))
		return rc_err_set(err, ENOMEM, "out of memory");
	rc = fi_getinfo(FI_VERSION(1, 9), opts->node, service, opts->node ? FI_SOURCE : 0, hints,
			&o->info);
	fi_freeinfo(hints);
	if (rc == -FI_ENODATA || (!rc && !o->info))
		return no_info(rc_ofi_prov_string(opts->prov), caps, err);
	if (rc)
		return fi_fail(err, rc, "fi_getinfo", NULL);
	note_info(o);
	if (o->key_size > sizeof(uint64_t)) {
		rc = rc_err_set(err, EOPNOTSUPP,
				"libfabric's '%s' uses memory keys of %zu bytes (FI_MR_RAW); "
				"rdmactl carries keys of 8 bytes",
				o->prov_name, o->key_size);
		rc_ofi_close(o);
		return rc;
	}
	if ((rc = open_objects(o, opts, err))) {
		rc_ofi_close(o);
		return rc;
	}
	o->atomic = opts->want_atomic && has_atomics(o);
	if (opts->want_atomic && !o->atomic) {
		rc = rc_err_set(err, EOPNOTSUPP,
				"libfabric's '%s' has no 64-bit fetch-and-add and compare-and-swap",
				o->prov_name);
		rc_ofi_close(o);
		return rc;
	}
	return 0;
}

void rc_ofi_close(struct rc_ofi *o)
{
	if (o->ep)
		fi_close(&o->ep->fid);
	if (o->av)
		fi_close(&o->av->fid);
	if (o->cq)
		fi_close(&o->cq->fid);
	if (o->domain)
		fi_close(&o->domain->fid);
	if (o->fabric)
		fi_close(&o->fabric->fid);
	fi_freeinfo(o->info);
	o->ep = NULL;
	o->wait_fd = -1;
	o->av = NULL;
	o->cq = NULL;
	o->domain = NULL;
	o->fabric = NULL;
	o->info = NULL;
}

static int random_key(const struct rc_ofi *o, uint64_t *key, struct rc_err *err)
{
	size_t n = o->key_size && o->key_size < sizeof(*key) ? o->key_size : sizeof(*key);
	int rc = rc_random_bytes(key, sizeof(*key));

	if (rc)
		return rc_err_set(err, -rc, "cannot make a memory key");
	if (n < sizeof(*key))
		*key &= (1ull << (8 * n)) - 1;
	return 0;
}

int rc_ofi_reg(struct rc_ofi *o, void *buf, size_t len, int access, struct rc_ofi_mr *mr,
	       struct rc_err *err)
{
	uint64_t acc = FI_SEND | FI_RECV | FI_READ | FI_WRITE;
	uint64_t want = 0;
	int rc;

	memset(mr, 0, sizeof(*mr));
	/* Without FI_MR_PROV_KEY the key is ours to choose, and it is what a
	 * peer needs to reach the memory (an RDM target admits any initiator):
	 * a random one of the provider's key size, never a counter. */
	if (!(o->mr_mode & FI_MR_PROV_KEY) && (rc = random_key(o, &want, err)))
		return rc;
	if (access & (RC_OFI_REMOTE_READ | RC_OFI_REMOTE_ATOMIC))
		acc |= FI_REMOTE_READ;
	if (access & (RC_OFI_REMOTE_WRITE | RC_OFI_REMOTE_ATOMIC))
		acc |= FI_REMOTE_WRITE;
	if ((rc = fi_mr_reg(o->domain, buf, len, acc, 0, want, 0, &mr->mr, NULL)))
		return fi_fail(err, rc, "cannot register memory", o);
	if (o->mr_mode & FI_MR_ENDPOINT) {
		if ((rc = fi_mr_bind(mr->mr, &o->ep->fid, 0)) || (rc = fi_mr_enable(mr->mr))) {
			rc_ofi_dereg(mr);
			return fi_fail(err, rc, "cannot bind registered memory to the endpoint", o);
		}
	}
	mr->key = fi_mr_key(mr->mr);
	if (mr->key == FI_KEY_NOTAVAIL) {
		rc_ofi_dereg(mr);
		return rc_err_set(err, EOPNOTSUPP, "libfabric's '%s' gave a raw memory key",
				  o->prov_name);
	}
	mr->desc = fi_mr_desc(mr->mr);
	mr->base = o->mr_mode & FI_MR_VIRT_ADDR ? (uint64_t)(uintptr_t)buf : 0;
	mr->buf = buf;
	mr->len = len;
	return 0;
}

void rc_ofi_dereg(struct rc_ofi_mr *mr)
{
	if (mr->mr)
		fi_close(&mr->mr->fid);
	mr->mr = NULL;
}

int rc_ofi_av_insert(struct rc_ofi *o, const void *name, size_t namelen, uint64_t *peer,
		     struct rc_err *err)
{
	fi_addr_t a = FI_ADDR_NOTAVAIL;

	if (!namelen || namelen > RC_OFI_NAME_MAX)
		return rc_err_set(err, EINVAL, "a peer address of %zu bytes", namelen);
	if (fi_av_insert(o->av, name, 1, &a, 0, NULL) != 1 || a == FI_ADDR_NOTAVAIL)
		return rc_err_set(err, EINVAL, "libfabric's '%s' refused a peer's address",
				  o->prov_name);
	*peer = a;
	return 0;
}

int rc_ofi_av_remove(struct rc_ofi *o, uint64_t peer)
{
	fi_addr_t a = peer;

	return fi_av_remove(o->av, &a, 1, 0) ? -EINVAL : 0;
}

/* One completion-queue entry or error into w. */
static void to_wc(const struct fi_cq_data_entry *e, struct rc_ofi_wc *w)
{
	memset(w, 0, sizeof(*w));
	w->ctx = e->op_context;
	w->flags = e->flags;
	w->len = e->len;
	w->data = e->data;
}

/* Read what the CQ holds into wc (at most max): how many, or -errno. */
static int cq_take(struct rc_ofi *o, struct rc_ofi_wc *wc, int max, struct rc_err *err)
{
	struct fi_cq_data_entry e[16];
	struct fi_cq_err_entry ee = { 0 };
	ssize_t n = fi_cq_read(o->cq, e, (size_t)(max < 16 ? max : 16));

	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL) {
		if (fi_cq_readerr(o->cq, &ee, 0) != 1)
			return 0;
		memset(wc, 0, sizeof(*wc));
		wc->ctx = ee.op_context;
		wc->flags = ee.flags;
		wc->err = ee.err ? ee.err : EIO;
		snprintf(wc->why, sizeof(wc->why), "%s",
			 fi_cq_strerror(o->cq, ee.prov_errno, ee.err_data, NULL, 0));
		return 1;
	}
	if (n < 0)
		return fi_fail(err, (int)n, "cannot read the completion queue", o);
	for (ssize_t i = 0; i < n; i++)
		to_wc(&e[i], &wc[i]);
	return (int)n;
}

/* Room for a post: completions read to make progress, kept for poll. */
static int progress(struct rc_ofi *o, struct rc_err *err)
{
	int n;

	if (o->nbacklog >= RC_OFI_BACKLOG)
		return 0;
	n = cq_take(o, &o->backlog[o->nbacklog], RC_OFI_BACKLOG - o->nbacklog, err);
	if (n > 0)
		o->nbacklog += n;
	return n < 0 ? n : 0;
}

int rc_ofi_wait(struct rc_ofi *o, int timeout_ms)
{
	struct fid *f;
	struct pollfd p;

	if (o->wait_fd < 0)
		return -1;
	if (o->nbacklog)
		return 1;
	f = &o->cq->fid;
	/* the provider's say whether sleeping now could miss a completion */
	if (fi_trywait(o->fabric, &f, 1) != FI_SUCCESS)
		return 1;
	p = (struct pollfd){ .fd = o->wait_fd, .events = POLLIN };
	return poll(&p, 1, timeout_ms) > 0;
}

int rc_ofi_poll(struct rc_ofi *o, struct rc_ofi_wc *wc, int max, int timeout_ms, struct rc_err *err)
{
	double end = now_ms() + timeout_ms;
	int n = 0;

	if (max <= 0)
		return 0;
	if (o->nbacklog) {
		n = o->nbacklog < max ? o->nbacklog : max;
		memcpy(wc, o->backlog, (size_t)n * sizeof(*wc));
		memmove(o->backlog, o->backlog + n, (size_t)(o->nbacklog - n) * sizeof(*wc));
		o->nbacklog -= n;
		return n;
	}
	for (;;) {
		if ((n = cq_take(o, wc, max, err)) != 0 || now_ms() >= end)
			return n;
		struct timespec ts = { 0, 20000 };

		nanosleep(&ts, NULL);
	}
}

/* Post with call until the provider takes it, making progress meanwhile,
 * within the endpoint's timeout. */
#define POST(o, err, what, call) \
	do { \
		double end_ = now_ms() + (o)->timeout_ms; \
		ssize_t rc_; \
		while ((rc_ = (call)) == -FI_EAGAIN) { \
			int p_ = progress(o, err); \
			if (p_) \
				return p_; \
			if (now_ms() > end_) \
				return rc_err_set(err, ETIMEDOUT, "%s: no room in %d ms (%s)", \
						  what, (o)->timeout_ms, (o)->prov_name); \
		} \
		return rc_ ? fi_fail(err, (int)rc_, what, o) : 0; \
	} while (0)

static void *desc_of(const struct rc_ofi_mr *mr)
{
	return mr ? mr->desc : NULL;
}

int rc_ofi_write(struct rc_ofi *o, uint64_t peer, const void *buf, size_t len,
		 const struct rc_ofi_mr *lmr, uint64_t raddr, uint64_t key, const uint64_t *imm,
		 void *ctx, struct rc_err *err)
{
	if (imm && !o->cq_data)
		return rc_err_set(err, EOPNOTSUPP, "libfabric's '%s' carries no immediate data",
				  o->prov_name);
	if (imm)
		POST(o, err, "fi_writedata",
		     fi_writedata(o->ep, buf, len, desc_of(lmr), *imm, peer, raddr, key, ctx));
	POST(o, err, "fi_write", fi_write(o->ep, buf, len, desc_of(lmr), peer, raddr, key, ctx));
}

int rc_ofi_read(struct rc_ofi *o, uint64_t peer, void *buf, size_t len, const struct rc_ofi_mr *lmr,
		uint64_t raddr, uint64_t key, void *ctx, struct rc_err *err)
{
	POST(o, err, "fi_read", fi_read(o->ep, buf, len, desc_of(lmr), peer, raddr, key, ctx));
}

int rc_ofi_send(struct rc_ofi *o, uint64_t peer, const void *buf, size_t len,
		const struct rc_ofi_mr *lmr, void *ctx, struct rc_err *err)
{
	POST(o, err, "fi_send", fi_send(o->ep, buf, len, desc_of(lmr), peer, ctx));
}

int rc_ofi_recv(struct rc_ofi *o, void *buf, size_t len, const struct rc_ofi_mr *lmr, void *ctx,
		struct rc_err *err)
{
	POST(o, err, "fi_recv", fi_recv(o->ep, buf, len, desc_of(lmr), FI_ADDR_UNSPEC, ctx));
}

int rc_ofi_atomic(struct rc_ofi *o, uint64_t peer, uint64_t operand, const uint64_t *cmp,
		  uint64_t *old, const struct rc_ofi_mr *omr, uint64_t raddr, uint64_t key,
		  void *ctx, struct rc_err *err)
{
	if (!o->atomic)
		return rc_err_set(err, EOPNOTSUPP, "libfabric's '%s' was opened without atomics",
				  o->prov_name);
	old[1] = operand;
	if (!cmp)
		POST(o, err, "fi_fetch_atomic",
		     fi_fetch_atomic(o->ep, &old[1], 1, desc_of(omr), &old[0], desc_of(omr), peer,
				     raddr, key, FI_UINT64, FI_SUM, ctx));
	old[2] = *cmp;
	POST(o, err, "fi_compare_atomic",
	     fi_compare_atomic(o->ep, &old[1], 1, desc_of(omr), &old[2], desc_of(omr), &old[0],
			       desc_of(omr), peer, raddr, key, FI_UINT64, FI_CSWAP, ctx));
}

bool rc_ofi_wc_imm(const struct rc_ofi_wc *wc)
{
	return !wc->err && !(wc->flags & FI_RECV) && (wc->flags & FI_REMOTE_CQ_DATA);
}

int rc_ofi_port(const struct rc_ofi *o)
{
	struct sockaddr_storage ss = { 0 };

	memcpy(&ss, o->name, o->namelen < sizeof(ss) ? o->namelen : sizeof(ss));
	if (o->namelen >= sizeof(struct sockaddr_in) && ss.ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)&ss)->sin_port);
	if (o->namelen >= sizeof(struct sockaddr_in6) && ss.ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

int rc_ofi_resolve(const char *prov, const char *host, const char *port, unsigned char *name,
		   size_t *len, struct rc_err *err)
{
	struct fi_info *hints, *info = NULL;
	int rc;

	if (!(hints = fi_allocinfo()))
		return rc_err_set(err, ENOMEM, "out of memory");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_RMA;
	hints->fabric_attr->prov_name = strdup(rc_ofi_prov_string(prov));
	rc = fi_getinfo(FI_VERSION(1, 9), host, port, 0, hints, &info);
	fi_freeinfo(hints);
	if (rc || !info || !info->dest_addr || info->dest_addrlen > RC_OFI_NAME_MAX) {
		fi_freeinfo(info);
		return rc_err_set(err, EHOSTUNREACH, "libfabric's '%s' cannot address %s:%s",
				  rc_ofi_prov_string(prov), host, port);
	}
	memcpy(name, info->dest_addr, info->dest_addrlen);
	*len = info->dest_addrlen;
	fi_freeinfo(info);
	return 0;
}

int rc_ofi_sockaddr(const struct rc_ofi *o, const char *host, const char *port, unsigned char *name,
		    size_t *len, struct rc_err *err)
{
	struct sockaddr_storage own = { 0 };
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	int rc;

	memcpy(&own, o->name, o->namelen < sizeof(own) ? o->namelen : sizeof(own));
	if ((own.ss_family != AF_INET || o->namelen != sizeof(struct sockaddr_in)) &&
	    (own.ss_family != AF_INET6 || o->namelen != sizeof(struct sockaddr_in6)))
		return rc_err_set(err, EAFNOSUPPORT, "libfabric's '%s' names endpoints otherwise",
				  o->prov_name);
	hints.ai_family = own.ss_family;
	if ((rc = getaddrinfo(host, port, &hints, &ai)) || !ai ||
	    ai->ai_addrlen != (socklen_t)o->namelen) {
		if (ai)
			freeaddrinfo(ai);
		return rc_err_set(err, EHOSTUNREACH, "cannot resolve %s:%s (%s)", host, port,
				  rc ? gai_strerror(rc) : "another address family");
	}
	memcpy(name, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}
