// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sys/random.h>

#include <rdmactl/parse.h>
#include <rdmactl/sha256.h>
#include <rdmactl/parse_core.h>
#include <rdmactl/sha256_core.h>

int rc_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	unsigned base = 10;

	if (!s || !*s)
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		if (!*s)
			return -EINVAL;
	}
	for (; *s; s++) {
		unsigned d;

		if (isdigit((unsigned char)*s))
			d = (unsigned)(*s - '0');
		else if (base == 16 && isxdigit((unsigned char)*s))
			d = (unsigned)(tolower((unsigned char)*s) - 'a' + 10);
		else
			return -EINVAL;
		if (v > (UINT64_MAX - d) / base)
			return -ERANGE;
		v = v * base + d;
	}
	*out = v;
	return 0;
}

int rc_parse_i64(const char *s, int64_t *out)
{
	uint64_t v;
	bool neg = false;
	int rc;

	if (s && *s == '-') {
		neg = true;
		s++;
	}
	rc = rc_parse_u64(s, &v);
	if (rc)
		return rc;
	if (neg) {
		if (v > (uint64_t)INT64_MAX + 1)
			return -ERANGE;
		*out = (int64_t)(0 - v);
	} else {
		*out = (int64_t)v;
	}
	return 0;
}

int rc_parse_size(const char *s, uint64_t *out)
{
	uint64_t v = 0, mult = 1;
	const char *p = s;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (*p) {
		switch (toupper((unsigned char)*p)) {
		case 'K':
			mult = 1ULL << 10;
			break;
		case 'M':
			mult = 1ULL << 20;
			break;
		case 'G':
			mult = 1ULL << 30;
			break;
		case 'T':
			mult = 1ULL << 40;
			break;
		default:
			return -EINVAL;
		}
		p++;
		if (!strcmp(p, "iB") || !strcmp(p, "B") || !strcmp(p, "b"))
			p += strlen(p);
		if (*p)
			return -EINVAL;
	}
	if (v && mult > UINT64_MAX / v)
		return -ERANGE;
	*out = v * mult;
	return 0;
}

void rc_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu%s", (unsigned long long)bytes, units[0]);
	else if (v == (double)(uint64_t)v)
		snprintf(buf, len, "%llu%s", (unsigned long long)v, units[u]);
	else
		snprintf(buf, len, "%.1f%s", v, units[u]);
}

bool rc_region_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= RC_NAME_MAX)
		return false;
	for (; *name; name++)
		if (!isalnum((unsigned char)*name) && !strchr("_.-", *name))
			return false;
	return true;
}

bool rc_token_valid(const char *token)
{
	size_t n = strlen(token);

	if (n == 0 || n > RC_TOKEN_MAX)
		return false;
	for (; *token; token++)
		if (!isgraph((unsigned char)*token))
			return false;
	return true;
}

bool rc_token_equal(const char want[RC_TOKEN_MAX + 1], const void *got, size_t len)
{
	const unsigned char *g = got;
	size_t end = len > RC_TOKEN_MAX + 1 ? len : RC_TOKEN_MAX + 1;
	unsigned char diff = 0;

	if (!want[0])
		return true;
	for (size_t i = 0; i < end; i++) {
		unsigned char w = i <= RC_TOKEN_MAX ? (unsigned char)want[i] : 0;

		diff |= w ^ (g && i < len ? g[i] : 0);
	}
	return diff == 0;
}

int rc_parse_target(const char *s, struct rc_target *t)
{
	const char *host, *hend, *p, *slash, *after;
	uint64_t port;

	memset(t, 0, sizeof(*t));
	if (!s || !*s)
		return -EINVAL;
	after = s;
	if (s[0] == '[' && !(after = strchr(s, ']')))
		return -EINVAL;
	slash = strchr(after, '/');
	if (s[0] == '[') {
		host = s + 1;
		hend = strchr(host, ']');
		if (!hend)
			return -EINVAL;
		p = hend + 1;
	} else {
		host = s;
		hend = host + strcspn(host, ":/");
		p = hend;
	}
	if (hend == host || (size_t)(hend - host) >= sizeof(t->host))
		return -EINVAL;
	memcpy(t->host, host, (size_t)(hend - host));
	if (*p == ':') {
		size_t n;

		p++;
		n = slash ? (size_t)(slash - p) : strlen(p);
		if (n == 0 || n >= sizeof(t->port))
			return -EINVAL;
		memcpy(t->port, p, n);
		if (rc_parse_u64(t->port, &port) || port == 0 || port > 65535 ||
		    !isdigit((unsigned char)t->port[0]))
			return -EINVAL;
		p += n;
	} else {
		strcpy(t->port, RC_DEFAULT_PORT);
	}
	if (*p == '/') {
		p++;
		if (!rc_region_name_valid(p))
			return -EINVAL;
		strcpy(t->region, p);
	} else if (*p) {
		return -EINVAL;
	}
	return 0;
}

static bool hex_run(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

bool rc_pci_addr_valid(const char *s, size_t len)
{
	const char *c = memchr(s, ':', len);
	size_t dom;

	if (!c)
		return false;
	dom = (size_t)(c - s);
	return dom >= 4 && dom <= 8 && len == dom + 8 && hex_run(s, dom) && hex_run(c + 1, 2) &&
	       c[3] == ':' && hex_run(c + 4, 2) && c[6] == '.' && c[7] >= '0' && c[7] <= '7';
}

/* DDDD:BB:DD.F as numbers; false when it is no PCI address. */
static bool pci_addr_parse(const char *s, unsigned long v[4])
{
	char *end;

	if (!rc_pci_addr_valid(s, strlen(s)))
		return false;
	v[0] = strtoul(s, &end, 16);
	v[1] = strtoul(end + 1, &end, 16);
	v[2] = strtoul(end + 1, &end, 16);
	v[3] = strtoul(end + 1, &end, 16);
	return !*end;
}

int rc_pci_addr_cmp(const char *a, const char *b)
{
	unsigned long va[4], vb[4];
	bool pa = pci_addr_parse(a, va), pb = pci_addr_parse(b, vb);

	if (pa != pb)
		return pa ? -1 : 1;
	if (!pa)
		return strcasecmp(a, b);
	for (int i = 0; i < 4; i++)
		if (va[i] != vb[i])
			return va[i] < vb[i] ? -1 : 1;
	return 0;
}

void rc_token_proof(const char *token, const char *label, const void *msg, size_t len, void *out,
		    size_t n)
{
	unsigned char mac[RC_SHA256_LEN], buf[256];
	size_t ll = strlen(label);
	if (n > sizeof(mac))
		n = sizeof(mac);
	if (!token || !*token || ll + 1 + len > sizeof(buf)) {
		memset(out, 0, n);
		return;
	}
	memcpy(buf, label, ll + 1);
	if (len)
		memcpy(buf + ll + 1, msg, len);
	rc_hmac_sha256(token, strlen(token), buf, ll + 1 + len, mac);
	memcpy(out, mac, n);
}

bool rc_bytes_equal(const void *a, const void *b, size_t n)
{
	const volatile unsigned char *x = a, *y = b;
	unsigned char diff = 0;

	for (size_t i = 0; i < n; i++)
		diff |= x[i] ^ y[i];
	return diff == 0;
}

int rc_random_bytes(void *buf, size_t n)
{
	unsigned char *p = buf;

	while (n) {
		ssize_t got = getrandom(p, n, 0);

		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += got;
		n -= (size_t)got;
	}
	return 0;
}
