// SPDX-License-Identifier: MIT
/* write and read over several rails: the lists of addresses, devices and
 * binds, one rail each; the transfer; the per-rail report, the failover and
 * the findings. The striping itself is libcore's (region/rails.c). The
 * lists of a server's rails (--listen) and of kvxfer send's (-d, --bind). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "rails_cmds.h"

/* A rail far below its peers: a rate while busy under this fraction of
 * their mean, that cost it at least RAILS_JITTER_S against their rate
 * (less is a stall of the host's scheduler or a resent packet, which can
 * make any rail of a short transfer look slow). */
#define RAILS_SLOW_FRACTION 0.5
#define RAILS_JITTER_S 0.1

static int count_items(const char *s)
{
	int n = 1;

	for (; s && *s; s++)
		n += *s == ',';
	return s ? n : 0;
}

bool rails_asked(const struct opt_vals *v, const struct client_args *a)
{
	const char *t = v->npos == 1 ? v->pos[0] : "";
	size_t host_len = strncmp(t, "etcd://", 7) ? strcspn(t, ":/") : 0;

	return memchr(t, ',', host_len) || (a->devs && strchr(a->devs, ',')) ||
	       (a->bind && strchr(a->bind, ','));
}

/* Item i of a comma list into out (the only one when the list has one). */
static void item(const char *list, int i, char *out, size_t cap)
{
	const char *p = list;

	if (count_items(list) == 1)
		i = 0;
	for (; i > 0; i--)
		p = strchr(p, ',') + 1;
	snprintf(out, cap, "%.*s", (int)strcspn(p, ","), p);
}

/* A list without an empty item (NULL: no list). */
static bool list_ok(const char *s)
{
	return !s || (*s && *s != ',' && !strstr(s, ",,") && s[strlen(s) - 1] != ',');
}

/* The lists: each of one item or of n; n the longest. The server's side is
 * the list hosts, or (hosts NULL) nh rails of an etcd record. */
static int rails_count(struct ctx *ctx, const char *hosts, int nh, const char *devs,
		       const char *binds, int *n)
{
	int nd = count_items(devs), nb = count_items(binds);

	const char *bad = !list_ok(hosts)   ? hosts
			  : !list_ok(devs)  ? devs
			  : !list_ok(binds) ? binds
					    : NULL;

	if (bad)
		return usage_err(ctx,
				 "an empty item in the list '%s' (rails are ADDR1,ADDR2 or DEV1,DEV2)",
				 bad);
	if (hosts)
		nh = count_items(hosts);
	*n = nh > nd ? nh : nd;
	*n = nb > *n ? nb : *n;
	if (*n > RC_RAILS_MAX)
		return usage_err(ctx, "at most %d rails, not %d", RC_RAILS_MAX, *n);
	if ((nh != 1 && nh != *n) || (nd > 1 && nd != *n) || (nb > 1 && nb != *n))
		return usage_err(ctx,
				 "the rails do not pair up: %d server address%s, %d device%s (-d), "
				 "%d bind address%s (--bind); give one of each, or as many as rails",
				 nh, nh == 1 ? "" : "es", nd, nd == 1 ? "" : "s", nb,
				 nb == 1 ? "" : "es");
	return 0;
}

int from_rails(struct ctx *ctx, const char *who, const char *devs, const char *binds,
	       struct from_rails *fr)
{
	int nd = count_items(devs), nb = count_items(binds);

	memset(fr, 0, sizeof(*fr));
	if (!list_ok(devs) || !list_ok(binds))
		return usage_err(ctx,
				 "%s: an empty item in the list '%s' (rails are DEV1,DEV2 or "
				 "ADDR1,ADDR2)",
				 who, !list_ok(devs) ? devs : binds);
	fr->n = nd > nb ? nd : nb;
	fr->n = fr->n ? fr->n : 1;
	if (fr->n > RC_RAILS_MAX)
		return usage_err(ctx, "%s: at most %d rails, not %d", who, RC_RAILS_MAX, fr->n);
	if (nd > 1 && nb > 1 && nd != nb)
		return usage_err(ctx,
				 "%s: the rails do not pair up: %d devices (-d) and %d bind "
				 "addresses (--bind); give as many of each as rails",
				 who, nd, nb);
	for (int i = 0; i < fr->n; i++) {
		if (devs)
			item(devs, i, fr->dev[i], sizeof(fr->dev[i]));
		if (binds)
			item(binds, i, fr->bind[i], sizeof(fr->bind[i]));
	}
	return 0;
}

