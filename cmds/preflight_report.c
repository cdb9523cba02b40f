// SPDX-License-Identifier: MIT
/*
 * preflight's report on rank 0: the findings first, errors, then warnings,
 * then notes (each with its nodes, why it matters and the fix), then the
 * nodes' settings, then the probe of each rail against the figure it
 * should reach, then the verdict; -j the same in one document. --svg draws
 * the node x setting grid (preflight_svg.c), --metrics the counts and the
 * probe's figures.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "preflight.h"
#include "preflight_svg.h"

static const char *sev_word(enum rc_topo_sev s)
{
	return s == RC_SEV_ERROR ? "error" : s == RC_SEV_WARNING ? "warning" : "info";
}

static void put_finding(struct out *o, const struct rc_pf_finding *f)
{
	static const char *const upper[] = { "NOTE", "WARNING", "ERROR" };

	out_obj_begin(o, NULL);
	out_text(o, "%-7s ", upper[f->severity]);
	out_str(o, "severity", NULL, sev_word(f->severity));
	out_str(o, "check", "%s", f->check);
	out_str(o, "setting", f->setting[0] && strcmp(f->setting, f->check) ? " (%s)" : NULL,
		f->setting[0] ? f->setting : NULL);
	out_str(o, "message", ": %s\n", f->message);
	out_arr_begin(o, "ranks");
	for (int k = 0; k < f->nranks && k < 64; k++)
		out_i64(o, NULL, NULL, f->ranks[k]);
	out_arr_end(o);
	out_str(o, "nodes", "        nodes: %s\n", f->nodes);
	out_str(o, "value", NULL, f->value[0] ? f->value : NULL);
	out_str(o, "reference", NULL, f->reference[0] ? f->reference : NULL);
	out_str(o, "why", "        why:   %s\n", f->why);
	out_str(o, "fix", "        fix:   %s\n", f->fix);
	out_obj_end(o);
}

/* The probe's findings: a rail that failed, one below --min-percent. */
static void probe_findings(const struct pf_report *r, struct rc_pf_finding *f, int cap, int *nf)
{
	int W = r->world;

	for (int a = 0; r->probe && a < W; a++)
		for (int b = 0; b < W; b++) {
			const struct rc_sweep_cell *c =
				&r->probe->m[(size_t)a * (size_t)W + (size_t)b];
			const struct rc_pf_node *na, *nb;
			double exp, pct;
			struct rc_pf_finding *x;
			bool slow;

			if (a == b || c->status == RC_SWEEP_SKIPPED)
				continue;
			na = &r->nodes[r->first[a]];
			nb = &r->nodes[r->first[b]];
			exp = rc_pf_expected_gbit(na, nb);
			pct = exp > 0 ? 100 * c->bw_gbit / exp : 0;
			slow = !c->status && r->min_percent > 0 && exp > 0 && pct < r->min_percent;
			if (!c->status && !slow)
				continue;
			if ((*nf)++ >= cap)
				continue;
			x = &f[*nf - 1];
			memset(x, 0, sizeof(*x));
			x->severity = slow ? RC_SEV_WARNING : RC_SEV_ERROR;
			snprintf(x->check, sizeof(x->check), "%s", slow ? "probe_slow" : "probe");
			x->nranks = 2;
			x->ranks[0] = a;
			x->ranks[1] = b;
			snprintf(x->nodes, sizeof(x->nodes),
				 "rank %d (%.50s %.40s) -> rank %d (%.50s %.40s)", a, na->hostname,
				 na->dev, b, nb->hostname, nb->dev);
			if (slow)
				snprintf(x->message, sizeof(x->message),
					 "rank %d -> rank %d carried %.2f Gbit/s, %.1f%% of the %.2f Gbit/s expected",
					 a, b, c->bw_gbit, pct, exp);
			else
				snprintf(x->message, sizeof(x->message),
					 "rank %d -> rank %d failed: %.180s", a, b, c->why);
			snprintf(x->why, sizeof(x->why), "%s",
				 slow ? "a rail far below its link's figure slows every collective that crosses it"
				      : "settings that look right but do not connect: the job hangs or fails here");
			snprintf(x->fix, sizeof(x->fix), "%s",
				 slow ? "rdmactl sweep between these ranks, and the port counters (rdma statistic show)"
				      : "check the route and the GID between the two (ip route get, rdmactl probe-topology), and the firewall for the connection manager's port");
		}
}

