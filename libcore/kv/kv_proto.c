// SPDX-License-Identifier: MIT
/* kvxfer control messages: little-endian, after the rc_ctrl header. */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include <rdmactl/ctrl.h>
#include <rdmactl/kv.h>
#include <rdmactl/parse.h>
#include <rdmactl/parse_core.h>
#include <rdmactl/sha256_core.h>
#include <rdmactl/ctrl_core.h>
#include <rdmactl/kv_core.h>

struct wbuf {
	unsigned char *p;
	size_t len, cap;
	bool over;
};

static void w32(struct wbuf *w, uint32_t v)
{
	if (w->len + 4 > w->cap) {
		w->over = true;
		return;
	}
	v = htole32(v);
	memcpy(w->p + w->len, &v, 4);
	w->len += 4;
}

static void w64(struct wbuf *w, uint64_t v)
{
	w32(w, (uint32_t)v);
	w32(w, (uint32_t)(v >> 32));
}

/* n bytes of s after their length. */
static void wbytes(struct wbuf *w, const char *s, size_t n)
{
	w32(w, (uint32_t)n);
	if (w->len + n > w->cap) {
		w->over = true;
		return;
	}
	memcpy(w->p + w->len, s, n);
	w->len += n;
}

/* n bytes, no length before them. */
static void wraw(struct wbuf *w, const void *s, size_t n)
{
	if (w->len + n > w->cap) {
		w->over = true;
		return;
	}
	memcpy(w->p + w->len, s, n);
	w->len += n;
}

static void wstr(struct wbuf *w, const char *s)
{
	wbytes(w, s, strnlen(s, KV_REASON_MAX - 1));
}

struct rbuf {
	const unsigned char *p;
	size_t len, off;
	bool bad;
};

static uint32_t r32(struct rbuf *r)
{
	uint32_t v;

	if (r->off + 4 > r->len) {
		r->bad = true;
		return 0;
	}
	memcpy(&v, r->p + r->off, 4);
	r->off += 4;
	return le32toh(v);
}

static void rraw(struct rbuf *r, void *out, size_t n)
{
	if (r->bad || r->off + n > r->len) {
		r->bad = true;
		memset(out, 0, n);
		return;
	}
	memcpy(out, r->p + r->off, n);
	r->off += n;
}

static uint64_t r64(struct rbuf *r)
{
	uint64_t lo = r32(r);

	return lo | (uint64_t)r32(r) << 32;
}

static void rstr(struct rbuf *r, char *out, size_t cap)
{
	uint32_t n = r32(r);

	if (r->bad || n >= cap || r->off + n > r->len) {
		r->bad = true;
		out[0] = '\0';
		return;
	}
	memcpy(out, r->p + r->off, n);
	out[n] = '\0';
	r->off += n;
	for (uint32_t i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] > 0x7e)
			out[i] = '?';
}

int kv_pd_encode(const struct kv_hello_pd *p, void *buf, size_t cap)
{
	struct wbuf w = { buf, 0, cap, false };

	w32(&w, KV_PD_MAGIC);
	w32(&w, p->rank << 16 | (p->qp & 0xffff));
	w32(&w, p->nqps);
	w32(&w, p->session);
	wraw(&w, p->nonce, RC_AUTH_NONCE);
	wraw(&w, p->proof, RC_AUTH_MAC);
	return w.over ? -ENOSPC : (int)w.len;
}

int kv_pd_decode(const void *buf, size_t len, struct kv_hello_pd *p)
{
	struct rbuf r = { buf, len, 0, false };
	uint32_t rq, magic;

	memset(p, 0, sizeof(*p));
	if (!buf)
		return -EBADMSG;
	magic = r32(&r);
	if ((magic == KV_PD_MAGIC_V2 || magic == KV_PD_MAGIC_V3 || magic == KV_PD_MAGIC_V4 ||
	     magic == KV_PD_MAGIC_V5 || magic == KV_PD_MAGIC_V6) &&
	    !r.bad)
		return -EPROTO;
	if (magic != KV_PD_MAGIC)
		return -EBADMSG;
	rq = r32(&r);
	p->rank = rq >> 16;
	p->qp = rq & 0xffff;
	p->nqps = r32(&r);
	p->session = r32(&r);
	rraw(&r, p->nonce, RC_AUTH_NONCE);
	rraw(&r, p->proof, RC_AUTH_MAC);
	if (r.bad || p->rank >= KV_MAX_TP || p->nqps < 1 || p->nqps > KV_MAX_QPS || p->qp > p->nqps)
		return -EBADMSG;
	return 0;
}

int kv_acc_encode(const struct kv_accept_pd *a, void *buf, size_t cap)
{
	struct wbuf w = { buf, 0, cap, false };

	w32(&w, KV_ACC_MAGIC);
	wraw(&w, a->nonce, RC_AUTH_NONCE);
	wraw(&w, a->proof, RC_AUTH_MAC);
	return w.over ? -ENOSPC : (int)w.len;
}

