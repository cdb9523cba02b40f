// SPDX-License-Identifier: MIT
/* rdmactl register: register memory regions and serve them until a signal. */
#include <errno.h>
#include <poll.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <rdmactl/etcd.h>
#include <rdmactl/server.h>

#include "cmds.h"
#include "register.h"
#include "session.h"

static const struct cmd_opt register_opts[] = { REGISTER_OPTS(OPT_ENTRY) OPT_END };
OPTS_BOUND(register_opts, REGISTER_NOPTS);

void register_on_event(void *arg, const struct rc_server_event *ev)
{
	struct ctx *ctx = arg;
	static const char *const names[] = { "connected", "disconnected", "rejected", "imm",
					     "flush_failed" };

	if (ev->kind == RC_EV_FLUSH_FAILED) {
		if (!out_is_json(&ctx->out)) {
			fprintf(ctx->out.fp, "region %s: flush failed: %s\n", ev->region,
				ev->reason);
			fflush(ctx->out.fp);
			return;
		}
		out_str(&ctx->out, "event", NULL, names[ev->kind]);
		out_str(&ctx->out, "region", NULL, ev->region);
		out_str(&ctx->out, "reason", NULL, ev->reason);
		out_event(&ctx->out);
		return;
	}
	if (!out_is_json(&ctx->out)) {
		if (ev->kind == RC_EV_IMM)
			fprintf(ctx->out.fp, "%s: immediate data %u\n", ev->peer, ev->imm);
		else
			fprintf(ctx->out.fp, "%s: %s%s%s\n", ev->peer, names[ev->kind],
				ev->reason ? ": " : "", ev->reason ? ev->reason : "");
		fflush(ctx->out.fp);
		return;
	}
	out_str(&ctx->out, "event", NULL, names[ev->kind]);
	out_str(&ctx->out, "peer", NULL, ev->peer);
	if (ev->reason)
		out_str(&ctx->out, "reason", NULL, ev->reason);
	if (ev->kind == RC_EV_IMM)
		out_u64(&ctx->out, "imm", NULL, ev->imm);
	out_event(&ctx->out);
}

static void print_region(struct ctx *ctx, const struct register_args *a, struct rc_server *s, int i)
{
	const struct rc_region *r = rc_server_region(s, i);
	const struct rc_listener *l = rc_server_listener(s);
	const struct rc_gid_info *g = rc_server_gid(s);
	struct out *o = &ctx->out;
	char rkey[16], addr[24];

	snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)r->d.addr);
	snprintf(rkey, sizeof(rkey), "0x%x", r->d.rkey);
	out_str(o, "event", NULL, "region");
	out_str(o, "name", "region %s:", r->d.name);
	out_u64(o, "addr", NULL, r->d.addr);
	out_str(o, "addr_hex", " addr %s", addr);
	out_u64(o, "rkey", NULL, r->d.rkey);
	out_str(o, "rkey_hex", " rkey %s", rkey);
	out_u64(o, "length", " length %llu", (unsigned long long)r->d.length);
	out_str(o, "access", " access %s", rc_access_name(r->d.access));
	out_mem(o, " ", r->mem.kind, r->mem.gpu, r->mem.reg, r->mem.reg_notes);
	if (r->path[0])
		out_str(o, "file", " file %s", r->path);
	out_str(o, "fabric", NULL, "verbs");
	out_str(o, "device", " device %s", rc_listener_device(l));
	out_u64(o, "port", NULL, rc_listener_port_num(l));
	out_str(o, "gid", " gid %s", g->str);
	out_i64(o, "gid_index", " (index %lld", g->index);
	out_str(o, "gid_type", ", %s)", rc_gid_type_name(g->type));
	out_obj_begin(o, "listen");
	out_str(o, "address", " listen %s", rc_listener_addr(l));
	out_u64(o, "port", ":%llu", rc_listener_port(l));
	out_obj_end(o);
	register_rails_print(ctx, a, s, i);
	if (rc_server_token(s))
		out_str(o, "token", " token %s", rc_server_token(s));
	out_text(o, "\n");
	out_event(o);
}