/* Errors first, then warnings, then notes; stable. */
static void by_severity(struct rc_pf_finding *f, int n)
{
	for (int i = 1; i < n; i++)
		for (int k = i; k > 0 && f[k].severity > f[k - 1].severity; k--) {
			struct rc_pf_finding t = f[k];

			f[k] = f[k - 1];
			f[k - 1] = t;
		}
}

static void put_settings(struct out *o, const struct rc_pf_node *n, const uint8_t *differs)
{
	out_obj_begin(o, "settings");
	for (int s = 0; s < RC_PF_NSETTINGS; s++) {
		char val[256];

		rc_pf_value(n, s, val, sizeof(val));
		out_str(o, rc_pf_setting_name(s), NULL, val[0] ? val : NULL);
	}
	out_obj_end(o);
	out_arr_begin(o, "differs");
	for (int s = 0; s < RC_PF_NSETTINGS; s++)
		if (differs[s])
			out_str(o, NULL, NULL, rc_pf_setting_name(s));
	out_arr_end(o);
}

/* The text line of a node: its rail and the settings that matter most. */
static void node_line(struct out *o, const struct rc_pf_node *n)
{
	char ml[40];

	if (n->rail)
		out_text(o, "#     rail %d:", n->rail);
	else
		out_text(o, "#   rank %d (%s%s%s)", n->rank, n->hostname, n->host[0] ? " " : "",
			 n->host);
	if (!n->dev[0]) {
		out_text(o, ": %s\n", n->error[0] ? n->error : "no RDMA device");
		return;
	}
	rc_pf_value(n, RC_PF_MEMLOCK, ml, sizeof(ml));
	out_text(o, " %s port %d %s %s, %.0f Gbit/s, MTU %d", n->dev, n->port,
		 n->state[0] ? n->state : "?", n->link_layer, n->rate_gbps, n->active_mtu);
	if (n->netdev[0])
		out_text(o, " (%s MTU %d)", n->netdev, n->netdev_mtu);
	if (n->gid_index >= 0)
		out_text(o, ", GID %d %s", n->gid_index,
			 n->gid_found ? n->gid_type : "(none there)");
	if (n->rail)
		out_text(o, "\n");
	else
		out_text(o, ", memlock %s\n", ml[0] ? ml : "?");
}

/* A rail's own facts (rail 0's are the node's). */
static void put_rail(struct out *o, const struct rc_pf_node *n, const uint8_t *differs)
{
	out_str(o, "device", NULL, n->dev[0] ? n->dev : NULL);
	out_i64(o, "port", NULL, n->port);
	out_str(o, "netdev", NULL, n->netdev[0] ? n->netdev : NULL);
	if (n->rate_gbps > 0)
		out_f64(o, "rate_gbit_per_s", NULL, n->rate_gbps);
	else
		out_null(o, "rate_gbit_per_s");
	out_i64(o, "gid_index", NULL, n->gid_index);
	out_str(o, "gid", NULL, n->gid_found ? n->gid : NULL);
	out_str(o, "gid_netdev", NULL, n->gid_found && n->gid_netdev[0] ? n->gid_netdev : NULL);
	put_settings(o, n, differs);
}

/* A node: its rail 0 (rows[0]), then its other rails (rows[1..nr-1]). */
static void put_node(struct out *o, const struct rc_pf_node *n, int nr, const uint8_t *differs)
{
	node_line(o, n);
	out_obj_begin(o, NULL);
	out_i64(o, "rank", NULL, n->rank);
	out_str(o, "hostname", NULL, n->hostname);
	out_str(o, "host", NULL, n->host[0] ? n->host : NULL);
	out_bool(o, "loaded", NULL, n->loaded);
	out_str(o, "error", NULL, n->error[0] ? n->error : NULL);
	put_rail(o, n, differs);
	out_arr_begin(o, "rails");
	for (int k = 1; k < nr; k++) {
		node_line(o, &n[k]);
		out_obj_begin(o, NULL);
		out_i64(o, "rail", NULL, n[k].rail);
		put_rail(o, &n[k], differs + (size_t)k * RC_PF_NSETTINGS);
		out_obj_end(o);
	}
	out_arr_end(o);
	out_obj_end(o);
}

