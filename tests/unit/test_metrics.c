// SPDX-License-Identifier: MIT
/* The --metrics writer (cmds/framework/metrics.c): names, label escaping,
 * values, the EOF line, and the file written whole with mode 0644. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "metrics.h"

static void test_text(void)
{
	struct metrics m;
	const char *t;

	metrics_init(&m);
	metrics_label(&m, "command", "write");
	metrics_label(&m, "peer", "a\"b\\c\nd");
	metrics_counter(&m, "rdmactl_transfer_bytes_total", "bytes moved\\ in\nall", 1048576);
	metrics_family(&m, "rdmactl_latency_seconds", METRIC_SUMMARY, "latency");
	metrics_sample(&m, "", "quantile", "0.5", 0.25);
	metrics_sample(&m, "_sum", NULL, NULL, 1.5);
	metrics_sample(&m, "_count", NULL, NULL, 3);
	metrics_gauge(&m, "rdmactl_odd_values", "not a number, infinities", 0.1);
	metrics_sample(&m, "", "kind", "nan", 0.0 / 0.0);
	metrics_sample(&m, "", "kind", "inf", 1.0 / 0.0);
	metrics_sample(&m, "", "kind", "-inf", -1.0 / 0.0);
	metrics_sample(&m, "", "kind", "whole", 50);
	metrics_sample(&m, "", "kind", "large", 123456789012345678.0);
	metrics_sample(&m, "", "kind", "small", 2.5e-7);
	t = metrics_text(&m);
	CHECK(t != NULL);
	CHECK_STR(
		t ? t : "",
		"# HELP rdmactl_transfer_bytes_total bytes moved\\\\ in\\nall\n"
		"# TYPE rdmactl_transfer_bytes_total counter\n"
		"rdmactl_transfer_bytes_total{command=\"write\",peer=\"a\\\"b\\\\c\\nd\"} 1048576\n"
		"# HELP rdmactl_latency_seconds latency\n"
		"# TYPE rdmactl_latency_seconds summary\n"
		"rdmactl_latency_seconds{command=\"write\",peer=\"a\\\"b\\\\c\\nd\",quantile=\"0.5\"} 0.25\n"
		"rdmactl_latency_seconds_sum{command=\"write\",peer=\"a\\\"b\\\\c\\nd\"} 1.5\n"
		"rdmactl_latency_seconds_count{command=\"write\",peer=\"a\\\"b\\\\c\\nd\"} 3\n"
		"# HELP rdmactl_odd_values not a number, infinities\n"
		"# TYPE rdmactl_odd_values gauge\n"
		"rdmactl_odd_values{command=\"write\",peer=\"a\\\"b\\\\c\\nd\"} 0.1\n"
		"rdmactl_odd_values{command=\"write\",peer=\"a\\\"b\\\\c\\nd\",kind=\"nan\"} NaN\n"
		"rdmactl_odd_values{command=\"write\",peer=\"a\\\"b\\\\c\\nd\",kind=\"inf\"} +Inf\n"
		"rdmactl_odd_values{command=\"write\",peer=\"a\\\"b\\\\c\\nd\",kind=\"-inf\"} -Inf\n"
		"rdmactl_odd_values{command=\"write\",peer=\"a\\\"b\\\\c\\nd\",kind=\"whole\"} 50\n"
		"rdmactl_odd_values{command=\"write\",peer=\"a\\\"b\\\\c\\nd\",kind=\"large\"} 123456789012345680\n"
		"rdmactl_odd_values{command=\"write\",peer=\"a\\\"b\\\\c\\nd\",kind=\"small\"} 2.5e-07\n"
		"# EOF\n");
	/* Asked twice, the EOF line is there once, and last. */
	t = metrics_text(&m);
	CHECK(t && strstr(t, "# EOF\n") == t + strlen(t) - 6);
	CHECK(t && !strstr(strstr(t, "# EOF\n") + 1, "# EOF"));
	metrics_free(&m);

	/* No labels, no braces; an empty file still ends in EOF. */
	metrics_init(&m);
	CHECK_STR(metrics_text(&m), "# EOF\n");
	metrics_free(&m);
	metrics_init(&m);
	metrics_gauge(&m, "rdmactl_ranks", "ranks", 2);
	CHECK_STR(metrics_text(&m), "# HELP rdmactl_ranks ranks\n# TYPE rdmactl_ranks gauge\n"
				    "rdmactl_ranks 2\n# EOF\n");
	metrics_free(&m);
}

/* Each wrong name is refused, and the text with it: never half a file. */
static void refused(const char *name, enum metric_type t, const char *label)
{
	struct metrics m;

	metrics_init(&m);
	if (label)
		metrics_label(&m, label, "x");
	metrics_family(&m, name, t, "help");
	metrics_sample(&m, "", NULL, NULL, 1);
	CHECK(m.err == -EINVAL);
	CHECK(metrics_text(&m) == NULL);
	if (m.err != -EINVAL)
		fprintf(stderr, "  not refused: %s (label %s)\n", name, label ? label : "-");
	metrics_free(&m);
}

