// SPDX-License-Identifier: MIT
/* etcd's keys and values: get, put, the transactions that create a key or
 * swap its value, and ranges under a prefix. Requests through etcd.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd_int.h"
#include <rdmactl/etcd_core.h>

static int64_t num(const json_t *j)
{
	if (json_is_integer(j))
		return (int64_t)json_integer_value(j);
	return json_is_string(j) ? strtoll(json_string_value(j), NULL, 10) : 0;
}

/* One entry of a range answer's kvs into kv; -EPROTO if malformed. */
int etcd_kv_from(const json_t *j, struct rc_etcd_kv *kv)
{
	const json_t *v = json_object_get(j, "value"), *l = json_object_get(j, "lease");

	memset(kv, 0, sizeof(*kv));
	/* An empty value comes without its field. */
	if (v && (!json_is_string(v) ||
		  rc_etcd_b64_decode(json_string_value(v), kv->value, sizeof(kv->value))))
		return -EPROTO;
	kv->mod_revision = num(json_object_get(j, "mod_revision"));
	kv->create_revision = num(json_object_get(j, "create_revision"));
	snprintf(kv->lease, sizeof(kv->lease), "%lld", (long long)num(l));
	return 0;
}

int rc_etcd_get(struct rc_etcd *e, const char *key, struct rc_etcd_kv *kv, struct rc_err *err)
{
	json_t *reply = NULL, *first;
	int rc = etcd_post(e, "kv/range", json_pack("{s:o}", "key", etcd_b64_json(key)), &reply,
			   err);

	if (rc)
		return rc;
	first = json_array_get(json_object_get(reply, "kvs"), 0);
	if (!first)
		rc = rc_err_set(err, ENOENT, "etcd at %s holds no key %s", e->server, key);
	else if (etcd_kv_from(first, kv))
		rc = rc_err_set(err, EPROTO, "etcd at %s sent a malformed value for %s", e->server,
				key);
	json_decref(reply);
	return rc;
}

static json_t *put_op(const char *key, const char *value, const char *lease)
{
	json_t *p = json_pack("{s:o,s:o}", "key", etcd_b64_json(key), "value", etcd_b64_json(value));

	if (p && lease && *lease && strcmp(lease, "0"))
		json_object_set_new(p, "lease", json_string(lease));
	return p;
}

int rc_etcd_put(struct rc_etcd *e, const char *key, const char *value, const char *lease,
		struct rc_err *err)
{
	json_t *reply = NULL;
	int rc = etcd_post(e, "kv/put", put_op(key, value, lease), &reply, err);

	json_decref(reply);
	return rc;
}

/* A transaction: if key's TARGET (create or mod revision) equals rev, put;
 * else read the key. 1 when the put was done, 0 when not (*now filled). */
static int txn(struct rc_etcd *e, const char *key, const char *target, int64_t rev,
	       const char *value, const char *lease, struct rc_etcd_kv *now, struct rc_err *err)
{
	char revs[24];
	json_t *reply = NULL, *first;
	int rc;

	snprintf(revs, sizeof(revs), "%lld", (long long)rev);
	json_t *cmp = json_pack("{s:o,s:s,s:s}", "key", etcd_b64_json(key), "result", "EQUAL",
				"target", target);

	json_object_set_new(cmp, !strcmp(target, "CREATE") ? "create_revision" : "mod_revision",
			    json_string(revs));
	rc = etcd_post(e, "kv/txn",
		       json_pack("{s:[o],s:[{s:o}],s:[{s:{s:o}}]}", "compare", cmp, "success",
				 "request_put", put_op(key, value, lease), "failure",
				 "request_range", "key", etcd_b64_json(key)),
		       &reply, err);
	if (rc)
		return rc;
	if (json_is_true(json_object_get(reply, "succeeded"))) {
		json_decref(reply);
		return 1;
	}
	first = json_object_get(json_array_get(json_object_get(reply, "responses"), 0),
				"response_range");
	first = json_array_get(json_object_get(first, "kvs"), 0);
	if (now) {
		memset(now, 0, sizeof(*now));
		if (first)
			etcd_kv_from(first, now);
	}
	json_decref(reply);
	return 0;
}