/* Run, first part: the server and its regions. */
static int register_start(struct ctx *ctx, struct register_args *a, struct rc_server_opts *so,
			  struct rc_server **s)
{
	struct rc_err e;
	int rc;

	so->addr = a->host;
	so->port = a->port;
	so->dev_name = a->lr.dev[0][0] ? a->lr.dev[0] : NULL;
	so->token = a->token;
	so->admin_token = a->admin[0] ? a->admin : NULL;
	so->allow_unauth_migration = a->allow_unauth_mig;
	if (a->max_conns)
		so->max_conns = a->max_conns;
	so->keepalive_ms = a->keepalive_ms;
	so->flush_every_ms = a->flush_every_ms;
	rc = rc_server_create(so, s, &e);
	if (rc)
		return fail(ctx, rc, "%s", ERR_TEXT(e));
	for (int i = 0; i < a->nspecs; i++) {
		const struct region_spec *r = &a->specs[i];
		struct rc_mem_spec ms = { .kind = r->kind,
					  .len = (size_t)r->bytes,
					  .path = r->file,
					  .gpu = r->gpu,
					  .reg = r->kind == RC_MEM_CUDA ? a->gpu_reg : RC_REG_AUTO };

		rc = rc_server_add_region_spec(*s, r->name, &ms, r->acc, &e);
		if (rc)
			return fail(ctx, rc, "region %s: %s", r->name, ERR_TEXT(e));
	}
	/* the server's rails: its own, and one more server each further one */
	struct rc_rail_listen rl[RC_RAILS_MAX];

	for (int i = 0; i < a->lr.n; i++)
		rl[i] = (struct rc_rail_listen){ .addr = a->lr.host[i],
						 .port = a->lr.port[i],
						 .dev = a->lr.dev[i][0] ? a->lr.dev[i] : NULL };
	rc = rc_server_rails_open(*s, rl, a->lr.n > 1 ? a->lr.n : 1, &a->rails, &e);
	return rc ? fail(ctx, rc, "%s", ERR_TEXT(e)) : 0;
}

/* A region served on several rails: each rail's address in its record (d's
 * host and port are the first rail's). */
static void publish_rails(const struct register_args *a, struct rc_etcd_region *d)
{
	if (a->lr.n < 2)
		return;
	d->nrails = a->lr.n;
	snprintf(d->rails[0].host, sizeof(d->rails[0].host), "%s", d->host);
	snprintf(d->rails[0].port, sizeof(d->rails[0].port), "%s", d->port);
	for (int k = 1; k < a->lr.n; k++) {
		const struct rc_listener *l =
			rc_server_listener(rc_server_rails_server(a->rails, k));

		snprintf(d->rails[k].host, sizeof(d->rails[k].host), "%s", a->lr.host[k]);
		snprintf(d->rails[k].port, sizeof(d->rails[k].port), "%u", rc_listener_port(l));
	}
}

/* --publish: this server's key, then each region's unless another server
 * holds it (the region's home until a migration moves the key here). One
 * event per region says which. */
static int register_publish(struct ctx *ctx, const struct register_args *a, struct rc_server *s,
			    struct rc_etcd **out)
{
	const struct rc_listener *l = rc_server_listener(s);
	char key[RC_ETCD_KEY_MAX], val[RC_ETCD_VAL_MAX], port[8];
	struct rc_etcd *e = NULL;
	struct rc_err err;
	int rc;

