// SPDX-License-Identifier: MIT
/*
 * etcd through its v3 JSON gateway (the HTTP face of its gRPC API, which
 * every etcd since 3.4 serves at /v3/). Keys and values travel in base64,
 * as the gateway wants bytes fields; 64-bit numbers come back as strings.
 * One request at a time per call, each bounded by the handle's timeout.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <rdmactl/config_core.h>
#include <rdmactl/etcd.h>
#include <rdmactl/etcd_core.h>

#include "etcd_int.h"

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

/* Decode padded base64, as etcd's gateway writes it, into buf, NUL-terminated;
 * -EINVAL for bad input (a character outside the alphabet, anything but
 * padding after the first '=', a length that is not a multiple of 4, more
 * padding than the data leaves, bits left over), no room, or a NUL byte
 * inside (keys and values are strings here). */
int rc_etcd_b64_decode(const char *s, char *buf, size_t len)
{
	const char *start = s;
	uint32_t v = 0;
	int bits = 0;
	size_t o = 0, pad;

	if (!len)
		return -EINVAL;
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
			buf[o] = (char)((v >> bits) & 0xff);
			if (!buf[o++])
				return -EINVAL;
		}
	}
	pad = strspn(s, "=");
	if (s[pad] || pad > 2 || (size_t)(s - start) % 4 + pad != (pad ? 4 : 0) ||
	    (v & ((1u << bits) - 1)))
		return -EINVAL;
	buf[o] = '\0';
	return 0;
}

json_t *etcd_b64_json(const char *s)
{
	char *enc = b64_encode(s, strlen(s));
	json_t *j = enc ? json_string(enc) : NULL;

	free(enc);
	return j;
}

struct body {
	char *data;
	size_t len;
	bool over; /* more than RC_ETCD_REPLY_MAX came: refused */
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct body *b = arg;
	size_t add = size * n;
	char *d;

	/* a hostile or broken endpoint does not fill our memory */
	if (add > RC_ETCD_REPLY_MAX - b->len) {
		b->over = true;
		return 0;
	}
	d = realloc(b->data, b->len + add + 1);

	if (!d)
		return 0;
	memcpy(d + b->len, p, add);
	b->data = d;
	b->len += add;
	d[b->len] = '\0';
	return add;
}

/* The curl handle of one request to /v3/PATH: URL, body, headers (the
 * token when given), TLS and the bounds every request has. */
struct curl_slist *etcd_curl_request(const struct rc_etcd *e, CURL *h, const char *path,
				     const char *text, const char *token)
{
	char url[RC_HOST_MAX + 64], auth[sizeof(e->token) + 32];
	struct curl_slist *hdr;

	snprintf(url, sizeof(url), "%s://%s/v3/%s", e->tls ? "https" : "http", e->server, path);
	hdr = e->cu.slist_append(NULL, "Content-Type: application/json");
	if (token && *token) {
		snprintf(auth, sizeof(auth), "Authorization: %s", token);
		hdr = e->cu.slist_append(hdr, auth);
	}
	e->cu.easy_setopt(h, CURLOPT_URL, url);
	e->cu.easy_setopt(h, CURLOPT_POSTFIELDS, text);
	e->cu.easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	e->cu.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	e->cu.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			  (long)(e->timeout_ms < 5000 ? e->timeout_ms : 5000));
	e->cu.easy_setopt(h, CURLOPT_PROXY, "");
	e->cu.easy_setopt(h, CURLOPT_PROTOCOLS_STR, e->tls ? "https" : "http");
	if (e->tls) {
		if (e->ca[0])
			e->cu.easy_setopt(h, CURLOPT_CAINFO, e->ca);
		if (e->cert[0]) {
			e->cu.easy_setopt(h, CURLOPT_SSLCERT, e->cert);
			e->cu.easy_setopt(h, CURLOPT_SSLKEY, e->key);
		}
	}
	return hdr;
}
/* POST text to /v3/PATH once, with the token if one is given; *reply is the
 * parsed answer, *status the HTTP status (0 when none came). */
