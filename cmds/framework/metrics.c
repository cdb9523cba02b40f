// SPDX-License-Identifier: MIT
/* The --metrics file (metrics.h): Prometheus' text format, written whole. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "metrics.h"

void metrics_init(struct metrics *m)
{
	memset(m, 0, sizeof(*m));
}

void metrics_free(struct metrics *m)
{
	free(m->buf);
	metrics_init(m);
}

static void bad(struct metrics *m, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void bad(struct metrics *m, int err, const char *fmt, ...)
{
	va_list ap;

	if (m->err)
		return;
	m->err = err;
	va_start(ap, fmt);
	vsnprintf(m->why, sizeof(m->why), fmt, ap);
	va_end(ap);
}

static void put(struct metrics *m, const char *s, size_t n)
{
	if (m->err)
		return;
	if (m->len + n + 1 > m->cap) {
		size_t cap = m->cap ? m->cap : 1024;
		char *b;

		while (cap < m->len + n + 1)
			cap *= 2;
		b = realloc(m->buf, cap);
		if (!b) {
			bad(m, -ENOMEM, "out of memory");
			return;
		}
		m->buf = b;
		m->cap = cap;
	}
	memcpy(m->buf + m->len, s, n);
	m->len += n;
	m->buf[m->len] = '\0';
}

static void puts_(struct metrics *m, const char *s)
{
	put(m, s, strlen(s));
}

/* A label value: backslash, double quote and line feed escaped; HELP text:
 * backslash and line feed (the format's two escapings). */
static void escape_into(char *out, size_t cap, size_t *o, const char *s, bool quote)
{
	for (; *s && *o + 3 < cap; s++) {
		const char *e = *s == '\\'           ? "\\\\"
				: *s == '\n'         ? "\\n"
				: quote && *s == '"' ? "\\\""
						     : NULL;

		if (e) {
			memcpy(out + *o, e, 2);
			*o += 2;
		} else {
			out[(*o)++] = *s;
		}
	}
	out[*o] = '\0';
}

static bool name_ok(const char *s, bool colon)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || (colon && *s == ':')))
			return false;
	return true;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && !strcmp(s + n - t, tail);
}

/* Whether the label list already names name (a sample may not have it twice). */
static bool has_label(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;

	/* name="value",name="value": the values escaped, a quote in one is \" */
	while (*p) {
		if (!strncmp(p, name, n) && p[n] == '=')
			return true;
		p = strchr(p, '"');
		if (!p)
			return false;
		for (p++; *p && *p != '"'; p++)
			if (*p == '\\' && p[1])
				p++;
		p += *p == '"';
		p += *p == ',';
	}
	return false;
}

/* "name=\"value\"" appended to a label list (sep: whether one is before). */
static bool label_into(struct metrics *m, char *out, size_t cap, const char *name, const char *value)
{
	size_t o = strlen(out);

	if (!name_ok(name, false) || !strncmp(name, "__", 2)) {
		bad(m, -EINVAL, "invalid label name '%s'", name);
		return false;
	}
	if (has_label(out, name)) {
		bad(m, -EINVAL, "label '%s' given twice", name);
		return false;
	}
	/* The value may double in escaping; it must fit whole. */
	if (o + strlen(name) + 2 * strlen(value ? value : "") + 6 > cap) {
		bad(m, -ENOSPC, "the labels do not fit (%s)", name);
		return false;
	}
	o += (size_t)snprintf(out + o, cap - o, "%s%s=\"", o ? "," : "", name);
	escape_into(out, cap, &o, value ? value : "", true);
	out[o++] = '"';
	out[o] = '\0';
	return true;
}

void metrics_label(struct metrics *m, const char *name, const char *value)
{
	label_into(m, m->labels, sizeof(m->labels), name, value);
}

void metrics_label_u64(struct metrics *m, const char *name, uint64_t value)
{
	char s[24];

	snprintf(s, sizeof(s), "%llu", (unsigned long long)value);
	metrics_label(m, name, s);
}