/* Per rail: host, port, device and bind strings. */
struct rail_strs {
	char host[RC_HOST_MAX], port[8], dev[64], bind[RC_HOST_MAX];
};

/* Rail i's server address and port: from the target ADDR1,ADDR2:PORT/REGION
 * (hosts, and rest ":PORT/REGION"), or from the etcd record (hosts NULL). */
static int rail_server(struct ctx *ctx, const struct cmd *c, const char *t, const char *hosts,
		       const char *rest, const struct rc_etcd_region *rec, int i,
		       struct rail_strs *s, char *region, size_t rcap)
{
	char one[RC_HOST_MAX * 2 + 64];
	struct rc_target tg;

	if (!hosts) {
		const struct rc_etcd_rail *r = &rec->rails[i];

		snprintf(s->host, sizeof(s->host), "%s", rec->nrails ? r->host : rec->host);
		snprintf(s->port, sizeof(s->port), "%s", rec->nrails ? r->port : rec->port);
		snprintf(region, rcap, "%s", rec->region);
		return 0;
	}
	item(hosts, i, s->host, sizeof(s->host));
	snprintf(one, sizeof(one), "%s%s", s->host, rest);
	if (rc_parse_target(one, &tg))
		return usage_err(ctx,
				 "%s: invalid target '%s' (rail %d: '%s'): expected "
				 "ADDR1,ADDR2:PORT/REGION or etcd://HOST:PORT/NS/REGION",
				 c->name, t, i + 1, one);
	snprintf(s->host, sizeof(s->host), "%s", tg.host);
	snprintf(s->port, sizeof(s->port), "%s", tg.port);
	snprintf(region, rcap, "%s", tg.region);
	return 0;
}

/* Several rails: a client each, from the lists. */
static int rails_open_many(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
			   const struct client_args *a, struct rc_rails **out)
{
	struct rail_strs strs[RC_RAILS_MAX];
	struct rc_rail_spec spec[RC_RAILS_MAX];
	char buf[RC_HOST_MAX * 2], region[RC_NAME_MAX] = "";
	const char *t = v->pos[0], *hosts = NULL, *rest = NULL;
	struct rc_client_opts o = { 0 };
	struct rc_etcd_region rec = { 0 };
	struct rc_err e;
	int n = 0, rc;

	if (v->npos != 1)
		return usage_err(ctx,
				 "%s: give exactly one target, ADDR1,ADDR2:PORT/REGION or "
				 "etcd://HOST:PORT/NS/REGION",
				 c->name);
	if (ctx->session)
		return usage_err(ctx, "%s: several rails are for the command line, not the shell",
				 c->name);
	if (t[0] == '[')
		return usage_err(ctx,
				 "%s: with several rails, give the target as "
				 "ADDR1,ADDR2:PORT/REGION (IPv4 addresses or names) or "
				 "etcd://HOST:PORT/NS/REGION",
				 c->name);
	if (!strncmp(t, "etcd://", 7)) {
		struct etcd_name en;
		struct rc_target tg;

		if ((rc = etcd_name_parse(ctx, c->name, t, &en)))
			return rc;
		en.token = a->token; /* the record must carry its MAC */
		if ((rc = etcd_name_resolve(ctx, &en, &tg, &rec)))
			return rc;
	} else {
		rest = t + strcspn(t, ":/");
		snprintf(buf, sizeof(buf), "%.*s", (int)(rest - t), t);
		hosts = buf;
	}
	rc = rails_count(ctx, hosts, rec.nrails ? rec.nrails : 1, a->devs, a->bind, &n);
	if (rc)
		return rc;
	for (int i = 0; i < n; i++) {
		strs[i] = (struct rail_strs){ 0 }; /* a device or bind not given reads "" */
		rc = rail_server(ctx, c, t, hosts, rest, &rec, i, &strs[i], region, sizeof(region));
		if (rc)
			return rc;
		if (a->devs)
			item(a->devs, i, strs[i].dev, sizeof(strs[i].dev));
		if (a->bind)
			item(a->bind, i, strs[i].bind, sizeof(strs[i].bind));
		spec[i] = (struct rc_rail_spec){ .host = strs[i].host,
						 .port = strs[i].port,
						 .dev = strs[i].dev[0] ? strs[i].dev : NULL,
						 .bind = strs[i].bind[0] ? strs[i].bind : NULL };
	}
	o.token = a->token;
	o.conn.timeout_ms = ctx->timeout_ms;
	o.conn.sq_depth = STREAM_SQ_DEPTH;
	o.nconns = 1;
	rc = rc_rails_open(spec, n, region, &o, out, &e);
	return rc ? fail(ctx, rc, "%s", ERR_TEXT(e)) : 0;
}

