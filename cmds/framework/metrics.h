/* SPDX-License-Identifier: MIT */
/*
 * --metrics FILE: a command's figures in the text format Prometheus'
 * node_exporter textfile collector reads (and promtool checks): HELP and
 * TYPE before each family, names prefixed rdmactl_ with their base unit
 * (_bytes, _seconds) and counters ending in _total, label values escaped,
 * "# EOF" last. The file is written to FILE.tmp and renamed over FILE, so
 * a collector never reads half of one.
 */
#ifndef RDMACTL_METRICS_H
#define RDMACTL_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "cmd.h"

/* The option, as an X-macro entry like the blocks of client_cmds.h; after P,
 * its type (OPT_STR into the command's struct). */
#define METRICS_OPT(X, P, ...) \
	X(P##_METRICS, "metrics", 0, "FILE", "write the figures to FILE (Prometheus)", COMP_FILE, \
	  __VA_ARGS__)

enum metric_type { METRIC_GAUGE, METRIC_COUNTER, METRIC_SUMMARY };

struct metrics {
	char *buf;
	size_t len, cap;
	int err;           /* the first error: -ENOMEM, or -EINVAL for a bad name */
	char why[160];     /* what it was */
	char labels[1024]; /* every sample's labels, escaped: a="x",b="y" */
	char family[128];  /* the family whose samples follow ("": none) */
	enum metric_type type;
};

void metrics_init(struct metrics *m);
void metrics_free(struct metrics *m);
/* A label every later sample carries (name: [a-zA-Z_][a-zA-Z0-9_]*). */
void metrics_label(struct metrics *m, const char *name, const char *value);
void metrics_label_u64(struct metrics *m, const char *name, uint64_t value);
/* A family: its HELP and TYPE lines. Its name starts rdmactl_; a counter's
 * ends in _total, no other's does. Its samples follow at once. */
void metrics_family(struct metrics *m, const char *name, enum metric_type t, const char *help);
/* One sample of the family: suffix "" (a summary's "_sum", "_count"), at most
 * one label of its own (lname NULL: none; a summary's quantile). */
void metrics_sample(struct metrics *m, const char *suffix, const char *lname, const char *lvalue,
		    double v);
/* One sample with n labels of its own (a rail's "rail" and "device"). */
void metrics_sample_labels(struct metrics *m, const char *const *lnames, const char *const *lvalues,
			   int n, double v);
/* A family of one sample. */
void metrics_gauge(struct metrics *m, const char *name, const char *help, double v);
void metrics_counter(struct metrics *m, const char *name, const char *help, double v);
/* The file's text, "# EOF" last; NULL after an error (m->why says which). */
const char *metrics_text(struct metrics *m);
/* Write the text to path.tmp (mode 0644) and rename it over path. Returns 0
 * or -errno, with msg (cap bytes) naming the cause. */
int metrics_write(struct metrics *m, const char *path, char *msg, size_t cap);

/* A command's metrics as data: each row names a value of its report (the
 * document the output layer built, out_keep_tree() in text mode) and the
 * family it is published as. The file renders the report; it computes
 * nothing of its own. Rows of one family follow each other; a family whose
 * values are all missing (or null) is left out. */
struct metric_row {
	/* "group.connect_s"; "rails[].bytes": a sample per element (arrays nest:
	 * "m[][]"); "outliers#": the array's length */
	const char *path;
	const char *name; /* rdmactl_... */
	enum metric_type type;
	const char *help;
	double scale; /* the report's unit to the metric's base unit (0: 1) */
	/* the sample's own: "rail={rail},device={device}" ({KEY}: the element's,
	 * else the document's, value; {#0}: the index in the first array walked),
	 * "quantile=0.5"; NULL */
	const char *labels;
	const char *suffix; /* a summary's "_sum" or "_count"; NULL */
};
/* A command's rows, counted where they are written. */
struct metric_table {
	const struct metric_row *row;
	size_t n;
};
#define METRIC_TABLE(rows) \
	{ \
		rows, sizeof(rows) / sizeof((rows)[0]) \
	}

/* Labels every later sample carries, from the report: "operation,peer" takes
 * each key's value at the top of doc (a key missing or null: none). */
void metrics_labels_from(struct metrics *m, const json_t *doc, const char *keys);
/* The samples of rows[0..n) from doc (NULL: none). */
void metrics_from_report(struct metrics *m, const json_t *doc, const struct metric_row *rows,
			 size_t n);
/* The samples of a table's rows. */
void metrics_render(struct metrics *m, const json_t *doc, const struct metric_table *t);

/* --metrics FILE, before any device is opened: an empty name, a folder, a
 * file in a folder that does not exist or cannot be written is a failure
 * (exit 1) naming the path. 0 or what fail returned. */
int metrics_path_check(struct ctx *ctx, const char *path);
/* The end of a command's run: rdmactl_success (1 when rc is 0) and
 * rdmactl_finished_time_seconds added, the file written. A write that
 * fails is a failure of the command. Returns rc, or the write's failure
 * when rc was 0. m is freed. */
int metrics_commit(struct ctx *ctx, struct metrics *m, const char *path, int rc);

#endif