int kv_acc_decode(const void *buf, size_t len, struct kv_accept_pd *a)
{
	struct rbuf r = { buf, len, 0, false };

	memset(a, 0, sizeof(*a));
	if (!buf || r32(&r) != KV_ACC_MAGIC)
		return -EBADMSG;
	rraw(&r, a->nonce, RC_AUTH_NONCE);
	rraw(&r, a->proof, RC_AUTH_MAC);
	return r.bad ? -EBADMSG : 0;
}

/* The context: rank, nqps, session (little-endian, 32 bits each), then the
 * decode rank's port (16 bits, big-endian, as on the wire). */
void kv_auth_start(struct rc_auth *a, const struct kv_hello_pd *ctrl, uint16_t port)
{
	uint32_t v[3] = { htole32(ctrl->rank), htole32(ctrl->nqps), htole32(ctrl->session) };
	unsigned char ctx[sizeof(v) + 2];

	memcpy(ctx, v, sizeof(v));
	ctx[sizeof(v)] = (unsigned char)(port >> 8);
	ctx[sizeof(v) + 1] = (unsigned char)port;
	rc_auth_init(a, KV_AUTH_PLANE, ctx, sizeof(ctx));
	memcpy(a->cn, ctrl->nonce, RC_AUTH_NONCE);
}

void kv_data_key(const char *token, const struct rc_auth *a, uint8_t key[RC_AUTH_KEY])
{
	rc_auth_session(token && *token ? token : KV_OPEN_KEY, a, "data-qp", key);
}

/* The label, then the request up to the proof itself. */
static void data_proof(const struct kv_hello_pd *p, const uint8_t key[RC_AUTH_KEY],
		       uint8_t out[RC_AUTH_MAC])
{
	struct kv_hello_pd q = *p;
	unsigned char b[sizeof(KV_DATA_LABEL) + KV_PD_LEN], mac[RC_SHA256_LEN];

	memset(q.proof, 0, sizeof(q.proof));
	memcpy(b, KV_DATA_LABEL, sizeof(KV_DATA_LABEL));
	kv_pd_encode(&q, b + sizeof(KV_DATA_LABEL), KV_PD_LEN);
	rc_hmac_sha256(key, RC_AUTH_KEY, b, sizeof(b) - RC_AUTH_MAC, mac);
	memcpy(out, mac, RC_AUTH_MAC);
}

void kv_pd_data_prove(struct kv_hello_pd *p, const uint8_t key[RC_AUTH_KEY])
{
	data_proof(p, key, p->proof);
}

bool kv_pd_data_proven(const struct kv_hello_pd *p, const uint8_t key[RC_AUTH_KEY])
{
	uint8_t want[RC_AUTH_MAC];

	data_proof(p, key, want);
	return rc_bytes_equal(want, p->proof, RC_AUTH_MAC);
}

static void put_geom(struct wbuf *w, const struct kv_geom *g)
{
	w32(w, (uint32_t)g->layout | (uint32_t)g->page_layout << 8 | (uint32_t)g->dtype << 16);
	w32(w, g->layers);
	w32(w, g->kv_heads);
	w32(w, g->head_dim);
	w32(w, g->src_tp);
	w32(w, g->dst_tp);
	w32(w, g->src_page_tokens);
	w32(w, g->dst_page_tokens);
}

static void get_geom(struct rbuf *r, struct kv_geom *g)
{
	uint32_t kinds = r32(r);

	if ((kinds & 0xff) > KV_LAYOUT_MLA || (kinds >> 8 & 0xff) > KV_PAGE_HND ||
	    (kinds >> 16 & 0xff) > KV_DT_FP8)
		r->bad = true;
	g->layout = (enum kv_layout)(kinds & 0xff);
	g->page_layout = (enum kv_page_layout)(kinds >> 8 & 0xff);
	g->dtype = (enum kv_dtype)(kinds >> 16 & 0xff);
	g->layers = r32(r);
	g->kv_heads = r32(r);
	g->head_dim = r32(r);
	g->src_tp = r32(r);
	g->dst_tp = r32(r);
	g->src_page_tokens = r32(r);
	g->dst_page_tokens = r32(r);
}

