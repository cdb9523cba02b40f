/* SPDX-License-Identifier: MIT */
/*
 * A small etcd v3 client over its JSON gateway (/v3/, etcd 3.4 and later):
 * get, put, create-if-absent, compare-and-swap on a key's mod revision, a
 * prefix range, and a lease kept alive by a thread of its own. Every call
 * is bounded by the handle's timeout. The group rendezvous, `register
 * --publish` and a migration's cutover all go through it.
 */
#ifndef RDMACTL_ETCD_H
#define RDMACTL_ETCD_H

#include <rdmactl/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmactl/err.h>
#include <rdmactl/parse.h>

#define RC_ETCD_VAL_MAX 1024
#define RC_ETCD_KEY_MAX 384
/* The most one answer of etcd may hold; past it the request fails (a
 * hostile endpoint streaming an endless body costs no more memory). */
#define RC_ETCD_REPLY_MAX (4 << 20)

struct rc_etcd;

/* One key as etcd holds it. */
struct rc_etcd_kv {
	char value[RC_ETCD_VAL_MAX];
	int64_t mod_revision;
	int64_t create_revision;
	char lease[32]; /* "" or "0" when the key has none */
};

/* "etcd://HOST:PORT/PATH": server gets HOST:PORT, path what follows the
 * slash (not empty). -EINVAL, and a message naming what is wrong. */
RC_EXPORT int rc_etcd_url_parse(const char *url, char *server, size_t slen, char *path, size_t plen,
				struct rc_err *err);
/* A handle on the etcd at server (HOST:PORT); nothing is sent yet.
 * timeout_ms bounds each request (0: 10 s). How etcd is reached comes from
 * the environment, read here: TLS with RDMACTL_ETCD_CA, RDMACTL_ETCD_CERT
 * and RDMACTL_ETCD_KEY (or RDMACTL_ETCD_TLS=1), etcd's authentication with
 * RDMACTL_ETCD_USER and RDMACTL_ETCD_PASSWORD_FILE or RDMACTL_ETCD_PASSWORD
 * (a token is asked for at the first request, again once when it expired);
 * -EINVAL or -errno naming the variable when they do not fit together or a
 * file cannot be read. */
RC_EXPORT int rc_etcd_open(const char *server, int timeout_ms, struct rc_etcd **out,
			   struct rc_err *err);
/* Stops the keepalive and revokes the lease (its keys go at once). */
RC_EXPORT void rc_etcd_close(struct rc_etcd *e);

/* Grant a lease of ttl_s seconds and keep it alive from a thread (every
 * third of the TTL) until rc_etcd_close; its id is rc_etcd_lease_id(). */
RC_EXPORT int rc_etcd_lease(struct rc_etcd *e, int ttl_s, struct rc_err *err);
RC_EXPORT const char *rc_etcd_lease_id(const struct rc_etcd *e);

/* -ENOENT when the key is not there. */
RC_EXPORT int rc_etcd_get(struct rc_etcd *e, const char *key, struct rc_etcd_kv *kv,
			  struct rc_err *err);
/* lease: attach the key to it (NULL or "": no lease). */
RC_EXPORT int rc_etcd_put(struct rc_etcd *e, const char *key, const char *value, const char *lease,
			  struct rc_err *err);
/* Put only if the key does not exist (one transaction); -EEXIST with the
 * holder's key in *held (may be NULL) otherwise. */
RC_EXPORT int rc_etcd_create(struct rc_etcd *e, const char *key, const char *value,
			     const char *lease, struct rc_etcd_kv *held, struct rc_err *err);
/* Call each(arg, key, value) for every key under prefix, in key order; a
 * non-zero return from each stops and is returned. */
typedef int (*rc_etcd_each_fn)(void *arg, const char *key, const char *value);

/* A served region as `register --publish` puts it in etcd, under
 * rdmactl/NS/region/NAME, as JSON: {"host", "port", "region", "length",
 * "access"}, and for a region served on several rails (NICs) "rails":
 * [{"host", "port"}, ...], the first rail's being host and port. Its
 * server's own key is rdmactl/NS/server/HOST:PORT. */
struct rc_etcd_rail {
	char host[RC_HOST_MAX];
	char port[8];
};

struct rc_etcd_region {
	char host[RC_HOST_MAX];
	char port[8];
	char region[RC_NAME_MAX];
	uint64_t length;
	char access[8];
	int nrails; /* 0: one rail (host, port); else 2 to RC_RAILS_MAX */
	struct rc_etcd_rail rails[RC_RAILS_MAX];
	/* "mac": HMAC-SHA256 under the data token of the key, its lease and the
	 * record without it, in hex ("": none; rdmactl-register(8), SECURITY) */
	char mac[65];
};

/* A namespace is 1 to 63 of letters, digits, '-', '_' and '.'. */
RC_EXPORT bool rc_etcd_ns_valid(const char *ns);
RC_EXPORT void rc_etcd_region_key(const char *ns, const char *region, char *buf, size_t len);
RC_EXPORT void rc_etcd_server_key(const char *ns, const char *host, const char *port, char *buf,
				  size_t len);
RC_EXPORT int rc_etcd_region_format(const struct rc_etcd_region *r, char *buf, size_t len);
/* -EINVAL when value is not such a JSON object. */
RC_EXPORT int rc_etcd_region_parse(const char *value, struct rc_etcd_region *r);
/* r->mac for the record at key, attached to lease (NULL, "" or "0": none),
 * under token (the data token its server requires); none without a token.
 * 0, or -ENOSPC for a record too long. */
RC_EXPORT int rc_etcd_region_sign(struct rc_etcd_region *r, const char *key, const char *lease,
				  const char *token);
/* Whether r, read at key with lease, carries the MAC that token makes
 * (compared in constant time): a client that holds the token refuses a
 * record without it, before it connects (a forged record, one copied from
 * another key, one put back after its lease ended, or one published with
 * another token). */
RC_EXPORT bool rc_etcd_region_verify(const struct rc_etcd_region *r, const char *key,
				     const char *lease, const char *token);

#endif