void metrics_family(struct metrics *m, const char *name, enum metric_type t, const char *help)
{
	static const char *const types[] = { "gauge", "counter", "summary" };
	char h[512];
	size_t o = 0;

	if (!name_ok(name, true) || strncmp(name, "rdmactl_", 8) ||
	    strlen(name) >= sizeof(m->family)) {
		bad(m, -EINVAL, "invalid metric name '%s'", name);
		return;
	}
	if ((t == METRIC_COUNTER) != ends_with(name, "_total")) {
		bad(m, -EINVAL, "metric '%s': a counter's name ends in _total, no other's does",
		    name);
		return;
	}
	snprintf(m->family, sizeof(m->family), "%s", name);
	m->type = t;
	escape_into(h, sizeof(h), &o, help, false);
	puts_(m, "# HELP ");
	puts_(m, name);
	puts_(m, " ");
	puts_(m, h);
	puts_(m, "\n# TYPE ");
	puts_(m, name);
	puts_(m, " ");
	puts_(m, types[t]);
	puts_(m, "\n");
}

/* The shortest text that reads back as v; the format's words for the rest. */
static void fmt_value(char *s, size_t cap, double v)
{
	if (isnan(v)) {
		snprintf(s, cap, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(s, cap, "%sInf", v > 0 ? "+" : "-");
		return;
	}
	/* A whole number as one (counts, bytes): 50, not 5e+01. */
	if (v == floor(v) && fabs(v) < 1e18) {
		snprintf(s, cap, "%.0f", v);
		return;
	}
	for (int p = 1; p <= 17; p++) {
		snprintf(s, cap, "%.*g", p, v);
		if (strtod(s, NULL) == v)
			return;
	}
}

static void sample_labels(struct metrics *m, const char *suffix, const char *const *lnames,
			  const char *const *lvalues, int n, double v)
{
	char labels[sizeof(m->labels) + 512], val[40];

	if (!m->family[0]) {
		bad(m, -EINVAL, "a sample outside a family");
		return;
	}
	if (*suffix &&
	    (m->type != METRIC_SUMMARY || (strcmp(suffix, "_sum") && strcmp(suffix, "_count")))) {
		bad(m, -EINVAL, "metric '%s': suffix '%s' is a summary's _sum or _count only",
		    m->family, suffix);
		return;
	}
	snprintf(labels, sizeof(labels), "%s", m->labels);
	for (int i = 0; i < n; i++)
		if (!label_into(m, labels, sizeof(labels), lnames[i], lvalues[i]))
			return;
	fmt_value(val, sizeof(val), v);
	puts_(m, m->family);
	puts_(m, suffix);
	if (labels[0]) {
		puts_(m, "{");
		puts_(m, labels);
		puts_(m, "}");
	}
	puts_(m, " ");
	puts_(m, val);
	puts_(m, "\n");
}

void metrics_sample(struct metrics *m, const char *suffix, const char *lname, const char *lvalue,
		    double v)
{
	sample_labels(m, suffix, &lname, &lvalue, lname ? 1 : 0, v);
}

void metrics_sample_labels(struct metrics *m, const char *const *lnames, const char *const *lvalues,
			   int n, double v)
{
	sample_labels(m, "", lnames, lvalues, n, v);
}

void metrics_gauge(struct metrics *m, const char *name, const char *help, double v)
{
	metrics_family(m, name, METRIC_GAUGE, help);
	metrics_sample(m, "", NULL, NULL, v);
}

void metrics_counter(struct metrics *m, const char *name, const char *help, double v)
{
	metrics_family(m, name, METRIC_COUNTER, help);
	metrics_sample(m, "", NULL, NULL, v);
}

const char *metrics_text(struct metrics *m)
{
	if (m->err)
		return NULL;
	if (!m->len || !ends_with(m->buf, "# EOF\n"))
		puts_(m, "# EOF\n");
	return m->err ? NULL : m->buf;
}

int metrics_write(struct metrics *m, const char *path, char *msg, size_t cap)
{
	const char *text = metrics_text(m);
	char tmp[4200];
	size_t off = 0;
	int fd, rc = 0;

	if (!text) {
		snprintf(msg, cap, "%s", m->why);
		return m->err;
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
		snprintf(msg, cap, "the path is too long");
		return -ENAMETOOLONG;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		rc = -errno;
		snprintf(msg, cap, "cannot create '%s': %s", tmp, strerror(errno));
		return rc;
	}
	/* 0644 whatever the umask: a collector running as another user reads it. */
	if (fchmod(fd, 0644) < 0)
		rc = -errno;
	while (!rc && off < m->len) {
		ssize_t n = write(fd, m->buf + off, m->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = -errno;
		else
			off += (size_t)n;
	}
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (rc) {
		snprintf(msg, cap, "cannot write '%s': %s", path, strerror(-rc));
		unlink(tmp);
	}
	return rc;
}

int metrics_path_check(struct ctx *ctx, const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (!*path)
		return usage_err(ctx, "--metrics: the file name is empty");
	if (strlen(path) + 5 > sizeof(dir))
		return fail(ctx, -ENAMETOOLONG, "--metrics '%s': the path is too long", path);
	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		return fail(ctx, -EISDIR, "--metrics '%s' is a directory: name a file", path);
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (stat(dir, &st) < 0)
		return fail(ctx, -errno, "--metrics '%s': its folder '%s': %s", path, dir,
			    strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return fail(ctx, -ENOTDIR, "--metrics '%s': '%s' is not a folder", path, dir);
	if (access(dir, W_OK | X_OK) < 0)
		return fail(ctx, -errno, "--metrics '%s': cannot write in '%s': %s", path, dir,
			    strerror(errno));
	return 0;
}

int metrics_commit(struct ctx *ctx, struct metrics *m, const char *path, int rc)
{
	struct timespec now;
	char msg[4400];
	int w;

	clock_gettime(CLOCK_REALTIME, &now);
	metrics_gauge(m, "rdmactl_success", "1 when the command succeeded, 0 when it failed",
		      rc ? 0 : 1);
	metrics_gauge(m, "rdmactl_finished_time_seconds",
		      "when the command finished, in seconds since the Unix epoch",
		      (double)now.tv_sec + now.tv_nsec / 1e9);
	w = metrics_write(m, path, msg, sizeof(msg));
	metrics_free(m);
	if (w && !rc)
		return fail(ctx, w, "--metrics: %s", msg);
	if (w)
		out_log(&ctx->out, "--metrics: %s", msg);
	return rc;
}

/* The value at the dotted path (len bytes) below v, NULL when missing. */
static const json_t *at(const json_t *v, const char *path, size_t len)
{
	char key[128];

	while (v && len) {
		const char *dot = memchr(path, '.', len);
		size_t k = dot ? (size_t)(dot - path) : len;

		if (k >= sizeof(key) || !json_is_object(v))
			return NULL;
		memcpy(key, path, k);
		key[k] = '\0';
		v = json_object_get(v, key);
		path += k + (dot != NULL);
		len -= k + (dot != NULL);
	}
	return v;
}

static bool number_of(const json_t *v, double *d)
{
	if (json_is_number(v))
		*d = json_number_value(v);
	else if (json_is_boolean(v))
		*d = json_is_true(v);
	else
		return false;
	return true;
}

/* A label value's text: a string as it is, a whole number without a point. */
static bool text_of(const json_t *v, char *buf, size_t cap)
{
	if (json_is_string(v))
		snprintf(buf, cap, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		fmt_value(buf, cap, json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, cap, "%s", json_is_true(v) ? "true" : "false");
	else
		return false;
	return true;
}

void metrics_labels_from(struct metrics *m, const json_t *doc, const char *keys)
{
	char val[512];

	for (const char *p = keys; p && *p;) {
		size_t k = strcspn(p, ",");

		if (text_of(at(doc, p, k), val, sizeof(val))) {
			char name[64];

			snprintf(name, sizeof(name), "%.*s", (int)k, p);
			metrics_label(m, name, val);
		}
		p += k + (p[k] == ',');
	}
}

#define ROW_LABELS 4
#define ROW_DEPTH 4
/* Where a row's walk is: the element, the document, the array indices. */
struct row_at {
	const json_t *el, *doc;
	size_t idx[ROW_DEPTH];
	int depth;
};
struct row_labels {
	char name[ROW_LABELS][32];
	char value[ROW_LABELS][256];
	const char *np[ROW_LABELS], *vp[ROW_LABELS];
	int n;
};

/* {KEY}'s text: the element's KEY, else the document's; {#N} the index in
 * the Nth array walked. */
static bool ref_text(const struct row_at *w, const char *k, size_t len, char *t, size_t cap)
{
	const json_t *v;

	if (len == 2 && k[0] == '#' && k[1] >= '0' && k[1] - '0' < w->depth) {
		snprintf(t, cap, "%zu", w->idx[k[1] - '0']);
		return true;
	}
	v = at(w->el, k, len);
	return text_of(v ? v : at(w->doc, k, len), t, cap);
}

/* One label value of a spec: fixed text and {refs}. False when a ref is
 * missing. */
static bool label_value(const char *s, const char *end, const struct row_at *w, char *out,
			size_t cap)
{
	size_t o = 0;

	while (s < end && o + 1 < cap) {
		const char *close = *s == '{' ? memchr(s, '}', (size_t)(end - s)) : NULL;
		char t[256];

		if (!close) {
			out[o++] = *s++;
			continue;
		}
		if (!ref_text(w, s + 1, (size_t)(close - s - 1), t, sizeof(t)))
			return false;
		o += (size_t)snprintf(out + o, cap - o, "%s", t);
		o = o < cap ? o : cap - 1;
		s = close + 1;
	}
	out[o] = '\0';
	return true;
}

/* "name={key},name2=fixed" read into l. False when a key is missing (no
 * sample) or the spec is wrong (m's error). */
static bool row_labels(struct metrics *m, const char *spec, const struct row_at *w,
		       struct row_labels *l)
{
	l->n = 0;
	for (const char *p = spec; p && *p; l->n++) {
		const char *end = p + strcspn(p, ","), *eq = memchr(p, '=', (size_t)(end - p));

		if (!eq || l->n == ROW_LABELS || eq - p >= 32) {
			bad(m, -EINVAL, "a metrics row's labels '%s'", spec);
			return false;
		}
		snprintf(l->name[l->n], sizeof(l->name[0]), "%.*s", (int)(eq - p), p);
		if (!label_value(eq + 1, end, w, l->value[l->n], sizeof(l->value[0])))
			return false;
		l->np[l->n] = l->name[l->n];
		l->vp[l->n] = l->value[l->n];
		p = *end ? end + 1 : end;
	}
	return true;
}

/* v in the metric's unit: a scale under 1 that is a whole divisor (1e-6: us
 * to seconds) divides, so that 2.5 us is 2.5e-06 s, not 2.4999999999999998e-06. */
static double scaled(double v, double scale)
{
	double div = scale > 0 && scale < 1 ? round(1 / scale) : 0;

	if (div >= 2 && fabs(1 / scale - div) < 1e-9 * div)
		return v / div;
	return v * (scale ? scale : 1);
}

/* The row's sample of the value at vpath below the element ("KEY#": the
 * length of the array KEY); its family's HELP and TYPE before its first. */
static void row_sample(struct metrics *m, const struct metric_row *r, const struct row_at *w,
		       const char *vpath)
{
	size_t len = strlen(vpath);
	bool count = len && vpath[len - 1] == '#';
	const json_t *x = at(w->el, vpath, len - count);
	struct row_labels l;
	double v;

	if (count && json_is_array(x))
		v = (double)json_array_size(x);
	else if (count || !number_of(x, &v))
		return;
	if (!row_labels(m, r->labels, w, &l))
		return;
	if (strcmp(m->family, r->name))
		metrics_family(m, r->name, r->type, r->help);
	sample_labels(m, r->suffix ? r->suffix : "", l.np, l.vp, l.n, scaled(v, r->scale));
}

/* Down the path p below w's element: each "[]" a sample per element. */
static void walk(struct metrics *m, const struct metric_row *r, struct row_at *w, const char *p)
{
	const char *br = strstr(p, "[]");
	const json_t *arr, *el, *up = w->el;
	size_t k;

	if (!br) {
		row_sample(m, r, w, p);
		return;
	}
	if (w->depth == ROW_DEPTH)
		return;
	arr = at(w->el, p, (size_t)(br - p));
	w->depth++;
	json_array_foreach(arr, k, el)
	{
		w->el = el;
		w->idx[w->depth - 1] = k;
		walk(m, r, w, br[2] == '.' ? br + 3 : br + 2);
	}
	w->depth--;
	w->el = up;
}

void metrics_from_report(struct metrics *m, const json_t *doc, const struct metric_row *rows,
			 size_t n)
{
	for (size_t i = 0; doc && i < n; i++) {
		struct row_at w = { .el = doc, .doc = doc };

		walk(m, &rows[i], &w, rows[i].path);
	}
}

void metrics_render(struct metrics *m, const json_t *doc, const struct metric_table *t)
{
	metrics_from_report(m, doc, t->row, t->n);
}