int rc_etcd_create(struct rc_etcd *e, const char *key, const char *value, const char *lease,
		   struct rc_etcd_kv *held, struct rc_err *err)
{
	struct rc_etcd_kv now;
	int rc = txn(e, key, "CREATE", 0, value, lease, &now, err);

	if (rc < 0)
		return rc;
	if (held)
		*held = now;
	return rc ? 0 : rc_err_set(err, EEXIST, "key %s is held already (by '%s')", key, now.value);
}

int rc_etcd_swap(struct rc_etcd *e, const char *key, int64_t mod_revision, const char *value,
		 const char *lease, struct rc_etcd_kv *now, struct rc_err *err)
{
	struct rc_etcd_kv cur;
	int rc = txn(e, key, "MOD", mod_revision, value, lease, &cur, err);

	if (rc < 0)
		return rc;
	if (now)
		*now = cur;
	if (rc)
		return 0;
	return rc_err_set(err, ESTALE, "key %s changed since revision %lld (%s)", key,
			  (long long)mod_revision, cur.mod_revision ? cur.value : "it is gone");
}

/* The kvs of a range answer, each under prefix (n bytes) handed to each. */
static int range_walk(const char *server, const char *prefix, const json_t *reply,
		      rc_etcd_each_fn each, void *arg, struct rc_err *err)
{
	size_t i, n = strlen(prefix);
	json_t *kv;
	int rc = 0;

	json_array_foreach(json_object_get(reply, "kvs"), i, kv)
	{
		char key[RC_ETCD_KEY_MAX];
		struct rc_etcd_kv v;

		if (!json_is_string(json_object_get(kv, "key")) ||
		    rc_etcd_b64_decode(json_string_value(json_object_get(kv, "key")), key,
				       sizeof(key)) ||
		    etcd_kv_from(kv, &v))
			continue;
		/* only what was asked: a key outside the prefix is not read */
		if (strncmp(key, prefix, n)) {
			rc = rc_err_set(err, EPROTO,
					"etcd at %s answered a range of %s with key '%.64s'",
					server, prefix, key);
			break;
		}
		rc = each(arg, key, v.value);
		if (rc)
			break;
	}
	return rc;
}

int rc_etcd_range_parse(const char *text, size_t len, const char *prefix, rc_etcd_each_fn each,
			void *arg, struct rc_err *err)
{
	json_t *reply = json_loadb(text, len, 0, NULL);
	int rc;

	if (!reply)
		return rc_err_set(err, EPROTO, "a range answer that is not JSON");
	rc = range_walk("(given)", prefix, reply, each, arg, err);
	json_decref(reply);
	return rc;
}

int rc_etcd_range(struct rc_etcd *e, const char *prefix, rc_etcd_each_fn each, void *arg,
		  struct rc_err *err)
{
	return rc_etcd_range_rev(e, prefix, each, arg, NULL, err);
}

int rc_etcd_range_rev(struct rc_etcd *e, const char *prefix, rc_etcd_each_fn each, void *arg,
		      int64_t *rev, struct rc_err *err)
{
	char end[RC_ETCD_KEY_MAX];
	json_t *reply = NULL;
	size_t n = strlen(prefix);
	int rc;

	if (!n || n >= sizeof(end) || (unsigned char)prefix[n - 1] == 0xff)
		return rc_err_set(err, EINVAL, "a bad key prefix '%s'", prefix);
	memcpy(end, prefix, n + 1);
	end[n - 1]++; /* the prefix's range end: last byte plus one */
	rc = etcd_post(e, "kv/range",
		       json_pack("{s:o,s:o}", "key", etcd_b64_json(prefix), "range_end",
				 etcd_b64_json(end)),
		       &reply, err);
	if (rc)
		return rc;
	if (rev)
		*rev = num(json_object_get(json_object_get(reply, "header"), "revision"));
	rc = range_walk(e->server, prefix, reply, each, arg, err);
	json_decref(reply);
	return rc;
}
