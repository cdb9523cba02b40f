// SPDX-License-Identifier: MIT
/*
 * Rendezvous through etcd's v3 JSON gateway (the HTTP face of its gRPC API,
 * which every etcd since 3.4 serves at /v3/). Each rank puts its endpoint
 * under rdmactl/JOB/rank/NNNNN with a lease that a thread keeps alive, only
 * if no other process holds that key (a transaction on its create revision),
 * then reads the job prefix with a range until every rank is there. A dead
 * rank's lease expires and its key goes with it. Keys and values travel in
 * base64, as the gateway wants bytes fields.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <rdmactl/ops.h>

#include "rdv_int.h"

#define POLL_MS 200

struct rc_etcd {
	char server[RC_HOST_MAX + 8];
	char job[128];
	char prefix[192];
	int rank;
	int world;
	int timeout_ms;
	int ttl;
	char lease[32];
	bool keepalive_on;
	bool stop;
	pthread_t keepalive;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const char *s, size_t n)
{
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)(unsigned char)s[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)(unsigned char)s[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)s[i + 2];
		*o++ = b64chars[(v >> 18) & 63];
		*o++ = b64chars[(v >> 12) & 63];
		*o++ = i + 1 < n ? b64chars[(v >> 6) & 63] : '=';
		*o++ = i + 2 < n ? b64chars[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* Decode into buf (NUL-terminated); -EINVAL for bad input or no room. */
static int b64_decode(const char *s, char *buf, size_t len)
{
	uint32_t v = 0;
	int bits = 0;
	size_t o = 0;

	for (; *s && *s != '='; s++) {
		const char *p = strchr(b64chars, *s);

		if (!p)
			return -EINVAL;
		v = v << 6 | (uint32_t)(p - b64chars);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o + 1 >= len)
				return -EINVAL;
			buf[o++] = (char)((v >> bits) & 0xff);
		}
	}
	buf[o] = '\0';
	return 0;
}

struct body {
	char *data;
	size_t len;
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct body *b = arg;
	size_t add = size * n;
	char *d = realloc(b->data, b->len + add + 1);

	if (!d)
		return 0;
	memcpy(d + b->len, p, add);
	b->data = d;
	b->len += add;
	d[b->len] = '\0';
	return add;
}

/* POST a JSON body (stolen) to /v3/PATH; *reply is the parsed answer. */
static int post(const struct rc_etcd *e, const char *path, json_t *req, json_t **reply,
		struct rc_err *err)
{
	char url[RC_HOST_MAX + 64], *text = json_dumps(req, JSON_COMPACT);
	struct body b = { 0 };
	CURL *h = curl_easy_init();
	long status = 0;
	CURLcode cc;
	int rc = 0;