static void put_direction(struct out *o, const struct pf_report *r, int a, int b)
{
	const struct rc_sweep_cell *c = &r->probe->m[(size_t)a * (size_t)r->world + (size_t)b];
	const struct rc_pf_node *x = &r->nodes[r->first[a]], *y = &r->nodes[r->first[b]];
	double exp = rc_pf_expected_gbit(x, y);

	out_obj_begin(o, NULL);
	out_i64(o, "from", "#   rank %lld", a);
	out_i64(o, "to", " -> rank %lld: ", b);
	out_bool(o, "ok", NULL, !c->status);
	if (c->status) {
		out_str(o, "error", "failed: %s\n", c->why);
		out_obj_end(o);
		return;
	}
	out_f64(o, "gbit_per_s", "%.3f Gbit/s", c->bw_gbit);
	if (exp > 0) {
		out_f64(o, "percent_of_expected", ", %.1f%%", 100 * c->bw_gbit / exp);
		out_f64(o, "expected_gbit_per_s", " of %.2f Gbit/s expected", exp);
	} else {
		out_null(o, "percent_of_expected");
		out_null(o, "expected_gbit_per_s");
		out_text(o, " (expected figure unknown)");
	}
	out_f64(o, "write_lat_p50_us", "; 8-byte WRITE p50 %.1f us", c->wlat_p50_us);
	out_f64(o, "read_lat_p50_us", ", READ p50 %.1f us\n", c->rlat_p50_us);
	out_obj_end(o);
}

static void put_probe(struct out *o, const struct pf_report *r)
{
	if (!r->probe) {
		out_null(o, "probe");
		return;
	}
	out_obj_begin(o, "probe");
	out_f64(o, "duration_s", "# probe: each rank with the next, %g s a direction\n",
		r->probe_duration_s);
	out_f64(o, "seconds", NULL, r->probe->seconds);
	out_arr_begin(o, "directions");
	for (int a = 0; a < r->world; a++)
		for (int b = 0; b < r->world; b++)
			if (a != b && r->probe->m[(size_t)a * (size_t)r->world + (size_t)b].status !=
					      RC_SWEEP_SKIPPED)
				put_direction(o, r, a, b);
	out_arr_end(o);
	out_obj_end(o);
}

static void put_head(struct out *o, const struct pf_report *r, const int *count, int nf)
{
	out_text(o, "preflight: %d node%s", r->world, r->world == 1 ? "" : "s");
	if (r->rendezvous)
		out_text(o, " (ranks from %s, rendezvous %s)", r->rank_source, r->rendezvous);
	out_text(o, ": %d error%s, %d warning%s, %d note%s\n", count[RC_SEV_ERROR],
		 count[RC_SEV_ERROR] == 1 ? "" : "s", count[RC_SEV_WARNING],
		 count[RC_SEV_WARNING] == 1 ? "" : "s", count[RC_SEV_INFO],
		 count[RC_SEV_INFO] == 1 ? "" : "s");
	out_i64(o, "world", NULL, r->world);
	out_str(o, "rank_source", NULL, r->rank_source);
	out_str(o, "rendezvous", NULL, r->rendezvous);
	out_u64(o, "buffer_bytes", NULL, r->buffer);
	out_obj_begin(o, "counts");
	out_i64(o, "error", NULL, count[RC_SEV_ERROR]);
	out_i64(o, "warning", NULL, count[RC_SEV_WARNING]);
	out_i64(o, "info", NULL, count[RC_SEV_INFO]);
	out_obj_end(o);
	out_i64(o, "findings_left_out", NULL, nf > PF_FINDINGS_MAX ? nf - PF_FINDINGS_MAX : 0);
}

