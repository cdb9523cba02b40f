// SPDX-License-Identifier: MIT
/*
 * A watch on a prefix through the gateway's /v3/watch: one HTTP answer that
 * streams a JSON message a line, as events come. Each PUT under the prefix
 * goes to each(); done() is asked after every message, and true ends the
 * watch. A DELETE is no join and is passed over.
 */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd_int.h"
#include <rdmactl/etcd_core.h>

struct watch {
	const struct rc_etcd *e;
	const char *prefix;
	rc_etcd_each_fn each;
	bool (*done)(void *arg);
	void *arg;
	char *line; /* the message coming in, up to its newline */
	size_t len, cap;
	int rc; /* what stopped it: 1 done, or -errno */
	struct rc_err *err;
};

static int watch_events(struct watch *w, const json_t *events)
{
	size_t i, n = strlen(w->prefix);
	json_t *ev;

	json_array_foreach(events, i, ev)
	{
		const json_t *kv = json_object_get(ev, "kv"), *type = json_object_get(ev, "type");
		char key[RC_ETCD_KEY_MAX];
		struct rc_etcd_kv v;
		int rc;

		if (json_is_string(type) && strcmp(json_string_value(type), "PUT"))
			continue;
		if (!json_is_string(json_object_get(kv, "key")) ||
		    rc_etcd_b64_decode(json_string_value(json_object_get(kv, "key")), key,
				       sizeof(key)) ||
		    etcd_kv_from(kv, &v))
			continue;
		if (strncmp(key, w->prefix, n))
			return rc_err_set(w->err, EPROTO,
					  "etcd at %s answered a watch of %s with key '%.64s'",
					  w->e->server, w->prefix, key);
		if ((rc = w->each(w->arg, key, v.value)))
			return rc;
	}
	return 0;
}

static int watch_message(struct watch *w, const char *text, size_t len)
{
	json_t *m = json_loadb(text, len, 0, NULL), *res = json_object_get(m, "result"), *why;
	int rc = 0;

	if (!m)
		return rc_err_set(w->err, EPROTO,
				  "etcd at %s sent a watch message that is not JSON", w->e->server);
	if (!json_is_object(res)) {
		why = json_object_get(json_object_get(m, "error"), "message");
		rc = rc_err_set(w->err, EPROTO, "etcd at %s ended the watch of %s%s%.200s",
				w->e->server, w->prefix, json_is_string(why) ? ": " : "",
				json_is_string(why) ? json_string_value(why) : "");
	} else if (json_is_true(json_object_get(res, "canceled"))) {
		why = json_object_get(res, "cancel_reason");
		rc = rc_err_set(w->err, EPROTO, "etcd at %s canceled the watch of %s%s%.200s",
				w->e->server, w->prefix, json_is_string(why) ? ": " : "",
				json_is_string(why) ? json_string_value(why) : "");
	} else {
		rc = watch_events(w, json_object_get(res, "events"));
	}
	json_decref(m);
	return rc;
}

static size_t on_watch(char *p, size_t size, size_t n, void *arg)
{
	struct watch *w = arg;
	size_t add = size * n;

	for (size_t i = 0; i < add; i++) {
		if (p[i] != '\n') {
			if (w->len >= RC_ETCD_REPLY_MAX) {
				w->rc = rc_err_set(
					w->err, EMSGSIZE,
					"etcd at %s sent a watch message of more than %d KiB: refused",
					w->e->server, RC_ETCD_REPLY_MAX >> 10);
				return 0;
			}
			if (w->len == w->cap) {
				size_t cap = w->cap ? 2 * w->cap : 4096;
				char *l = realloc(w->line, cap);

				if (!l) {
					w->rc = rc_err_set(w->err, ENOMEM, "out of memory");
					return 0;
				}
				w->line = l;
				w->cap = cap;
			}
			w->line[w->len++] = p[i];
			continue;
		}
		if (w->len && (w->rc = watch_message(w, w->line, w->len)))
			return 0;
		w->len = 0;
		if (w->done(w->arg)) {
			w->rc = 1;
			return 0; /* ends the transfer: the watch did its job */
		}
	}
	return add;
}

static bool never_done(void *arg)
{
	(void)arg;
	return false;
}

int rc_etcd_watch_parse(const char *text, size_t len, const char *prefix, rc_etcd_each_fn each,
			void *arg, struct rc_err *err)
{
	static const struct rc_etcd given = { .server = "(given)" };
	struct watch w = { .e = &given,
			   .prefix = prefix,
			   .each = each,
			   .done = never_done,
			   .arg = arg,
			   .err = err };

	on_watch((char *)(uintptr_t)text, 1, len, &w);
	free(w.line);
	return w.rc < 0 ? w.rc : 0;
}

int rc_etcd_watch(struct rc_etcd *e, const char *prefix, int64_t from_rev, int timeout_ms,
		  rc_etcd_each_fn each, bool (*done)(void *arg), void *arg, struct rc_err *err)
{
	struct watch w = { .e = e,
			   .prefix = prefix,
			   .each = each,
			   .done = done,
			   .arg = arg,
			   .err = err };
	char end[RC_ETCD_KEY_MAX], token[sizeof(e->token)] = "", *text = NULL;
	size_t n = strlen(prefix);
	struct curl_slist *hdr = NULL;
	json_t *req;
	CURL *h;
	CURLcode cc;
	long status = 0;
	int rc;

	if (!n || n >= sizeof(end) || (unsigned char)prefix[n - 1] == 0xff)
		return rc_err_set(err, EINVAL, "a bad key prefix '%s'", prefix);
	memcpy(end, prefix, n + 1);
	end[n - 1]++;
	if (e->user[0]) {
		pthread_mutex_lock(&e->tok_mu);
		snprintf(token, sizeof(token), "%s", e->token);
		pthread_mutex_unlock(&e->tok_mu);
		if (!token[0] && (rc = etcd_authenticate(e, err)))
			return rc;
		pthread_mutex_lock(&e->tok_mu);
		snprintf(token, sizeof(token), "%s", e->token);
		pthread_mutex_unlock(&e->tok_mu);
	}
	req = json_pack("{s:{s:o,s:o,s:I}}", "create_request", "key", etcd_b64_json(prefix),
			"range_end", etcd_b64_json(end), "start_revision", (json_int_t)from_rev);
	text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (!text || !(h = e->cu.easy_init())) {
		free(text);
		return rc_err_set(err, ENOMEM, "out of memory");
	}
	hdr = etcd_curl_request(e, h, "watch", text, token);
	e->cu.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_watch);
	e->cu.easy_setopt(h, CURLOPT_WRITEDATA, &w);
	e->cu.easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout_ms > 0 ? timeout_ms : 1));
	cc = e->cu.easy_perform(h);
	e->cu.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (w.rc == 1)
		rc = 0;
	else if (w.rc)
		rc = w.rc;
	else if (cc == CURLE_OPERATION_TIMEDOUT)
		rc = -ETIMEDOUT; /* the caller names what it waited for */
	else if (cc != CURLE_OK)
		rc = rc_err_set(err, ECONNREFUSED, "cannot watch %s at etcd %s: %s", prefix,
				e->server, e->cu.easy_strerror(cc));
	else
		rc = rc_err_set(err, EPROTO, "etcd at %s ended the watch of %s (HTTP %ld)",
				e->server, prefix, status);
	e->cu.slist_free_all(hdr);
	e->cu.easy_cleanup(h);
	free(text);
	free(w.line);
	return rc;
}