int rails_open(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
	       const struct client_args *a, struct rc_rails **out)
{
	struct rc_client *cl = NULL;
	struct rc_err e;
	int rc;

	*out = NULL;
	if (rails_asked(v, a))
		return rails_open_many(ctx, c, v, a, out);
	if ((rc = client_open(ctx, c, v, a, 1, false, STREAM_SQ_DEPTH, &cl)))
		return rc;
	if ((rc = rc_rails_of(cl, out, &e))) {
		client_close(ctx, cl, rc);
		return fail(ctx, rc, "%s", ERR_TEXT(e));
	}
	return 0;
}

void rails_close(struct ctx *ctx, struct rc_rails *r, int rc)
{
	struct rc_client *one = r && rc_rails_count(r) == 1 ? rc_rails_client(r, 0) : NULL;

	rc_rails_close(r);
	client_close(ctx, one, rc);
}

int rails_transfer(struct ctx *ctx, struct rc_rails *r, enum rc_op op, uint64_t off, uint64_t len,
		   uint64_t stripe, struct rc_rails_io *io, struct rc_rails_result *res)
{
	struct progress prog;
	struct rc_err e;
	int rc;

	progress_init(&prog, ctx);
	io->progress = progress_line;
	io->progress_arg = &prog;
	io->timeout_ms = ctx->timeout_ms;
	rc = rc_rails_transfer(r, op, off, len, stripe, io, res, &e);
	progress_end(&prog);
	if (rc)
		rc = fail(ctx, rc, "%s (after %llu bytes)", ERR_TEXT(e),
			  (unsigned long long)res->total.bytes);
	return rc;
}

void rails_names(const struct rc_rails *r, char *peers, size_t pcap, char *devs, size_t dcap)
{
	size_t p = 0, d = 0;

	peers[0] = devs[0] = '\0';
	for (int i = 0; i < rc_rails_count(r); i++) {
		p += (size_t)snprintf(peers + p, p < pcap ? pcap - p : 0, "%s%s", i ? "," : "",
				      rc_client_peer(rc_rails_client(r, i)));
		d += (size_t)snprintf(devs + d, d < dcap ? dcap - d : 0, "%s%s", i ? "," : "",
				      rc_client_device(rc_rails_client(r, i)));
		if (p >= pcap || d >= dcap)
			break;
	}
}

static double gbit(uint64_t bytes, double s)
{
	return s > 0 ? (double)bytes * 8 / 1e9 / s : 0;
}

/* A rail's rate while it was busy: its bytes over the time it spent moving
 * its chunks (0: it moved none). */
static double busy_gbit(const struct rc_rail_result *rr)
{
	return rr->busy_s > 0 ? gbit(rr->bytes, rr->busy_s) : 0;
}

static void rail_line(struct ctx *ctx, const struct rc_rails *r, const struct rc_rails_result *res,
		      enum rc_op op, int i)
{
	const struct rc_rail_result *rr = &res->rail[i];
	struct out *o = &ctx->out;
	double share = res->total.bytes ? (double)rr->bytes / (double)res->total.bytes : 0;