	snprintf(port, sizeof(port), "%u", rc_listener_port(l));
	rc = rc_etcd_open(a->etcd, ctx->timeout_ms, &e, &err);
	if (!rc)
		rc = rc_etcd_lease(e, a->lease_ttl, &err);
	if (!rc) {
		json_t *j = json_pack("{s:s,s:s,s:i}", "host", a->host, "port", port, "regions",
				      rc_server_nregions(s));
		char *txt = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

		rc_etcd_server_key(a->ns, a->host, port, key, sizeof(key));
		rc = txt ? rc_etcd_put(e, key, txt, rc_etcd_lease_id(e), &err)
			 : rc_err_set(&err, ENOMEM, "out of memory");
		free(txt);
		json_decref(j);
	}
	for (int i = 0; !rc && i < rc_server_nregions(s); i++) {
		const struct rc_region *r = rc_server_region(s, i);
		struct rc_etcd_region d = { .length = r->d.length };
		struct rc_etcd_kv held;
		struct rc_etcd_region other;

		snprintf(d.host, sizeof(d.host), "%s", a->host);
		snprintf(d.port, sizeof(d.port), "%s", port);
		snprintf(d.region, sizeof(d.region), "%s", r->d.name);
		snprintf(d.access, sizeof(d.access), "%s", rc_access_name(r->d.access));
		publish_rails(a, &d);
		rc_etcd_region_key(a->ns, r->d.name, key, sizeof(key));
		/* Signed with the data token: its clients refuse a record without
		 * the MAC before they connect (rdmactl-register(8), SECURITY). */
		if (rc_etcd_region_sign(&d, key, rc_etcd_lease_id(e), a->token) ||
		    rc_etcd_region_format(&d, val, sizeof(val))) {
			rc = rc_err_set(&err, ENOSPC, "region %s: its etcd record is too long",
					r->d.name);
			break;
		}
		rc = rc_etcd_create(e, key, val, rc_etcd_lease_id(e), &held, &err);
		if (rc && rc != -EEXIST)
			break;
		out_str(&ctx->out, "event", NULL, "published");
		out_str(&ctx->out, "key", "etcd %s", key);
		out_bool(&ctx->out, "claimed", NULL, rc == 0);
		if (rc == 0) {
			out_null(&ctx->out, "held_by");
			out_text(&ctx->out, ": published here\n");
		} else {
			char who[RC_HOST_MAX + 16] = "another server";

			if (!rc_etcd_region_parse(held.value, &other))
				snprintf(who, sizeof(who), "%s:%s", other.host, other.port);
			out_str(&ctx->out, "held_by", ": held by %s (not claimed here)\n", who);
		}
		out_event(&ctx->out);
		rc = 0;
	}
	if (rc) {
		rc_etcd_close(e);
		return fail(ctx, rc, "--publish: %s", ERR_TEXT(err));
	}
	out_str(&ctx->out, "event", NULL, "lease");
	out_str(&ctx->out, "lease", "etcd lease %s", rc_etcd_lease_id(e));
	out_u64(&ctx->out, "ttl", " (ttl %llu s", (unsigned long long)a->lease_ttl);
	out_str(&ctx->out, "etcd", ") at %s\n", a->etcd);
	out_event(&ctx->out);
	*out = e;
	return 0;
}

/* Print: one event per region. */
static void register_print(struct ctx *ctx, const struct register_args *a, struct rc_server *s)
{
	for (int i = 0; i < rc_server_nregions(s); i++)
		print_region(ctx, a, s, i);
}

/* --metrics: the server's figures, rendered; up says whether it still
 * serves (0 in the file written at exit). */
static void server_metrics_put(struct metrics *m, const struct register_args *a,
			       const struct rc_server *s, double started, bool up)
{
	json_t *doc = register_figures(a, s, started, up);

	register_figures_render(m, doc);
	json_decref(doc);
}

/* The periodic rewrite: a small local file, never a wait on a peer. A
 * failure does not stop the server; it is said once, until a write works. */