static int post_once(const struct rc_etcd *e, const char *path, const char *text, const char *token,
		     json_t **reply, long *status, struct rc_err *err)
{
	struct body b = { 0 };
	CURL *h = e->cu.easy_init();
	struct curl_slist *hdr = NULL;
	CURLcode cc;
	int rc = 0;

	*reply = NULL;
	*status = 0;
	if (!h)
		return rc_err_set(err, ENOMEM, "out of memory");
	hdr = etcd_curl_request(e, h, path, text, token);
	e->cu.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	e->cu.easy_setopt(h, CURLOPT_WRITEDATA, &b);
	e->cu.easy_setopt(h, CURLOPT_TIMEOUT_MS,
			  (long)(e->timeout_ms < 10000 ? e->timeout_ms : 10000));
	cc = e->cu.easy_perform(h);
	if (b.over) {
		rc = rc_err_set(
			err, EMSGSIZE,
			"etcd at %s sent more than %d KiB for %s: refused (the cap on an answer)",
			e->server, RC_ETCD_REPLY_MAX >> 10, path);
		goto out;
	}
	if (cc != CURLE_OK) {
		rc = rc_err_set(err, cc == CURLE_OPERATION_TIMEDOUT ? ETIMEDOUT : ECONNREFUSED,
				"cannot reach etcd at %s%s: %s", e->server,
				e->tls ? " over TLS" : "", e->cu.easy_strerror(cc));
		goto out;
	}
	e->cu.easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	*reply = b.data ? json_loads(b.data, 0, NULL) : NULL;
	if (*status != 200 || !*reply) {
		json_t *m = *reply ? json_object_get(*reply, "message") : NULL;

		if (!m && *reply)
			m = json_object_get(*reply, "error");
		char text_said[160] = "";

		/* an answer that is not JSON (a proxy's, or the gateway's own
		 * refusal): its first line, printable bytes only */
		if (!*reply && b.data) {
			size_t k = 0;

			for (const char *q = b.data; *q && *q != '\n' && k + 1 < sizeof(text_said);
			     q++)
				text_said[k++] = *q >= 0x20 && *q < 0x7f ? *q : '?';
			text_said[k] = '\0';
		}
		/* 503 (etcd's "request timed out", "leader changed") and 429
		 * (too many requests) say: busy, ask again */
		rc = rc_err_set(err,
				*status == 401                     ? EACCES
				: *status == 503 || *status == 429 ? EAGAIN
								   : EPROTO,
				"etcd at %s answered %s with HTTP %ld%s%s", e->server, path,
				*status, json_is_string(m) || text_said[0] ? ": " : "",
				json_is_string(m) ? json_string_value(m) : text_said);
		json_decref(*reply);
		*reply = NULL;
	}
out:
	e->cu.slist_free_all(hdr);
	e->cu.easy_cleanup(h);
	free(b.data);
	return rc;
}

/* etcd's user and password for a token (auth/authenticate), into e->token. */
int etcd_authenticate(struct rc_etcd *e, struct rc_err *err)
{
	json_t *req = json_pack("{s:s,s:s}", "name", e->user, "password", e->password), *reply, *t;
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	struct rc_err why;
	long status;
	int rc;

	json_decref(req);
	if (!text)
		return rc_err_set(err, ENOMEM, "out of memory");
	rc = post_once(e, "auth/authenticate", text, NULL, &reply, &status, &why);
	memset(text, 0, strlen(text)); /* the password */
	free(text);
	if (rc && status) {
		const char *said = strstr(why.msg, " with HTTP ");

		said = said ? strstr(said, ": ") : NULL;
		return rc_err_set(err, EACCES, "etcd at %s refused user %s (HTTP %ld)%.400s",
				  e->server, e->user, status, said ? said : "");
	}
	if (rc)
		return rc_err_set(err, why.code, "%s", why.msg);
	t = json_object_get(reply, "token");
	if (!json_is_string(t) || !json_string_length(t) ||
	    json_string_length(t) >= sizeof(e->token) || strpbrk(json_string_value(t), "\r\n")) {
		json_decref(reply);
		return rc_err_set(err, EACCES, "etcd at %s gave user %s no usable token", e->server,
				  e->user);
	}
	pthread_mutex_lock(&e->tok_mu);
	snprintf(e->token, sizeof(e->token), "%s", json_string_value(t));
	pthread_mutex_unlock(&e->tok_mu);
	json_decref(reply);
	return 0;
}