	out_obj_begin(o, NULL);
	out_u64(o, "rail", "  rail %llu", (uint64_t)i + 1);
	out_str(o, "device", " %s", rc_client_device(rc_rails_client(r, i)));
	out_str(o, "peer", " -> %s:", rc_client_peer(rc_rails_client(r, i)));
	out_u64(o, "bytes", " %llu bytes", rr->bytes);
	out_f64(o, "share", NULL, share);
	out_text(o, " (%.1f%%)", share * 100);
	out_u64(o, "chunks", ", %llu chunks", rr->chunks);
	if (op == RC_OP_WRITE)
		out_u64(o, "writes", ", %llu writes", rr->ops);
	else
		out_u64(o, "reads", ", %llu reads", rr->ops);
	out_f64(o, "gbit_per_s", ", %.3f Gb/s", gbit(rr->bytes, res->total.seconds));
	out_f64(o, "busy_s", " (busy %.3f s", rr->busy_s);
	out_f64(o, "busy_gbit_per_s", ", %.3f Gb/s while busy)", busy_gbit(rr));
	out_u64(o, "errors", rr->errors == 1 ? ", %llu error" : ", %llu errors", rr->errors);
	out_bool(o, "failed", NULL, rr->failed);
	if (rr->failed) {
		out_f64(o, "failed_at_s", ", FAILED at %.3f s", rr->failed_at_s);
		out_str(o, "error", ": %s", rr->error);
	}
	out_text(o, "\n");
	out_obj_end(o);
}

static void failover_line(struct ctx *ctx, const struct rc_rails *r,
			  const struct rc_rails_result *res)
{
	struct out *o = &ctx->out;
	int f = res->failed_rail;

	if (f < 0) {
		out_null(o, "failover");
		return;
	}
	out_obj_begin(o, "failover");
	out_u64(o, "rail", "  failover: rail %llu", (uint64_t)f + 1);
	out_str(o, "device", " (%s)", rc_client_device(rc_rails_client(r, f)));
	out_f64(o, "at_s", " failed at %.3f s", res->failed_at_s);
	out_u64(o, "bytes_after", "; %llu bytes moved after it", res->bytes_after_failure);
	out_u64(o, "resent_chunks",
		res->resent == 1 ? ", %llu chunk sent again\n" : ", %llu chunks sent again\n",
		res->resent);
	out_obj_end(o);
}

/* The mean busy rate of rail i's peers: the rails other than i that did not
 * fail and moved a chunk; 0: it has none. */
static double peers_gbit(const struct rc_rails_result *res, int i)
{
	double sum = 0;
	int k = 0;

	for (int j = 0; j < res->n; j++)
		if (j != i && !res->rail[j].failed && res->rail[j].chunks) {
			sum += busy_gbit(&res->rail[j]);
			k++;
		}
	return k ? sum / k : 0;
}

/* A rail far below its peers. It is judged by its rate while busy, not by
 * its share: a rail that only started later than the others carries less
 * at the same rate and is not slow; and by the time that rate cost it, so
 * that a short transfer's jitter is not one. A rail that moved nothing
 * while there were chunks enough for two rounds of every rail is idle. */
bool rails_finding(const struct rc_rails_result *res, int i, const char *dev, char *msg, size_t cap)
{
	uint64_t nchunks = res->stripe ? (res->total.bytes + res->stripe - 1) / res->stripe : 0;
	const struct rc_rail_result *rr = &res->rail[i];
	double peers = peers_gbit(res, i), rate = busy_gbit(rr);

	if (rr->failed || peers <= 0)
		return false;
	if (!rr->chunks && nchunks >= 2 * (uint64_t)res->n)
		snprintf(msg, cap,
			 "rail %d (%s) carried nothing while its peers moved %llu chunks: an idle "
			 "rail",
			 i + 1, dev, (unsigned long long)nchunks);
	else if (rr->chunks && rate < RAILS_SLOW_FRACTION * peers &&
		 rr->busy_s - (double)rr->bytes * 8 / 1e9 / peers >= RAILS_JITTER_S)
		snprintf(msg, cap,
			 "rail %d (%s) carried %.1f%% of the bytes at %.3f Gb/s while busy, far "
			 "below its peers (%.3f Gb/s on average): a slow or congested rail",
			 i + 1, dev,
			 res->total.bytes ? 100.0 * (double)rr->bytes / (double)res->total.bytes : 0,
			 rate, peers);
	else
		return false;
	return true;
}