static void metrics_tick(struct ctx *ctx, const struct register_args *a, const struct rc_server *s,
			 double started, bool *failing)
{
	struct metrics m;
	char msg[4400];
	int rc;

	metrics_init(&m);
	metrics_label(&m, "command", "register");
	server_metrics_put(&m, a, s, started, true);
	rc = metrics_write(&m, a->metrics, msg, sizeof(msg));
	metrics_free(&m);
	if (rc && !*failing)
		out_log(&ctx->out, "--metrics: %s (the server goes on)", msg);
	*failing = rc != 0;
}

/* Serve until a signal, as rc_server_run; with --metrics, the file is
 * rewritten from this loop every --metrics-interval. */
static int register_serve(struct ctx *ctx, const struct register_args *a, struct rc_server *s,
			  int sfd, double started, struct rc_err *e)
{
	bool failing = false;
	double next = 0;

	if (!a->metrics)
		return rc_server_run(s, sfd, e);
	for (;;) {
		struct pollfd p = { .fd = sfd, .events = POLLIN };
		int rc;

		if (rc_now() >= next) {
			metrics_tick(ctx, a, s, started, &failing);
			next = rc_now() + a->metrics_every_s;
		}
		if (poll(&p, 1, 0) > 0)
			return 0;
		if ((rc = rc_server_step(s, 200, e)))
			return rc;
	}
}

/* Signals arrive through a descriptor, so shutdown is an ordinary step.
 * In the shell the server goes on in the background instead, its events
 * queued in the session until the next prompt. */
static int register_signals(struct ctx *ctx, struct rc_server_opts *so, sigset_t *mask, int *sfd)
{
	sigemptyset(mask);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGHUP);
	if (ctx->session)
		session_server_opts(ctx->session, so);
	else
		sigprocmask(SIG_BLOCK, mask, NULL);
	*sfd = ctx->session ? -1 : signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (!ctx->session && *sfd < 0)
		return fail(ctx, -errno, "signalfd: %s", strerror(errno));
	return 0;
}

/* In the shell: the session serves s in the background from here on. */
static int register_background(struct ctx *ctx, struct rc_server *s)
{
	struct rc_err e;
	int rc = session_serve(ctx->session, s, &e);

	if (rc)
		return fail(ctx, rc, "%s", ERR_TEXT(e));
	if (!out_is_json(&ctx->out))
		out_log(&ctx->out,
			"serving in the background on %s:%u: 'regions' lists, 'unregister' stops",
			session_served(ctx->session, session_nserved(ctx->session) - 1)->addr,
			session_served(ctx->session, session_nserved(ctx->session) - 1)->port);
	return 0;
}

/* On the command line: serve until a signal, and take that signal. */
static int register_foreground(struct ctx *ctx, struct register_args *a, struct rc_server *s,
			       int sfd, double started)
{
	const struct rc_listener *l = rc_server_listener(s);
	struct signalfd_siginfo si;
	struct rc_err e;
	int rc;

	if (!out_is_json(&ctx->out))
		out_log(&ctx->out, "serving %d region%s on %s:%u (%s); stop with Ctrl-C or SIGTERM",
			rc_server_nregions(s), rc_server_nregions(s) == 1 ? "" : "s",
			rc_listener_addr(l), rc_listener_port(l), rc_listener_device(l));
	if ((rc = rc_server_rails_start(a->rails, &e)))
		return fail(ctx, rc, "%s", ERR_TEXT(e));
	rc = register_serve(ctx, a, s, sfd, started, &e);
	if (rc)
		return fail(ctx, rc, "%s", ERR_TEXT(e));
	/* Consume the signal, or unblocking it afterwards would deliver it. */
	while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		;
	return 0;
}

/* Stop, after rc (the first failure, or 0): the lease first, the keys naming
 * this server go with it; then the server, with --metrics' last file. */
static int register_stop(struct ctx *ctx, struct register_args *a, struct rc_server *s,
			 struct rc_etcd *etcd, double started, int rc)
{
	struct metrics m;
	struct rc_err e;
	int rc2;