int kv_msg_encode(const struct kv_msg *m, void *buf, size_t cap)
{
	struct wbuf w = { buf, RC_CTRL_HDR_LEN, cap, cap < RC_CTRL_HDR_LEN };

	switch (m->type) {
	case KV_MSG_HELLO:
		w32(&w, m->u.hello.rank);
		w32(&w, m->u.hello.nqps);
		w32(&w, m->u.hello.session);
		put_geom(&w, &m->u.hello.g);
		wraw(&w, m->u.hello.proof, RC_AUTH_MAC);
		w32(&w, m->u.hello.land);
		break;
	case KV_MSG_WELCOME:
		w32(&w, m->u.welcome.rank);
		w32(&w, m->u.welcome.pool_pages);
		w32(&w, m->u.welcome.rkey);
		w64(&w, m->u.welcome.base);
		w64(&w, m->u.welcome.page_bytes);
		w64(&w, m->u.welcome.land);
		w32(&w, m->u.welcome.land_units);
		break;
	case KV_MSG_REQ:
		w32(&w, m->req);
		w32(&w, m->u.request.tokens);
		break;
	case KV_MSG_ALLOC:
		if (m->u.alloc.npages > KV_MAX_REQ_PAGES || m->u.alloc.slot >= KV_MAX_SLOTS)
			return -EINVAL;
		w32(&w, m->req);
		w32(&w, m->u.alloc.slot | (m->u.alloc.gen & 0xff) << 16);
		w32(&w, m->u.alloc.npages);
		w32(&w, m->u.alloc.land);
		for (uint32_t i = 0; i < m->u.alloc.npages; i++)
			w32(&w, m->u.alloc.pages[i]);
		break;
	case KV_MSG_DONE:
		w32(&w, m->req);
		w32(&w, m->u.done.flags);
		w32(&w, (uint32_t)m->u.done.status);
		w64(&w, m->u.done.bytes);
		w32(&w, m->u.done.unpack_us);
		break;
	case KV_MSG_CANCEL:
	case KV_MSG_ERROR:
		w32(&w, m->req);
		w32(&w, (uint32_t)m->u.cancel.code);
		wstr(&w, m->u.cancel.text);
		break;
	case KV_MSG_HB:
		break;
	default:
		return -EINVAL;
	}
	if (w.over)
		return -ENOSPC;
	rc_ctrl_encode_hdr(buf, cap, m->type, (uint32_t)(w.len - RC_CTRL_HDR_LEN), m->seq);
	return (int)w.len;
}

int kv_msg_decode(const void *buf, size_t len, struct kv_msg *m, uint32_t *pages, size_t max)
{
	struct rc_ctrl_hdr h;
	struct rbuf r;
	uint32_t v;

	if (rc_ctrl_decode_hdr(buf, len, &h))
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	m->type = h.type;
	m->seq = h.seq;
	r = (struct rbuf){ (const unsigned char *)buf, RC_CTRL_HDR_LEN + (size_t)h.len,
			   RC_CTRL_HDR_LEN, false };
	switch (h.type) {
	case KV_MSG_HELLO:
		m->u.hello.rank = r32(&r);
		m->u.hello.nqps = r32(&r);
		m->u.hello.session = r32(&r);
		get_geom(&r, &m->u.hello.g);
		rraw(&r, m->u.hello.proof, RC_AUTH_MAC);
		m->u.hello.land = r32(&r);
		if (m->u.hello.land > KV_PACK_NEVER)
			r.bad = true;
		break;
	case KV_MSG_WELCOME:
		m->u.welcome.rank = r32(&r);
		m->u.welcome.pool_pages = r32(&r);
		m->u.welcome.rkey = r32(&r);
		m->u.welcome.base = r64(&r);
		m->u.welcome.page_bytes = r64(&r);
		m->u.welcome.land = r64(&r);
		m->u.welcome.land_units = r32(&r);
		break;
	case KV_MSG_REQ:
		m->req = r32(&r);
		m->u.request.tokens = r32(&r);
		break;
	case KV_MSG_ALLOC:
		m->req = r32(&r);
		v = r32(&r);
		m->u.alloc.slot = v & 0xffff;
		m->u.alloc.gen = v >> 16 & 0xff;
		m->u.alloc.npages = r32(&r);
		m->u.alloc.land = r32(&r);
		if (m->u.alloc.slot >= KV_MAX_SLOTS || m->u.alloc.npages > max ||
		    m->u.alloc.npages > KV_MAX_REQ_PAGES || !pages)
			return -EBADMSG;
		m->u.alloc.pages = pages;
		for (uint32_t i = 0; i < m->u.alloc.npages; i++)
			pages[i] = r32(&r);
		break;
	case KV_MSG_DONE:
		m->req = r32(&r);
		m->u.done.flags = r32(&r);
		m->u.done.status = (int32_t)r32(&r);
		m->u.done.bytes = r64(&r);
		m->u.done.unpack_us = r32(&r);
		break;
	case KV_MSG_CANCEL:
	case KV_MSG_ERROR:
		m->req = r32(&r);
		m->u.cancel.code = (int32_t)r32(&r);
		rstr(&r, m->u.cancel.text, sizeof(m->u.cancel.text));
		break;
	case KV_MSG_HB:
		break;
	default:
		return -EBADMSG;
	}
	/* Every byte accounted for: no trailing garbage, nothing missing. */
	if (r.bad || r.off != r.len)
		return -EBADMSG;
	return 0;
}

const char *kv_msg_name(uint16_t type)
{
	static const char *const names[] = { "HELLO", "WELCOME", "REQ", "ALLOC",
					     "DONE",  "CANCEL",  "HB",  "ERROR" };

	return type >= KV_MSG_HELLO && type <= KV_MSG_ERROR ? names[type - KV_MSG_HELLO] : "?";
}