static const struct metric_row pf_metric_rows[] = {
	{ "world", "rdmactl_preflight_nodes", METRIC_GAUGE, "nodes compared" },
	{ "clean", "rdmactl_preflight_clean", METRIC_GAUGE, "1 when no error or warning was found" },
	{ "counts.error", "rdmactl_preflight_findings", METRIC_GAUGE, "findings by severity", 0,
	  "severity=error" },
	{ "counts.warning", "rdmactl_preflight_findings", METRIC_GAUGE, "findings by severity", 0,
	  "severity=warning" },
	{ "counts.info", "rdmactl_preflight_findings", METRIC_GAUGE, "findings by severity", 0,
	  "severity=info" },
	{ "probe.directions[].gbit_per_s", "rdmactl_preflight_probe_write_bytes_per_second",
	  METRIC_GAUGE, "the probe's RDMA WRITE bandwidth of each direction (FROM->TO)", 1e9 / 8,
	  "direction={from}->{to}" },
};
const struct metric_table pf_metric_table = METRIC_TABLE(pf_metric_rows);

int pf_report(struct ctx *ctx, const struct pf_report *in, bool *clean)
{
	struct pf_report rr = *in;
	const struct pf_report *r = &rr;
	struct out *o = &ctx->out;
	struct rc_pf_finding *f = calloc(PF_FINDINGS_MAX, sizeof(*f));
	uint8_t *differs = calloc((size_t)r->nrows, RC_PF_NSETTINGS);
	int *first = calloc((size_t)r->world, sizeof(int));
	struct rc_pf_limits lim = { .buffer = r->buffer };
	int nf = 0, count[3] = { 0 }, rc;

	if (!f || !differs || !first) {
		rc = fail(ctx, -ENOMEM, "out of memory");
		goto out;
	}
	for (int i = r->nrows - 1; i >= 0; i--)
		if (r->nodes[i].rank >= 0 && r->nodes[i].rank < r->world)
			first[r->nodes[i].rank] = i;
	rr.first = first;
	if ((rc = rc_pf_compare(r->nodes, r->nrows, &lim, f, PF_FINDINGS_MAX, &nf, differs))) {
		rc = fail(ctx, rc, "the nodes could not be compared");
		goto out;
	}
	probe_findings(r, f, PF_FINDINGS_MAX, &nf);
	by_severity(f, nf < PF_FINDINGS_MAX ? nf : PF_FINDINGS_MAX);
	for (int i = 0; i < nf && i < PF_FINDINGS_MAX; i++)
		count[f[i].severity]++;
	*clean = !count[RC_SEV_ERROR] && !count[RC_SEV_WARNING];
	put_head(o, r, count, nf);
	out_arr_begin(o, "findings");
	for (int i = 0; i < nf && i < PF_FINDINGS_MAX; i++)
		put_finding(o, &f[i]);
	out_arr_end(o);
	out_text(o, "# nodes\n");
	out_arr_begin(o, "nodes");
	for (int i = 0, nr; i < r->nrows; i += nr) {
		for (nr = 1; i + nr < r->nrows && r->nodes[i + nr].rail; nr++)
			;
		put_node(o, &r->nodes[i], nr, differs + (size_t)i * RC_PF_NSETTINGS);
	}
	out_arr_end(o);
	put_probe(o, r);
	out_bool(o, "clean", *clean ? "verdict: clean\n" : NULL, *clean);
	if (!*clean)
		out_text(o, "verdict: %d finding%s to fix (exit 1)\n",
			 count[RC_SEV_ERROR] + count[RC_SEV_WARNING],
			 count[RC_SEV_ERROR] + count[RC_SEV_WARNING] == 1 ? "" : "s");
	if (r->svg && (rc = pf_svg_write(r->svg, r->nodes, r->nrows, differs)))
		rc = fail(ctx, rc, "--svg %s: %s", r->svg, strerror(-rc));
	else if (r->svg)
		out_str(o, "svg", "# grid: %s\n", r->svg);
out:
	free(f);
	free(differs);
	free(first);
	return rc;
}
