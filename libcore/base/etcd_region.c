// SPDX-License-Identifier: MIT
/* What rdmactl keeps in etcd: the namespace's keys of a region and of a
 * server, and a region's record (JSON) written and read back. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <rdmactl/etcd.h>
#include <rdmactl/parse_core.h>
#include <rdmactl/sha256_core.h>

#define RECORD_LABEL "rdmactl-etcd-record-v1"

bool rc_etcd_ns_valid(const char *ns)
{
	size_t n = ns ? strlen(ns) : 0;

	if (n == 0 || n > 63)
		return false;
	for (const char *p = ns; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
			return false;
	return true;
}

void rc_etcd_region_key(const char *ns, const char *region, char *buf, size_t len)
{
	snprintf(buf, len, "rdmactl/%s/region/%s", ns, region);
}

void rc_etcd_server_key(const char *ns, const char *host, const char *port, char *buf, size_t len)
{
	snprintf(buf, len, "rdmactl/%s/server/%s%s%s:%s", ns, strchr(host, ':') ? "[" : "", host,
		 strchr(host, ':') ? "]" : "", port);
}

/* The "rails" array of r, or NULL (out of memory). */
static json_t *rails_json(const struct rc_etcd_region *r)
{
	json_t *a = json_array();

	for (int i = 0; a && i < r->nrails; i++)
		if (json_array_append_new(a, json_pack("{s:s,s:s}", "host", r->rails[i].host,
						       "port", r->rails[i].port))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

int rc_etcd_region_format(const struct rc_etcd_region *r, char *buf, size_t len)
{
	json_t *j = json_pack("{s:s,s:s,s:s,s:I,s:s}", "host", r->host, "port", r->port, "region",
			      r->region, "length", (json_int_t)r->length, "access", r->access);
	char *s;
	int rc;

	if (j && r->mac[0] && json_object_set_new(j, "mac", json_string(r->mac))) {
		json_decref(j);
		j = NULL;
	}
	if (j && r->nrails && json_object_set_new(j, "rails", rails_json(r))) {
		json_decref(j);
		j = NULL;
	}
	s = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	rc = s && strlen(s) < len ? 0 : -ENOSPC;

	if (!rc)
		memcpy(buf, s, strlen(s) + 1);
	free(s);
	json_decref(j);
	return rc;
}

static int copy_str(const json_t *o, const char *k, char *buf, size_t len)
{
	const json_t *v = json_object_get(o, k);

	if (!json_is_string(v) || !json_string_length(v) || json_string_length(v) >= len)
		return -EINVAL;
	memcpy(buf, json_string_value(v), json_string_length(v) + 1);
	return 0;
}

/* The optional "rails" of record j into r: absent, or 2 to RC_RAILS_MAX
 * objects with a host and a port each. */
static int rails_parse(const json_t *j, struct rc_etcd_region *r)
{
	const json_t *a = json_object_get(j, "rails");
	size_t n = json_array_size(a);

	if (!a)
		return 0;
	if (!json_is_array(a) || n < 2 || n > RC_RAILS_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		const json_t *o = json_array_get(a, i);

		if (!json_is_object(o) ||
		    copy_str(o, "host", r->rails[i].host, sizeof(r->rails[i].host)) ||
		    copy_str(o, "port", r->rails[i].port, sizeof(r->rails[i].port)))
			return -EINVAL;
	}
	r->nrails = (int)n;
	return 0;
}

int rc_etcd_region_parse(const char *value, struct rc_etcd_region *r)
{
	json_t *j = json_loads(value, 0, NULL), *l = json_object_get(j, "length");
	int rc = -EINVAL;

	memset(r, 0, sizeof(*r));
	if (json_is_object(j) && !copy_str(j, "host", r->host, sizeof(r->host)) &&
	    !copy_str(j, "port", r->port, sizeof(r->port)) &&
	    !copy_str(j, "region", r->region, sizeof(r->region)) && json_is_integer(l) &&
	    json_integer_value(l) >= 0 && !rails_parse(j, r)) {
		r->length = (uint64_t)json_integer_value(l);
		copy_str(j, "access", r->access, sizeof(r->access));
		copy_str(j, "mac", r->mac, sizeof(r->mac));
		rc = 0;
	}
	if (rc)
		memset(r, 0, sizeof(*r));
	json_decref(j);
	return rc;
}

/* The MAC of r (its own "mac" left out) at key under lease, under token, in
 * hex. No lease is "0", as etcd says it. */
static int record_mac(const struct rc_etcd_region *r, const char *key, const char *lease,
		      const char *token, char hex[65])
{
	struct rc_etcd_region bare = *r;
	char msg[4096];
	unsigned char mac[RC_SHA256_LEN];
	int n = snprintf(msg, sizeof(msg), "%s\n%s\n%s\n", RECORD_LABEL, key,
			 lease && *lease ? lease : "0");

	bare.mac[0] = 0;
	if (n < 0 || (size_t)n >= sizeof(msg) ||
	    rc_etcd_region_format(&bare, msg + n, sizeof(msg) - (size_t)n))
		return -ENOSPC;
	rc_hmac_sha256(token, strlen(token), msg, strlen(msg), mac);
	for (int i = 0; i < RC_SHA256_LEN; i++)
		snprintf(hex + 2 * i, 3, "%02x", mac[i]);
	return 0;
}

int rc_etcd_region_sign(struct rc_etcd_region *r, const char *key, const char *lease,
			const char *token)
{
	r->mac[0] = 0;
	return token && *token ? record_mac(r, key, lease, token, r->mac) : 0;
}

bool rc_etcd_region_verify(const struct rc_etcd_region *r, const char *key, const char *lease,
			   const char *token)
{
	char want[65];

	return token && *token && strlen(r->mac) == 64 && !record_mac(r, key, lease, token, want) &&
	       rc_bytes_equal(want, r->mac, 64);
}