/* POST a JSON body (stolen) to /v3/PATH; *reply is the parsed answer. With
 * a user, a token first, and a new one when etcd says it expired. */
int etcd_post(struct rc_etcd *e, const char *path, json_t *req, json_t **reply, struct rc_err *err)
{
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL, token[sizeof(e->token)];
	struct rc_err why = { 0 };
	long status = 0;
	int rc = 0;

	*reply = NULL;
	json_decref(req);
	if (!text)
		return rc_err_set(err, ENOMEM, "out of memory");
	for (int attempt = 0; attempt < 2; attempt++) {
		if (e->user[0]) {
			pthread_mutex_lock(&e->tok_mu);
			snprintf(token, sizeof(token), "%s", e->token);
			pthread_mutex_unlock(&e->tok_mu);
			if (!token[0] || attempt) {
				if ((rc = etcd_authenticate(e, &why)))
					break;
				pthread_mutex_lock(&e->tok_mu);
				snprintf(token, sizeof(token), "%s", e->token);
				pthread_mutex_unlock(&e->tok_mu);
			}
		} else {
			token[0] = '\0';
		}
		rc = post_once(e, path, text, token, reply, &status, &why);
		/* an expired token (etcd's simple tokens last minutes): once more */
		if (!(rc && e->user[0] && !attempt &&
		      (status == 401 || strstr(why.msg, "auth token"))))
			break;
	}
	free(text);
	if (rc && why.msg[0])
		rc_err_set(err, why.code, "%s", why.msg);
	return rc;
}

/* libcurl's calls into a->, the library opened for good (never closed: it
 * registers its TLS library's handlers for the life of the process), and
 * its global set-up run once per process (it is not thread-safe). The
 * library is libcurl.so.4, or the one $RDMACTL_CURL_LIB names. */
static pthread_mutex_t curl_mu = PTHREAD_MUTEX_INITIALIZER;
static bool curl_ready;

static int curl_load(struct curl_api *a, struct rc_err *err)
{
	const char *lib = rc_config()->curl_lib;
	CURLcode (*global_init)(long);
	void *h;

	if (!lib || !*lib)
		lib = "libcurl.so.4";
	if (!(h = dlopen(lib, RTLD_NOW | RTLD_LOCAL)))
		return rc_err_set(
			err, ENOPKG,
			"etcd needs libcurl, which cannot be loaded: %s (Debian's package: libcurl4)",
			dlerror());
#define SYM(f, n) (*(void **)&(f) = dlsym(h, n))
	if (!SYM(a->easy_init, "curl_easy_init") || !SYM(a->easy_setopt, "curl_easy_setopt") ||
	    !SYM(a->easy_perform, "curl_easy_perform") ||
	    !SYM(a->easy_getinfo, "curl_easy_getinfo") ||
	    !SYM(a->easy_cleanup, "curl_easy_cleanup") ||
	    !SYM(a->easy_strerror, "curl_easy_strerror") ||
	    !SYM(a->slist_append, "curl_slist_append") ||
	    !SYM(a->slist_free_all, "curl_slist_free_all") || !SYM(global_init, "curl_global_init"))
		return rc_err_set(err, ENOPKG, "%s is not a libcurl: it lacks a needed call", lib);
#undef SYM
	pthread_mutex_lock(&curl_mu);
	if (!curl_ready)
		curl_ready = global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
	pthread_mutex_unlock(&curl_mu);
	return 0;
}

int rc_etcd_url_parse(const char *url, char *server, size_t slen, char *path, size_t plen,
		      struct rc_err *err)
{
	const char *hp, *slash;
	struct rc_target t;
	char tmp[RC_HOST_MAX + 16];
	size_t n;