	json_decref(req);
	if (!text || !h) {
		rc = rc_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	snprintf(url, sizeof(url), "http://%s/v3/%s", e->server, path);
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");

	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, text);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(e->timeout_ms < 5000 ? e->timeout_ms : 5000));
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(e->timeout_ms < 10000 ? e->timeout_ms : 10000));
	curl_easy_setopt(h, CURLOPT_PROXY, "");
	cc = curl_easy_perform(h);
	curl_slist_free_all(hdr);
	if (cc != CURLE_OK) {
		rc = rc_err_set(err, cc == CURLE_OPERATION_TIMEDOUT ? ETIMEDOUT : ECONNREFUSED,
				"cannot reach etcd at %s: %s", e->server, curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	*reply = b.data ? json_loads(b.data, 0, NULL) : NULL;
	if (status != 200 || !*reply) {
		json_t *m = *reply ? json_object_get(*reply, "message") : NULL;

		if (!m && *reply)
			m = json_object_get(*reply, "error");
		rc = rc_err_set(err, EPROTO, "etcd at %s answered %s with HTTP %ld%s%s", e->server,
				path, status, json_is_string(m) ? ": " : "",
				json_is_string(m) ? json_string_value(m) : "");
		json_decref(*reply);
		*reply = NULL;
	}
out:
	if (h)
		curl_easy_cleanup(h);
	free(b.data);
	free(text);
	return rc;
}

static json_t *b64_json(const char *s)
{
	char *enc = b64_encode(s, strlen(s));
	json_t *j = enc ? json_string(enc) : NULL;

	free(enc);
	return j;
}

static void *keepalive_main(void *arg)
{
	struct rc_etcd *e = arg;

	pthread_mutex_lock(&e->mu);
	while (!e->stop) {
		struct timespec ts;
		json_t *reply = NULL;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += e->ttl / 3 > 0 ? e->ttl / 3 : 1;
		pthread_cond_timedwait(&e->cv, &e->mu, &ts);
		if (e->stop)
			break;
		pthread_mutex_unlock(&e->mu);
		/* A failed keepalive is tried again at the next tick; were the lease
		 * to expire, the others see this rank's key go away. */
		if (!post(e, "lease/keepalive", json_pack("{s:s}", "ID", e->lease), &reply, NULL))
			json_decref(reply);
		pthread_mutex_lock(&e->mu);
	}
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

static int grant(struct rc_etcd *e, struct rc_err *err);

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

int etcd_open(const char *url, int rank, int world, int timeout_ms, struct rc_etcd **out,
	      struct rc_err *err)
{
	const char *hp = url + strlen("etcd://"), *slash = strchr(hp, '/');
	struct rc_etcd *e;
	struct rc_endpoint ep;
	char server[RC_HOST_MAX + 8];

	if (!slash || (size_t)(slash - hp) >= sizeof(server) || !slash[1] ||
	    strlen(slash + 1) >= sizeof(e->job))
		return rc_err_set(err, EINVAL, "rendezvous '%s': expected etcd://HOST:PORT/JOB", url);
	memcpy(server, hp, (size_t)(slash - hp));
	server[slash - hp] = '\0';
	if (rc_endpoint_parse(server, &ep))
		return rc_err_set(err, EINVAL, "rendezvous '%s': '%s' is not HOST:PORT", url, server);
	for (const char *p = slash + 1; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
			return rc_err_set(err, EINVAL,
					  "rendezvous '%s': the job name takes letters, digits, '-', '_' and '.'",
					  url);
	e = calloc(1, sizeof(*e));
	if (!e)
		return rc_err_set(err, ENOMEM, "out of memory");
	pthread_once(&curl_once, curl_init);
	snprintf(e->server, sizeof(e->server), "%s", server);
	snprintf(e->job, sizeof(e->job), "%s", slash + 1);
	snprintf(e->prefix, sizeof(e->prefix), "rdmactl/%s/rank/", e->job);
	e->rank = rank;
	e->world = world;
	e->timeout_ms = timeout_ms > 0 ? timeout_ms : 10000;
	e->ttl = e->timeout_ms / 1000 < 3 ? 3 : e->timeout_ms / 1000;
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	int rc = grant(e, err);

	if (rc) {
		etcd_close(e);
		return rc;
	}
	*out = e;
	return 0;
}

static int grant(struct rc_etcd *e, struct rc_err *err)
{
	json_t *reply = NULL, *id;
	int rc;

	rc = post(e, "lease/grant", json_pack("{s:i}", "TTL", e->ttl), &reply, err);
	if (rc)
		return rc;
	id = json_object_get(reply, "ID");
	if (!json_is_string(id) && !json_is_integer(id)) {
		json_decref(reply);
		return rc_err_set(err, EPROTO, "etcd at %s granted no lease", e->server);
	}
	if (json_is_string(id))
		snprintf(e->lease, sizeof(e->lease), "%s", json_string_value(id));
	else
		snprintf(e->lease, sizeof(e->lease), "%lld", (long long)json_integer_value(id));
	json_decref(reply);
	return 0;
}

static int claim(struct rc_etcd *e, const struct rc_endpoint *self, struct rc_err *err)
{
	char key[256], val[RC_EP_MAX], held[RC_EP_MAX] = "?";
	json_t *reply = NULL, *kv;
	int rc;

	snprintf(key, sizeof(key), "%s%05d", e->prefix, e->rank);
	endpoint_format(self, e->world, val, sizeof(val));
	json_t *req = json_pack(
		"{s:[{s:o,s:s,s:s,s:s}],s:[{s:{s:o,s:o,s:s}}],s:[{s:{s:o}}]}", "compare", "key",
		b64_json(key), "result", "EQUAL", "target", "CREATE", "create_revision", "0",
		"success", "request_put", "key", b64_json(key), "value", b64_json(val), "lease",
		e->lease, "failure", "request_range", "key", b64_json(key));

	rc = post(e, "kv/txn", req, &reply, err);
	if (rc)
		return rc;
	if (json_is_true(json_object_get(reply, "succeeded"))) {
		json_decref(reply);
		return 0;
	}
	kv = json_object_get(json_array_get(json_object_get(reply, "responses"), 0),
			     "response_range");
	kv = json_array_get(json_object_get(kv, "kvs"), 0);
	if (json_is_string(json_object_get(kv, "value")))
		b64_decode(json_string_value(json_object_get(kv, "value")), held, sizeof(held));
	json_decref(reply);
	return rc_err_set(err, EEXIST,
			  "rank %d of job %s is claimed already by %s (two processes with one rank? "
			  "a dead one's claim goes with its lease within %d s)",
			  e->rank, e->job, held, e->ttl);
}

/* Read the job prefix; fills all[] and have[]; returns ranks seen. */
static int read_ranks(struct rc_etcd *e, struct rc_endpoint *all, bool *have, struct rc_err *err)
{
	char end[192];
	json_t *reply = NULL, *kvs, *kv;
	size_t i;
	int rc, seen = 0;

	snprintf(end, sizeof(end), "%s", e->prefix);
	end[strlen(end) - 1]++; /* the prefix's range end: last byte plus one */
	rc = post(e, "kv/range",
		  json_pack("{s:o,s:o}", "key", b64_json(e->prefix), "range_end", b64_json(end)),
		  &reply, err);
	if (rc)
		return rc;
	kvs = json_object_get(reply, "kvs");
	json_array_foreach(kvs, i, kv) {
		char key[256], val[RC_EP_MAX];
		struct rc_endpoint ep;
		int rank, world;

		if (!json_is_string(json_object_get(kv, "key")) ||
		    !json_is_string(json_object_get(kv, "value")) ||
		    b64_decode(json_string_value(json_object_get(kv, "key")), key, sizeof(key)) ||
		    b64_decode(json_string_value(json_object_get(kv, "value")), val, sizeof(val)))
			continue;
		rank = atoi(key + strlen(e->prefix));
		if (rank < 0 || endpoint_scan(val, &ep, &world))
			continue;
		if (world != e->world) {
			json_decref(reply);
			return rc_err_set(err, EINVAL,
					  "rank %d of job %s runs with world size %d, this rank with %d",
					  rank, e->job, world, e->world);
		}
		if (rank >= e->world || have[rank])
			continue;
		all[rank] = ep;
		have[rank] = true;
		seen++;
	}
	json_decref(reply);
	return seen;
}

int etcd_exchange(struct rc_etcd *e, const struct rc_endpoint *self, struct rc_endpoint *all,
		  struct rc_err *err)
{
	double deadline = rc_now() + e->timeout_ms / 1000.0;
	bool *have = calloc((size_t)e->world, sizeof(bool));
	char missing[256];
	int rc;

	if (!have)
		return rc_err_set(err, ENOMEM, "out of memory");
	rc = claim(e, self, err);
	if (rc)
		goto out;
	if (pthread_create(&e->keepalive, NULL, keepalive_main, e) == 0)
		e->keepalive_on = true;
	for (;;) {
		memset(have, 0, (size_t)e->world * sizeof(bool));
		rc = read_ranks(e, all, have, err);
		if (rc < 0)
			goto out;
		if (rc == e->world) {
			rc = 0;
			goto out;
		}
		if (rc_now() >= deadline)
			break;
		usleep(POLL_MS * 1000);
	}
	ranks_missing(have, e->world, missing, sizeof(missing));
	rc = rc_err_set(err, ETIMEDOUT, "rank %s never joined job %s at etcd %s within %d ms",
			missing, e->job, e->server, e->timeout_ms);
out:
	free(have);
	return rc;
}

int etcd_close(struct rc_etcd *e)
{
	json_t *reply = NULL;

	if (e->keepalive_on) {
		pthread_mutex_lock(&e->mu);
		e->stop = true;
		pthread_cond_signal(&e->cv);
		pthread_mutex_unlock(&e->mu);
		pthread_join(e->keepalive, NULL);
	}
	/* Revoking the lease drops this rank's key at once. */
	if (e->lease[0] && !post(e, "lease/revoke", json_pack("{s:s}", "ID", e->lease), &reply, NULL))
		json_decref(reply);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->cv);
	free(e);
	return 0;
}