static void findings(struct ctx *ctx, const struct rc_rails *r, const struct rc_rails_result *res)
{
	struct out *o = &ctx->out;
	char msg[320];

	out_arr_begin(o, "findings");
	for (int i = 0; i < res->n; i++)
		if (rails_finding(res, i, rc_client_device(rc_rails_client(r, i)), msg, sizeof(msg)))
			out_str(o, NULL, "  finding: %s\n", msg);
	out_arr_end(o);
}

void rails_report(struct ctx *ctx, const struct rc_rails *r, const struct rc_rails_result *res,
		  enum rc_op op)
{
	struct out *o = &ctx->out;

	report_transfer(ctx, &res->total);
	if (rc_rails_count(r) == 1)
		return;
	out_u64(o, "stripe", NULL, res->stripe);
	out_arr_begin(o, "rails");
	for (int i = 0; i < res->n; i++)
		rail_line(ctx, r, res, op, i);
	out_arr_end(o);
	failover_line(ctx, r, res);
	findings(ctx, r, res);
}

int rails_stripe(struct ctx *ctx, const struct cmd *c, const char *given, bool rails,
		 uint64_t stripe)
{
	if (!given) /* the row's default */
		return 0;
	if (!rails)
		return usage_err(ctx,
				 "%s: --stripe goes with several rails (a target ADDR1,ADDR2:PORT/"
				 "REGION, -d DEV1,DEV2 or --bind ADDR1,ADDR2)",
				 c->name);
	if (stripe < 4096 || stripe > (1ull << 30))
		return usage_err(ctx, "%s: --stripe %llu: give 4K to 1G", c->name,
				 (unsigned long long)stripe);
	return 0;
}

static int split_listen(struct ctx *ctx, const char *s, char *host, size_t hl, char *port, size_t pl)
{
	struct rc_target t;
	char tmp[RC_HOST_MAX + 16];

	/* Reuse the target grammar: HOST[:PORT] or [IPV6][:PORT]. */
	snprintf(tmp, sizeof(tmp), "%s", s);
	if (rc_parse_target(tmp, &t) || t.region[0])
		return usage_err(ctx,
				 "invalid --listen '%s': expected ADDR[:PORT] or [IPV6][:PORT]", s);
	snprintf(host, hl, "%s", t.host);
	snprintf(port, pl, "%s", t.port);
	return 0;
}

int listen_rails(struct ctx *ctx, const char *who, const char *listen, const char *devs,
		 struct listen_rails *lr)
{
	const char *p = listen;
	int ndevs = 0, rc;

	for (lr->n = 0; p; lr->n++) {
		const char *comma = strchr(p, ',');
		char one[RC_HOST_MAX + 16];

		if (lr->n == RC_RAILS_MAX)
			return usage_err(ctx, "%s: at most %d --listen addresses (rails)", who,
					 RC_RAILS_MAX);
		snprintf(one, sizeof(one), "%.*s", comma ? (int)(comma - p) : (int)strlen(p), p);
		if ((rc = split_listen(ctx, one, lr->host[lr->n], sizeof(lr->host[0]),
				       lr->port[lr->n], sizeof(lr->port[0]))))
			return rc;
		p = comma ? comma + 1 : NULL;
	}
	for (p = devs; p && ndevs < RC_RAILS_MAX; ndevs++) {
		const char *comma = strchr(p, ',');

		snprintf(lr->dev[ndevs], sizeof(lr->dev[0]), "%.*s",
			 comma ? (int)(comma - p) : (int)strlen(p), p);
		p = comma ? comma + 1 : NULL;
	}
	if (devs && (ndevs != lr->n || p))
		return usage_err(ctx,
				 "%s: -d names %d device%s and --listen %d address%s: give "
				 "one device per address (a rail each)",
				 who, ndevs, ndevs == 1 ? "" : "s", lr->n, lr->n == 1 ? "" : "es");
	return 0;
}
