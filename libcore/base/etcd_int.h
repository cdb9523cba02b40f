/* SPDX-License-Identifier: MIT */
/*
 * Inside base/: the etcd client's handle and the requests its parts share
 * (etcd.c: the connection, authentication, leases; etcd_kv.c: keys and
 * ranges; etcd_watch.c: watches). Not installed.
 */
#ifndef RDMACTL_ETCD_INT_H
#define RDMACTL_ETCD_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <curl/curl.h>
#include <jansson.h>
#include <rdmactl/etcd.h>

/* libcurl, opened when an etcd client is (rc_etcd_open), not when the
 * process starts: its dependencies (TLS, HTTP/2, LDAP, Kerberos, ...) are
 * some forty shared libraries, and loading them cost every rdmactl process
 * about 160 ms on the SoftRoCE test guest, etcd or not. */
struct curl_api {
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	void (*easy_cleanup)(CURL *);
	const char *(*easy_strerror)(CURLcode);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
};

struct rc_etcd {
	struct curl_api cu;
	char server[RC_HOST_MAX + 8];
	int timeout_ms;
	int ttl;
	char lease[32];
	bool keepalive_on;
	bool stop;
	pthread_t keepalive;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* from the environment (rc_etcd_open): TLS, and etcd's own users */
	bool tls;
	char ca[4096], cert[4096], key[4096];
	char user[128];
	char password[1024];
	pthread_mutex_t tok_mu; /* the token, shared with the keepalive thread */
	char token[512];
};

/* A string as the gateway's base64 bytes field. */
json_t *etcd_b64_json(const char *s);
/* A request on handle h to /v3/PATH with body text and etcd's token (NULL:
 * none): its URL, TLS and timeouts set; the headers returned go to
 * slist_free_all after the request. */
struct curl_slist *etcd_curl_request(const struct rc_etcd *e, CURL *h, const char *path,
				     const char *text, const char *token);
/* A token from etcd's auth/authenticate for the handle's user. */
int etcd_authenticate(struct rc_etcd *e, struct rc_err *err);
/* POST req (taken) to /v3/PATH and parse the answer into *reply; the
 * token is renewed once if etcd says it expired. */
int etcd_post(struct rc_etcd *e, const char *path, json_t *req, json_t **reply, struct rc_err *err);
/* A key-value of a range or a watch event, decoded. */
int etcd_kv_from(const json_t *j, struct rc_etcd_kv *kv);

#endif