static void test_names(void)
{
	struct metrics m;

	refused("rdmactl_bytes", METRIC_COUNTER, NULL);        /* a counter without _total */
	refused("rdmactl_bytes_total", METRIC_GAUGE, NULL);    /* a gauge with it */
	refused("transfer_bytes_total", METRIC_COUNTER, NULL); /* not rdmactl_ */
	refused("rdmactl_bad-name", METRIC_GAUGE, NULL);
	refused("rdmactl_x", METRIC_GAUGE, "9lives");
	refused("rdmactl_x", METRIC_GAUGE, "__reserved");
	refused("rdmactl_x", METRIC_GAUGE, "a:b");
	/* A suffix is a summary's only; a sample needs a family. */
	metrics_init(&m);
	metrics_family(&m, "rdmactl_x_seconds", METRIC_GAUGE, "x");
	metrics_sample(&m, "_sum", NULL, NULL, 1);
	CHECK(m.err == -EINVAL);
	metrics_free(&m);
	metrics_init(&m);
	metrics_sample(&m, "", NULL, NULL, 1);
	CHECK(m.err == -EINVAL);
	metrics_free(&m);
	/* A label a sample has already (a rail's device beside the command's) is
	 * refused, not written twice; one whose name is only inside a value is not. */
	metrics_init(&m);
	metrics_label(&m, "device", "rxe_b");
	metrics_family(&m, "rdmactl_x_bytes_total", METRIC_COUNTER, "x");
	metrics_sample_labels(&m, (const char *const[]){ "rail", "device" },
			      (const char *const[]){ "1", "rxe_d" }, 2, 1);
	CHECK(m.err == -EINVAL);
	metrics_free(&m);
	metrics_init(&m);
	metrics_label(&m, "peer", "a\",device=\"b");
	metrics_family(&m, "rdmactl_x_bytes_total", METRIC_COUNTER, "x");
	metrics_sample_labels(&m, (const char *const[]){ "rail", "device" },
			      (const char *const[]){ "1", "rxe_d" }, 2, 1);
	CHECK(m.err == 0);
	metrics_free(&m);
	/* And the right ones pass. */
	metrics_init(&m);
	metrics_label(&m, "rank", "0");
	metrics_counter(&m, "rdmactl_a2a_bytes_total", "x", 1);
	metrics_gauge(&m, "rdmactl_a2a_duration_seconds", "x", 1);
	CHECK(m.err == 0);
	metrics_free(&m);
}

static void test_write(void)
{
	char dir[] = "/tmp/rdmactl-metrics-XXXXXX", path[256], tmp[300], msg[512], buf[256];
	struct metrics m;
	struct stat st;
	FILE *fp;
	size_t n;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/m.prom", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	umask(077); /* the file is 0644 whatever the umask says */
	metrics_init(&m);
	metrics_gauge(&m, "rdmactl_ranks", "ranks", 2);
	CHECK(metrics_write(&m, path, msg, sizeof(msg)) == 0);
	metrics_free(&m);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644);
	CHECK(access(tmp, F_OK) < 0); /* renamed, nothing left behind */
	fp = fopen(path, "r");
	n = fp ? fread(buf, 1, sizeof(buf) - 1, fp) : 0;
	buf[n] = '\0';
	if (fp)
		fclose(fp);
	CHECK_STR(buf,
		  "# HELP rdmactl_ranks ranks\n# TYPE rdmactl_ranks gauge\nrdmactl_ranks 2\n# EOF\n");

	/* A bad name writes nothing: the old file stays whole. */
	metrics_init(&m);
	metrics_gauge(&m, "rdmactl_ranks_total", "ranks", 3);
	CHECK(metrics_write(&m, path, msg, sizeof(msg)) == -EINVAL);
	CHECK(strstr(msg, "rdmactl_ranks_total") != NULL);
	metrics_free(&m);
	CHECK(stat(path, &st) == 0 && st.st_size == (off_t)n);

	/* A folder that is not there: the error names the path. */
	snprintf(path, sizeof(path), "%s/no/such/m.prom", dir);
	metrics_init(&m);
	CHECK(metrics_write(&m, path, msg, sizeof(msg)) == -ENOENT);
	CHECK(strstr(msg, "no/such/m.prom.tmp") != NULL);
	metrics_free(&m);
	snprintf(path, sizeof(path), "%s/m.prom", dir);
	unlink(path);
	rmdir(dir);
}

/* A table of rows renders a report: dotted paths, a sample per element with
 * labels from it, fixed labels, scales, summary suffixes; a value missing or
 * null gives no sample, and a family none of whose values is there no HELP. */