	metrics_init(&m);
	metrics_label(&m, "command", "register");
	rc_etcd_close(etcd);
	if (a->metrics && s)
		server_metrics_put(&m, a, s, started, false);
	rc2 = rc_server_rails_close(a->rails, &e);
	a->rails = NULL;
	if (rc2) {
		rc2 = fail(ctx, rc2, "%s", ERR_TEXT(e));
		if (!rc)
			rc = rc2;
	}
	/* Reported even after a failed serve: a region that did not reach its
	 * file is data lost, whatever stopped the server. */
	rc2 = rc_server_destroy(s, &e);
	if (rc2) {
		rc2 = fail(ctx, rc2, "%s", ERR_TEXT(e));
		if (!rc)
			rc = rc2;
	}
	if (a->metrics)
		rc = metrics_commit(ctx, &m, a->metrics, rc);
	metrics_free(&m);
	if (s && !rc) {
		out_str(&ctx->out, "event", "stopped\n", "stopped");
		out_event(&ctx->out);
	}
	return rc;
}

static int do_register(struct ctx *ctx, int argc, char **argv)
{
	const struct cmd *c = &cmd_register;
	struct rc_server_opts so = { .gid_index = ctx->gid_index,
				     .on_event = register_on_event,
				     .arg = ctx };
	struct rc_fabric fab = { .kind = RC_FABRIC_VERBS };
	struct register_args *a;
	struct rc_server *s = NULL;
	struct rc_etcd *etcd = NULL;
	struct opt_vals v;
	sigset_t mask;
	int sfd = -1, rc;
	double started = rc_wall(rc_now());

	rc = opts_parse(ctx, c, argc, argv, &v);
	if (rc)
		return rc < 0 ? rc : 0;
	a = calloc(1, sizeof(*a));
	if (!a)
		return fail(ctx, -ENOMEM, "out of memory");
	rc = register_parse(ctx, c, &v, a);
	if (!rc)
		rc = opts_fill(ctx, c, &v, RG_FABRIC, RG_FABRIC + 1, a);
	if (!rc)
		rc = fabric_pick(ctx, c->name, a->fabric_arg, &fab);
	if (!rc && fab.kind == RC_FABRIC_OFI && ctx->session)
		rc = usage_err(ctx, "register --fabric ofi: not in the shell yet");
	if (!rc && fab.kind == RC_FABRIC_OFI) {
		if (!(rc = register_signals(ctx, &so, &mask, &sfd)))
			rc = register_ofi(ctx, &v, a, &fab, sfd);
		if (sfd >= 0)
			close(sfd);
		sigprocmask(SIG_UNBLOCK, &mask, NULL);
	}
	if (rc || fab.kind == RC_FABRIC_OFI) {
		free(a);
		return rc;
	}
	if ((rc = register_signals(ctx, &so, &mask, &sfd)) || (rc = register_start(ctx, a, &so, &s)))
		goto out;
	register_print(ctx, a, s);
	if (a->etcd[0] && (rc = register_publish(ctx, a, s, &etcd)))
		goto out;
	if (ctx->session) {
		rc = register_background(ctx, s);
		if (!rc) {
			struct rc_err e;

			rc_server_rails_close(a->rails, &e); /* one rail (the shell's): s alone */
			free(a);
			return 0;
		}
		goto out;
	}
	rc = register_foreground(ctx, a, s, sfd, started);
out:
	rc = register_stop(ctx, a, s, etcd, started, rc);
	if (sfd >= 0)
		close(sfd);
	if (!ctx->session)
		sigprocmask(SIG_UNBLOCK, &mask, NULL);
	free(a);
	return rc;
}

const struct cmd cmd_register = {
	.name = "register",
	.aliases = (const char *const[]){ "serve", NULL },
	.run = do_register,
	.opts = register_opts,
	.summary = "serve memory regions to RDMA peers until stopped",
	.long_running = true,
};
