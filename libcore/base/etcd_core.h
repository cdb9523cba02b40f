/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/etcd.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_ETCD_CORE_H
#define RDMACTL_ETCD_CORE_H

#include <rdmactl/etcd.h>

/* Base64 as etcd's gateway sends keys and values, decoded into buf
 * (len bytes with its NUL); -EINVAL for a bad character, no room, or a NUL
 * byte inside. */
int rc_etcd_b64_decode(const char *s, char *buf, size_t len);

const char *rc_etcd_server(const struct rc_etcd *e);

/* Put only if the key's mod revision is still mod_revision (one
 * transaction); -ESTALE with the key as it is now in *now (may be NULL;
 * its value is "" when the key is gone) otherwise. */
int rc_etcd_swap(struct rc_etcd *e, const char *key, int64_t mod_revision, const char *value,
		 const char *lease, struct rc_etcd_kv *now, struct rc_err *err);

int rc_etcd_range(struct rc_etcd *e, const char *prefix, rc_etcd_each_fn each, void *arg,
		  struct rc_err *err);
/* rc_etcd_range, and *rev the store's revision the answer was read at (a
 * watch from rev + 1 misses nothing). */
int rc_etcd_range_rev(struct rc_etcd *e, const char *prefix, rc_etcd_each_fn each, void *arg,
		      int64_t *rev, struct rc_err *err);
/* Watch prefix from revision from_rev on (etcd's watch, streamed by the
 * gateway): each(arg, key, value) for every key put under it, done(arg)
 * asked after each message; returns 0 once done said true, -ETIMEDOUT after
 * timeout_ms (err not set: the caller names what it waited for), each's
 * non-zero return, or an error naming etcd (the watch canceled, as after a
 * compaction, or not served): the caller may fall back to reading ranges. */
int rc_etcd_watch(struct rc_etcd *e, const char *prefix, int64_t from_rev, int timeout_ms,
		  rc_etcd_each_fn each, bool (*done)(void *arg), void *arg, struct rc_err *err);
/* The same decoding over len bytes of a watch's stream given as text (what
 * the gateway sent, lines and all): the fuzz target's way in. */
int rc_etcd_watch_parse(const char *text, size_t len, const char *prefix, rc_etcd_each_fn each,
			void *arg, struct rc_err *err);
/* The same walk over a range answer given as len bytes of JSON text (what
 * the gateway sent): the fuzz target's way in. */
int rc_etcd_range_parse(const char *text, size_t len, const char *prefix, rc_etcd_each_fn each,
			void *arg, struct rc_err *err);

#endif
