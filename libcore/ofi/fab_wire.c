// SPDX-License-Identifier: MIT
/* The libfabric control plane's messages and proofs (fab_int.h), and the
 * fabric's name (rdmactl/fabric.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rdmactl/parse.h>
#include <rdmactl/parse_core.h>
#include <rdmactl/sha256_core.h>

#include "fab_int.h"

int rc_fabric_parse(const char *s, struct rc_fabric *f)
{
	memset(f, 0, sizeof(*f));
	if (!s || !strcmp(s, "verbs"))
		return 0;
	if (!strcmp(s, "auto")) {
		f->kind = RC_FABRIC_AUTO;
		return 0;
	}
	if (strncmp(s, "ofi:", 4) || !s[4] || strlen(s + 4) >= sizeof(f->prov))
		return -EINVAL;
	for (const char *p = s + 4; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' ||
		      *p == ';'))
			return -EINVAL;
	f->kind = RC_FABRIC_OFI;
	snprintf(f->prov, sizeof(f->prov), "%s", s + 4);
	return 0;
}

const char *rc_fabric_prov(const struct rc_fabric *f)
{
	return rc_ofi_prov_string(f->prov);
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int fab_head_get(const void *buf, size_t len, struct fab_head *h)
{
	const unsigned char *p = buf;

	if (len < FAB_HEAD)
		return -EPROTO;
	h->magic =
		(uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	if (h->magic != FAB_MAGIC)
		return -EPROTO;
	h->type = p[4];
	h->count = p[5];
	h->addrlen = p[6];
	h->pad = p[7];
	memcpy(h->nonce, p + 8, RC_AUTH_NONCE);
	memcpy(h->proof, p + 8 + RC_AUTH_NONCE, RC_AUTH_MAC);
	return 0;
}

void fab_head_put(void *buf, const struct fab_head *h)
{
	unsigned char *p = buf;

	put32(p, FAB_MAGIC);
	p[4] = h->type;
	p[5] = h->count;
	p[6] = h->addrlen;
	p[7] = 0;
	memcpy(p + 8, h->nonce, RC_AUTH_NONCE);
	memcpy(p + 8 + RC_AUTH_NONCE, h->proof, RC_AUTH_MAC);
}

/* who's proof under the plane "ofi-region", the context a label and bytes. */
static void proof(const char *token, enum rc_auth_role who, const unsigned char ln[RC_AUTH_NONCE],
		  const unsigned char cn[RC_AUTH_NONCE], const char *label, const void *b, size_t n,
		  unsigned char out[RC_AUTH_MAC])
{
	unsigned char ctx[RC_AUTH_CTX];
	size_t l = strlen(label) + 1;
	struct rc_auth a;

	memcpy(ctx, label, l);
	if (n > sizeof(ctx) - l)
		n = sizeof(ctx) - l;
	if (n)
		memcpy(ctx + l, b, n);
	rc_auth_init(&a, "ofi-region", ctx, l + n);
	memcpy(a.cn, cn, RC_AUTH_NONCE);
	memcpy(a.sn, ln, RC_AUTH_NONCE);
	rc_auth_mac(token, &a, who, out);
}

void fab_proof_hello(const char *token, const unsigned char ln[RC_AUTH_NONCE],
		     const unsigned char cn[RC_AUTH_NONCE], int role, const void *addr,
		     size_t addrlen, unsigned char out[RC_AUTH_MAC])
{
	unsigned char b[1 + RC_OFI_NAME_MAX];

	b[0] = (unsigned char)role;
	memcpy(b + 1, addr, addrlen);
	proof(token, RC_AUTH_CLIENT, ln, cn, "hello", b, 1 + addrlen, out);
}

void fab_proof_welcome(const char *token, const unsigned char ln[RC_AUTH_NONCE],
		       const unsigned char cn[RC_AUTH_NONCE], const void *body, size_t len,
		       unsigned char out[RC_AUTH_MAC])
{
	unsigned char d[RC_SHA256_LEN];
	struct rc_sha256 s;

	rc_sha256_init(&s);
	rc_sha256_update(&s, body, len);
	rc_sha256_final(&s, d);
	proof(token, RC_AUTH_SERVER, ln, cn, "welcome", d, sizeof(d), out);
}

void fab_proof_bye(const char *token, const unsigned char ln[RC_AUTH_NONCE],
		   const unsigned char cn[RC_AUTH_NONCE], unsigned char out[RC_AUTH_MAC])
{
	proof(token, RC_AUTH_CLIENT, ln, cn, "bye", NULL, 0, out);
}

void fab_token_check(const char *token, const unsigned char ln[RC_AUTH_NONCE], const void *addr,
		     size_t addrlen, unsigned char out[RC_AUTH_MAC])
{
	static const unsigned char none[RC_AUTH_NONCE];

	proof(token, RC_AUTH_SERVER, ln, none, "listener", addr, addrlen, out);
}

bool fab_proof_eq(const unsigned char a[RC_AUTH_MAC], const unsigned char b[RC_AUTH_MAC])
{
	return rc_bytes_equal(a, b, RC_AUTH_MAC);
}

void fab_region_put(void *buf, const struct rc_fregion *r)
{
	unsigned char *p = buf;

	memset(p, 0, FAB_REGION);
	memcpy(p, r->name, strnlen(r->name, sizeof(r->name) - 1));
	put64(p + 32, r->length);
	put64(p + 40, r->key);
	put64(p + 48, r->base);
	p[56] = (unsigned char)r->access;
}

int fab_region_get(const void *buf, struct rc_fregion *r)
{
	const unsigned char *p = buf;

	memset(r, 0, sizeof(*r));
	if (memchr(p, 0, 32) == NULL)
		return -EPROTO;
	memcpy(r->name, p, 32);
	r->length = get64(p + 32);
	r->key = get64(p + 40);
	r->base = get64(p + 48);
	r->access = p[56] & 7;
	return rc_region_name_valid(r->name) ? 0 : -EPROTO;
}

void fab_hex(const void *p, size_t n, char *out)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	out[2 * n] = '\0';
}

int fab_unhex(const char *s, void *p, size_t max)
{
	size_t n = strlen(s);
	unsigned char *b = p;

	if (n % 2 || n / 2 > max || !n)
		return -EINVAL;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned int v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1 ||
		    !strchr("0123456789abcdefABCDEF", s[2 * i]) ||
		    !strchr("0123456789abcdefABCDEF", s[2 * i + 1]))
			return -EINVAL;
		b[i] = (unsigned char)v;
	}
	return (int)(n / 2);
}

void fab_info_of(const struct rc_ofi *o, struct rc_fabric_info *fi)
{
	memset(fi, 0, sizeof(*fi));
	snprintf(fi->provider, sizeof(fi->provider), "%s", o->prov_name);
	snprintf(fi->domain, sizeof(fi->domain), "%s", o->domain_name);
	snprintf(fi->fabric, sizeof(fi->fabric), "%s", o->fabric_name);
	fab_hex(o->name, o->namelen, fi->address);
}

bool fab_rej_list(struct fab_rej *r, double now)
{
	if (!r->hidden && now - r->start >= 1.0) { /* a new second */
		r->start = now;
		r->listed = 0;
	}
	if (r->listed < FAB_REJ_PER_S) {
		r->listed++;
		return true;
	}
	r->hidden++;
	return false;
}

uint64_t fab_rej_flush(struct fab_rej *r, double now)
{
	uint64_t n = r->hidden;

	if (!n || now - r->start < 1.0)
		return 0;
	*r = (struct fab_rej){ .start = now };
	return n;
}
