// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmds.h"
#include "client_cmds.h"
#include "session.h"

int etcd_name_parse(struct ctx *ctx, const char *cmd, const char *s, struct etcd_name *n)
{
	char path[RC_ETCD_KEY_MAX], *slash;
	struct rc_err e;

	memset(n, 0, sizeof(*n));
	if (rc_etcd_url_parse(s, n->server, sizeof(n->server), path, sizeof(path), &e) ||
	    !(slash = strrchr(path, '/')) || (size_t)(slash - path) >= sizeof(n->ns))
		return usage_err(ctx, "%s: invalid target '%s': expected etcd://HOST:PORT/NS/REGION",
				 cmd, s);
	*slash = '\0';
	memcpy(n->ns, path, (size_t)(slash - path) + 1);
	if (!rc_etcd_ns_valid(n->ns) || !rc_region_name_valid(slash + 1))
		return usage_err(
			ctx,
			"%s: invalid target '%s': expected etcd://HOST:PORT/NS/REGION (NS: letters, digits, '-', '_', '.')",
			cmd, s);
	snprintf(n->region, sizeof(n->region), "%s", slash + 1);
	rc_etcd_region_key(n->ns, n->region, n->key, sizeof(n->key));
	return 0;
}

int etcd_name_resolve(struct ctx *ctx, const struct etcd_name *n, struct rc_target *t,
		      struct rc_etcd_region *rec)
{
	struct rc_etcd_region own, *r = rec ? rec : &own;
	struct rc_etcd_kv got;
	struct rc_etcd *e;
	struct rc_err err;
	int rc = rc_etcd_open(n->server, ctx->timeout_ms, &e, &err);

	if (!rc) {
		rc = rc_etcd_get(e, n->key, &got, &err);
		rc_etcd_close(e);
	}
	if (rc == -ENOENT)
		return fail(ctx, rc,
			    "no region '%s' is published in etcd at %s (no key %s: is its server running with --publish etcd://%s/%s?)",
			    n->region, n->server, n->key, n->server, n->ns);
	if (rc)
		return fail(ctx, rc, "%s", ERR_TEXT(err));
	if (rc_etcd_region_parse(got.value, r) || strcmp(r->region, n->region))
		return fail(ctx, -EPROTO, "etcd at %s: key %s holds no region record of rdmactl's",
			    n->server, n->key);
	if (n->token && !rc_etcd_region_verify(r, n->key, got.lease, n->token))
		return fail(ctx, -EKEYREJECTED,
			    "etcd record %s %s: refusing before connecting (a forged record, one "
			    "copied from another key, or one published with another token)",
			    n->key,
			    r->mac[0] ? "carries a MAC the token does not make" : "carries no MAC");
	memset(t, 0, sizeof(*t));
	snprintf(t->host, sizeof(t->host), "%s", r->host);
	snprintf(t->port, sizeof(t->port), "%s", r->port);
	snprintf(t->region, sizeof(t->region), "%s", r->region);
	if (ctx->verbose)
		out_log(&ctx->out, "etcd %s names %s:%s", n->key, t->host, t->port);
	return 0;
}

/* The target, an etcd record's checked against token (NULL: none). */
static int target_with(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		       struct rc_target *t, const char *token)
{
	struct rc_target tmp;

	if (v->npos != 1)
		return usage_err(
			ctx,
			"%s: give exactly one target, HOST:PORT/REGION (see 'rdmactl %s --help')",
			c->name, c->name);
	if (!strncmp(v->pos[0], "etcd://", 7)) {
		struct etcd_name n;
		int rc = etcd_name_parse(ctx, c->name, v->pos[0], &n);

		n.token = token;
		return rc || !t ? rc : etcd_name_resolve(ctx, &n, t, NULL);
	}
	if (rc_parse_target(v->pos[0], t ? t : &tmp))
		return usage_err(
			ctx,
			"%s: invalid target '%s': expected HOST:PORT/REGION, HOST/REGION, [IPV6]:PORT/REGION or etcd://HOST:PORT/NS/REGION",
			c->name, v->pos[0]);
	return 0;
}

int client_target(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		  struct rc_target *t)
{
	return target_with(ctx, c, v, t, NULL);
}

/* Everything a connection was opened with, but the region: a kept
 * connection serves any region of its server. */