static void test_from_report(void)
{
	static const struct metric_row rows[] = {
		{ "world", "rdmactl_nodes", METRIC_GAUGE, "nodes" },
		{ "clean", "rdmactl_clean", METRIC_GAUGE, "clean" },
		{ "counts.error", "rdmactl_findings", METRIC_GAUGE, "by severity", 0,
		  "severity=error" },
		{ "counts.info", "rdmactl_findings", METRIC_GAUGE, "by severity", 0,
		  "severity=info" },
		{ "dirs[].gbit", "rdmactl_bw_bytes_per_second", METRIC_GAUGE, "bw", 1e9 / 8,
		  "direction={from}->{to},job={job}" },
		{ "lat.p50", "rdmactl_lat_seconds", METRIC_SUMMARY, "lat", 1e-6, "quantile=0.5" },
		{ "lat.sum", "rdmactl_lat_seconds", METRIC_SUMMARY, "lat", 1e-6, NULL, "_sum" },
		{ "lat.count", "rdmactl_lat_seconds", METRIC_SUMMARY, "lat", 0, NULL, "_count" },
		{ "absent", "rdmactl_absent", METRIC_GAUGE, "never" },
		{ "none", "rdmactl_none", METRIC_GAUGE, "null" },
	};
	json_t *doc = json_loads("{\"world\": 2, \"clean\": false, \"job\": \"j1\", \"mode\": \"x\","
				 " \"counts\": {\"error\": 1, \"info\": 3}, \"none\": null,"
				 " \"dirs\": [{\"from\": 0, \"to\": 1, \"gbit\": 8},"
				 " {\"from\": 1, \"to\": 0, \"error\": \"down\"},"
				 " {\"from\": 1, \"to\": 0, \"gbit\": 16}],"
				 " \"lat\": {\"p50\": 2.5, \"sum\": 10, \"count\": 4}}",
				 0, NULL);
	struct metrics m;

	CHECK(doc != NULL);
	metrics_init(&m);
	metrics_labels_from(&m, doc, "mode,nothing");
	metrics_from_report(&m, doc, rows, sizeof(rows) / sizeof(rows[0]));
	CHECK_STR(metrics_text(&m),
		  "# HELP rdmactl_nodes nodes\n# TYPE rdmactl_nodes gauge\n"
		  "rdmactl_nodes{mode=\"x\"} 2\n"
		  "# HELP rdmactl_clean clean\n# TYPE rdmactl_clean gauge\n"
		  "rdmactl_clean{mode=\"x\"} 0\n"
		  "# HELP rdmactl_findings by severity\n# TYPE rdmactl_findings gauge\n"
		  "rdmactl_findings{mode=\"x\",severity=\"error\"} 1\n"
		  "rdmactl_findings{mode=\"x\",severity=\"info\"} 3\n"
		  "# HELP rdmactl_bw_bytes_per_second bw\n# TYPE rdmactl_bw_bytes_per_second gauge\n"
		  "rdmactl_bw_bytes_per_second{mode=\"x\",direction=\"0->1\",job=\"j1\"} 1000000000\n"
		  "rdmactl_bw_bytes_per_second{mode=\"x\",direction=\"1->0\",job=\"j1\"} 2000000000\n"
		  "# HELP rdmactl_lat_seconds lat\n# TYPE rdmactl_lat_seconds summary\n"
		  "rdmactl_lat_seconds{mode=\"x\",quantile=\"0.5\"} 2.5e-06\n"
		  "rdmactl_lat_seconds_sum{mode=\"x\"} 1e-05\n"
		  "rdmactl_lat_seconds_count{mode=\"x\"} 4\n"
		  "# EOF\n");
	metrics_free(&m);
	/* no document (a command that failed before its report): nothing */
	metrics_init(&m);
	metrics_from_report(&m, NULL, rows, 1);
	CHECK_STR(metrics_text(&m), "# EOF\n");
	metrics_free(&m);
	json_decref(doc);
}

/* A matrix (arrays nested) labelled by its indices, nulls left out; an
 * array's length. */
static void test_from_report_matrix(void)
{
	static const struct metric_row rows[] = {
		{ "m.bw[][]", "rdmactl_bw_bytes_per_second", METRIC_GAUGE, "bw", 1e9 / 8,
		  "direction={#0}->{#1}" },
		{ "outliers#", "rdmactl_outliers", METRIC_GAUGE, "outliers" },
		{ "none#", "rdmactl_none", METRIC_GAUGE, "not an array" },
	};
	json_t *doc = json_loads("{\"m\": {\"bw\": [[null, 8], [16, null]]},"
				 " \"outliers\": [{}, {}, {}], \"none\": 3}",
				 0, NULL);
	struct metrics m;

	CHECK(doc != NULL);
	metrics_init(&m);
	metrics_from_report(&m, doc, rows, sizeof(rows) / sizeof(rows[0]));
	CHECK_STR(metrics_text(&m),
		  "# HELP rdmactl_bw_bytes_per_second bw\n# TYPE rdmactl_bw_bytes_per_second gauge\n"
		  "rdmactl_bw_bytes_per_second{direction=\"0->1\"} 1000000000\n"
		  "rdmactl_bw_bytes_per_second{direction=\"1->0\"} 2000000000\n"
		  "# HELP rdmactl_outliers outliers\n# TYPE rdmactl_outliers gauge\n"
		  "rdmactl_outliers 3\n"
		  "# EOF\n");
	metrics_free(&m);
	json_decref(doc);
}

int main(void)
{
	test_text();
	test_names();
	test_write();
	test_from_report();
	test_from_report_matrix();
	CHECK_DONE();
}