	if (!url || strncmp(url, "etcd://", 7))
		return rc_err_set(err, EINVAL, "'%s' is not an etcd://HOST:PORT/... address",
				  url ? url : "");
	hp = url + 7;
	slash = strchr(hp[0] == '[' ? hp + strcspn(hp, "]") : hp, '/');
	n = slash ? (size_t)(slash - hp) : strlen(hp);
	if (!slash || !slash[1] || n == 0 || n >= sizeof(tmp) || n >= slen ||
	    strlen(slash + 1) >= plen)
		return rc_err_set(err, EINVAL, "'%s': expected etcd://HOST:PORT/PATH", url);
	memcpy(tmp, hp, n);
	tmp[n] = '\0';
	/* HOST:PORT by the target grammar, the port given (no rdmactl default). */
	if (rc_parse_target(tmp, &t) || t.region[0] || n <= strlen(t.port) ||
	    strcmp(tmp + n - strlen(t.port), t.port) || tmp[n - strlen(t.port) - 1] != ':')
		return rc_err_set(err, EINVAL, "'%s': '%s' is not HOST:PORT", url, tmp);
	memcpy(server, tmp, n + 1);
	snprintf(path, plen, "%s", slash + 1);
	return 0;
}

/* The file v (the configuration's var), readable, into buf. */
static int env_file(const char *var, const char *v, char *buf, size_t len, struct rc_err *err)
{

	buf[0] = '\0';
	if (!v || !*v)
		return 0;
	if (strlen(v) >= len)
		return rc_err_set(err, ENAMETOOLONG, "%s: the path is too long", var);
	if (access(v, R_OK))
		return rc_err_set(err, errno, "%s=%s: %s", var, v, strerror(errno));
	snprintf(buf, len, "%s", v);
	return 0;
}

/* The password from RDMACTL_ETCD_PASSWORD_FILE (its first line) or
 * RDMACTL_ETCD_PASSWORD. */
static int password_env(struct rc_etcd *e, struct rc_err *err)
{
	const char *path = rc_config()->etcd_password_file, *v = rc_config()->etcd_password;
	FILE *fp;
	size_t n;

	if (!path || !*path) {
		if (v && strlen(v) >= sizeof(e->password))
			return rc_err_set(err, EINVAL, "RDMACTL_ETCD_PASSWORD is too long");
		snprintf(e->password, sizeof(e->password), "%s", v ? v : "");
		return 0;
	}
	if (!(fp = fopen(path, "r")))
		return rc_err_set(err, errno, "RDMACTL_ETCD_PASSWORD_FILE=%s: %s", path,
				  strerror(errno));
	n = fread(e->password, 1, sizeof(e->password) - 1, fp);
	fclose(fp);
	e->password[n] = '\0';
	e->password[strcspn(e->password, "\r\n")] = '\0';
	return 0;
}

/* How to reach etcd, from the configuration (rdmactl/config.h, filled from the environment by the program): TLS with RDMACTL_ETCD_CA (the
 * CA that signed the server's certificate) and RDMACTL_ETCD_CERT and
 * RDMACTL_ETCD_KEY (a client certificate), or RDMACTL_ETCD_TLS=1 with the
 * system's CAs; etcd's user RDMACTL_ETCD_USER with its password. */
static int config_env(struct rc_etcd *e, struct rc_err *err)
{
	const struct rc_config *c = rc_config();
	const char *tls = c->etcd_tls, *user = c->etcd_user;
	int rc;

	if ((rc = env_file("RDMACTL_ETCD_CA", c->etcd_ca, e->ca, sizeof(e->ca), err)) ||
	    (rc = env_file("RDMACTL_ETCD_CERT", c->etcd_cert, e->cert, sizeof(e->cert), err)) ||
	    (rc = env_file("RDMACTL_ETCD_KEY", c->etcd_key, e->key, sizeof(e->key), err)))
		return rc;
	if (!e->cert[0] != !e->key[0])
		return rc_err_set(err, EINVAL, "RDMACTL_ETCD_CERT and RDMACTL_ETCD_KEY go together");
	if (tls && *tls && strcmp(tls, "0") && strcmp(tls, "1"))
		return rc_err_set(err, EINVAL, "RDMACTL_ETCD_TLS='%s': expected 0 or 1", tls);
	e->tls = e->ca[0] || e->cert[0] || (tls && !strcmp(tls, "1"));
	if ((rc = password_env(e, err)))
		return rc;
	if (user && strlen(user) >= sizeof(e->user))
		return rc_err_set(err, EINVAL, "RDMACTL_ETCD_USER is too long");
	snprintf(e->user, sizeof(e->user), "%s", user ? user : "");
	if (e->user[0] && !e->password[0])
		return rc_err_set(
			err, EINVAL,
			"RDMACTL_ETCD_USER %s needs a password: RDMACTL_ETCD_PASSWORD_FILE or RDMACTL_ETCD_PASSWORD",
			e->user);
	if (!e->user[0] && e->password[0])
		return rc_err_set(err, EINVAL, "an etcd password without RDMACTL_ETCD_USER");
	return 0;
}