static void client_key(char *key, size_t len, const struct rc_target *t,
		       const struct rc_client_opts *o)
{
	snprintf(key, len, "%s|%s|%s|%s|%s|%d|%d|%d|%d", t->host, t->port, o->token ? o->token : "",
		 o->conn.bind_addr ? o->conn.bind_addr : "",
		 o->conn.dev_name ? o->conn.dev_name : "", o->nconns, o->conn.busy_poll,
		 o->conn.sq_depth, o->conn.timeout_ms);
}

int client_args_parse(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int first,
		      struct client_args *a)
{
	int rc;

	memset(a, 0, sizeof(*a));
	opts_fill(ctx, c, v, first + CO_TOKEN, first + CO_TOKEN_FILE + 1, a); /* strings */
	rc = token_take(ctx, a->token_arg, a->token_file, a->token_buf, &a->token);
	if (rc)
		return rc;
	a->devs = ctx->dev_name;
	if ((rc = opts_fill(ctx, c, v, first + CO_BIND, first + CO_DESCRIPTOR + 1, a)))
		return rc;
	if ((rc = fabric_pick(ctx, c->name, a->fabric_arg, &a->fab)))
		return rc;
	if (a->descriptor && a->fab.kind != RC_FABRIC_OFI)
		return usage_err(
			ctx,
			"%s: --descriptor is for a server over libfabric (--fabric ofi:PROVIDER)",
			c->name);
	return a->descriptor ? input_file(ctx, "--descriptor", a->descriptor) : 0;
}

/*
 * A test's hook, kept out of the help: with RDMACTL_TEST_HOLD_DONE set to
 * PATH, a write that completed creates PATH.held and waits (at most 60 s)
 * for PATH to exist before it tells the server it is done, so that a test
 * can run a migration's fence while the write is in flight.
 */
static void hold_done(void *arg)
{
	test_hook_wait(arg, "held");
}

int client_open(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		const struct client_args *a, int nconns, bool busy_poll, int sq_depth,
		struct rc_client **out)
{
	struct rc_client_opts o = { 0 };
	struct rc_client *cl;
	struct rc_target t;
	struct rc_err e;
	char key[640];
	int rc = target_with(ctx, c, v, &t, a->token);

	if (rc)
		return rc;
	o.token = a->token;
	o.conn.bind_addr = a->bind;
	o.conn.dev_name = a->devs;
	o.conn.timeout_ms = ctx->timeout_ms;
	o.conn.busy_poll = busy_poll;
	o.conn.sq_depth = sq_depth;
	o.nconns = nconns;
	if (getenv("RDMACTL_TEST_HOLD_DONE")) {
		o.before_done = hold_done;
		o.before_done_arg = getenv("RDMACTL_TEST_HOLD_DONE");
	}
	client_key(key, sizeof(key), &t, &o);
	cl = ctx->session ? session_client_take(ctx->session, key) : NULL;
	if (cl) {
		if (ctx->verbose)
			out_log(&ctx->out, "reusing the connection to %s", rc_client_peer(cl));
		rc = rc_client_select(cl, &t, &e);
		if (rc) {
			/* The connection is sound: keep it for the next command. */
			session_client_give_back(ctx->session, cl, true);
			return fail(ctx, rc, "%s", ERR_TEXT(e));
		}
		*out = cl;
		return 0;
	}
	rc = rc_client_open(&t, &o, out, &e);
	if (rc == -EKEYREJECTED && !strncmp(v->pos[0], "etcd://", 7)) {
		struct etcd_name n; /* a server that did not prove the token */

		if (!etcd_name_parse(ctx, c->name, v->pos[0], &n))
			return fail(ctx, rc, "%s (named by etcd record %s)", ERR_TEXT(e), n.key);
	}
	if (rc)
		return fail(ctx, rc, "%s", ERR_TEXT(e));
	if (ctx->session)
		session_client_lend(ctx->session, key, &t, *out);
	return 0;
}

void client_close(struct ctx *ctx, struct rc_client *cl, int rc)
{
	if (!cl)
		return;
	if (ctx->session && session_client_give_back(ctx->session, cl, rc == 0))
		return;
	rc_client_close(cl);
}

void report_transfer(struct ctx *ctx, const struct rc_stream_result *r)
{
	double gbyte = r->seconds > 0 ? (double)r->bytes / 1e9 / r->seconds : 0;

	out_u64(&ctx->out, "bytes", "%llu bytes", (unsigned long long)r->bytes);
	out_f64(&ctx->out, "seconds", " in %.3f s", r->seconds);
	out_f64(&ctx->out, "gbyte_per_s", ", %.3f GB/s", gbyte);
	out_f64(&ctx->out, "gbit_per_s", " (%.3f Gb/s)\n", gbyte * 8);
}