int rc_etcd_open(const char *server, int timeout_ms, struct rc_etcd **out, struct rc_err *err)
{
	struct rc_etcd *e;
	int rc;

	if (!server || !*server || strlen(server) >= sizeof(e->server))
		return rc_err_set(err, EINVAL, "an etcd server is HOST:PORT");
	e = calloc(1, sizeof(*e));
	if (!e)
		return rc_err_set(err, ENOMEM, "out of memory");
	if ((rc = config_env(e, err)) || (rc = curl_load(&e->cu, err))) {
		memset(e, 0, sizeof(*e));
		free(e);
		return rc;
	}
	snprintf(e->server, sizeof(e->server), "%s", server);
	e->timeout_ms = timeout_ms > 0 ? timeout_ms : 10000;
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	pthread_mutex_init(&e->tok_mu, NULL);
	*out = e;
	return 0;
}

const char *rc_etcd_server(const struct rc_etcd *e)
{
	return e->server;
}

const char *rc_etcd_lease_id(const struct rc_etcd *e)
{
	return e->lease;
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
		 * to expire, its keys go away, which is what the readers watch. */
		if (!etcd_post(e, "lease/keepalive", json_pack("{s:s}", "ID", e->lease), &reply,
			       NULL))
			json_decref(reply);
		pthread_mutex_lock(&e->mu);
	}
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

int rc_etcd_lease(struct rc_etcd *e, int ttl_s, struct rc_err *err)
{
	json_t *reply = NULL, *id;
	int rc;

	if (e->lease[0])
		return rc_err_set(err, EEXIST, "this etcd handle holds a lease already");
	e->ttl = ttl_s > 0 ? ttl_s : 10;
	rc = etcd_post(e, "lease/grant", json_pack("{s:i}", "TTL", e->ttl), &reply, err);
	if (rc)
		return rc;
	id = json_object_get(reply, "ID");
	if (json_is_string(id))
		snprintf(e->lease, sizeof(e->lease), "%s", json_string_value(id));
	else if (json_is_integer(id))
		snprintf(e->lease, sizeof(e->lease), "%lld", (long long)json_integer_value(id));
	json_decref(reply);
	if (!e->lease[0])
		return rc_err_set(err, EPROTO, "etcd at %s granted no lease", e->server);
	if (pthread_create(&e->keepalive, NULL, keepalive_main, e) == 0)
		e->keepalive_on = true;
	return 0;
}

void rc_etcd_close(struct rc_etcd *e)
{
	json_t *reply = NULL;

	if (!e)
		return;
	if (e->keepalive_on) {
		pthread_mutex_lock(&e->mu);
		e->stop = true;
		pthread_cond_signal(&e->cv);
		pthread_mutex_unlock(&e->mu);
		pthread_join(e->keepalive, NULL);
	}
	/* Revoking the lease drops its keys at once. */
	if (e->lease[0] &&
	    !etcd_post(e, "lease/revoke", json_pack("{s:s}", "ID", e->lease), &reply, NULL))
		json_decref(reply);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->cv);
	pthread_mutex_destroy(&e->tok_mu);
	memset(e, 0, sizeof(*e)); /* the password and the token */
	free(e);
}
