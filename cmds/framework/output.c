// SPDX-License-Identifier: MIT
#define _GNU_SOURCE /* strerrorname_np */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static json_t *new_root(void)
{
	json_t *root = json_object();

	json_object_set_new(root, "schema_version", json_integer(RDMACTL_SCHEMA_VERSION));
	return root;
}

void out_init(struct out *o, enum out_mode mode, FILE *fp, FILE *err_fp)
{
	memset(o, 0, sizeof(*o));
	o->mode = mode;
	o->fp = fp;
	o->err_fp = err_fp;
	out_reset(o);
}

bool out_is_json(const struct out *o)
{
	return o->mode != OUT_TEXT;
}

static void new_doc(struct out *o)
{
	if (o->root)
		json_decref(o->root);
	o->root = NULL;
	o->depth = 0;
	o->has_error = false;
	o->err_code = 0;
	o->printed = false;
	if (out_is_json(o) || o->keep_tree) {
		o->root = new_root();
		o->stack[0] = o->root;
		o->keys[0] = NULL;
	}
}

void out_set_mode(struct out *o, enum out_mode mode)
{
	bool was_json = out_is_json(o);

	o->mode = mode;
	if (was_json == out_is_json(o))
		return;
	if (o->root)
		json_decref(o->root);
	o->root = was_json && !o->keep_tree ? NULL : new_root();
	o->stack[0] = o->root;
	o->keys[0] = NULL;
	o->depth = 0;
}

void out_free(struct out *o)
{
	if (o->last_event)
		json_decref(o->last_event);
	o->last_event = NULL;
	if (o->root)
		json_decref(o->root);
	if (o->captured)
		json_decref(o->captured);
	o->root = NULL;
	o->captured = NULL;
}

void out_reset(struct out *o)
{
	if (o->last_event)
		json_decref(o->last_event);
	o->last_event = NULL;
	o->keep_tree = false;
	o->muted = false;
	o->cmd = NULL;
	o->streamed = false;
	new_doc(o);
}

void out_keep_tree(struct out *o)
{
	o->keep_tree = true;
	if (o->root)
		return;
	o->root = new_root();
	o->stack[0] = o->root;
	o->keys[0] = NULL;
	o->depth = 0;
}

json_t *out_tree(const struct out *o)
{
	return o->root;
}

json_t *out_last_event(const struct out *o)
{
	return o->last_event;
}

void out_schema_version(struct out *o, int version)
{
	if (o->root)
		json_object_set_new(o->root, "schema_version", json_integer(version));
}

/* Text mode, not muted: the values are printed. */
static bool text_on(const struct out *o)
{
	return !out_is_json(o) && !o->muted;
}

void out_mute(struct out *o, bool on)
{
	o->muted = on;
}

static void add(struct out *o, const char *key, json_t *val)
{
	json_t *cur = o->stack[o->depth];

	if (json_is_array(cur))
		json_array_append_new(cur, val);
	else if (key)
		json_object_set_new(cur, key, val);
	else
		json_decref(val);
}

/* Strings can come from a peer (a region's name, a reason). A JSON string
 * must be valid UTF-8: each byte that is not becomes U+FFFD, rather than the
 * key disappearing from the document. */
static json_t *json_text(const char *s)
{
	json_t *j = json_string(s);
	size_t len, n = 0;
	char *fixed;

	if (j)
		return j;
	len = strlen(s);
	fixed = malloc(len * 3 + 1);
	if (!fixed)
		return json_null();
	for (size_t i = 0; i < len;) {
		unsigned char c = (unsigned char)s[i];
		size_t k = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
		json_t *t = i + k <= len ? json_stringn(s + i, k) : NULL;

		if (t) {
			json_decref(t);
			memcpy(fixed + n, s + i, k);
			n += k;
			i += k;
		} else {
			memcpy(fixed + n, "\xef\xbf\xbd", 3);
			n += 3;
			i++;
		}
	}
	j = json_stringn(fixed, n);
	free(fixed);
	return j ? j : json_null();
}

/* For a terminal: control bytes (an escape sequence in a hostile region
 * name, say) are shown as \xNN, never sent as they are. */
static const char *printable(const char *s, char *buf, size_t cap)
{
	size_t n = 0;
	const char *p;

	for (p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			break;
	if (!*p)
		return s;
	for (p = s; *p && n + 5 < cap; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			n += (size_t)snprintf(buf + n, cap - n, "\\x%02x", (unsigned char)*p);
		else
			buf[n++] = *p;
	}
	buf[n] = '\0';
	return buf;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
void out_str(struct out *o, const char *key, const char *fmt, const char *val)
{
	char shown[1024];

	if (o->root)
		add(o, key, val ? json_text(val) : json_null());
	if (text_on(o) && fmt)
		fprintf(o->fp, fmt, val ? printable(val, shown, sizeof(shown)) : "-");
}

void out_u64(struct out *o, const char *key, const char *fmt, uint64_t val)
{
	/* JSON integers here are signed 64-bit (jansson): a value past
	 * INT64_MAX is a number of the right size, exact to 17 digits, never
	 * a negative one (atomic's *_hex fields carry every bit). */
	if (o->root)
		add(o, key,
		    val <= INT64_MAX ? json_integer((json_int_t)val) : json_real((double)val));
	if (text_on(o) && fmt)
		fprintf(o->fp, fmt, val);
}

void out_i64(struct out *o, const char *key, const char *fmt, int64_t val)
{
	if (o->root)
		add(o, key, json_integer(val));
	if (text_on(o) && fmt)
		fprintf(o->fp, fmt, val);
}

void out_f64(struct out *o, const char *key, const char *fmt, double val)
{
	if (o->root)
		add(o, key,
		    isfinite(val) ? json_real(val)
				  : json_null()); /* JSON has no NaN: null, never a missing key */
	if (text_on(o) && fmt)
		fprintf(o->fp, fmt, val);
}

void out_bool(struct out *o, const char *key, const char *fmt, bool val)
{
	if (o->root)
		add(o, key, json_boolean(val));
	if (text_on(o) && fmt)
		fprintf(o->fp, fmt, val ? "yes" : "no");
}
#pragma GCC diagnostic pop

void out_null(struct out *o, const char *key)
{
	if (o->root)
		add(o, key, json_null());
}

void out_mem(struct out *o, const char *lead, enum rc_mem_kind kind, int gpu, enum rc_mem_reg reg,
	     const char *notes)
{
	bool cuda = kind == RC_MEM_CUDA;
	char fmt[64];

	snprintf(fmt, sizeof(fmt), "%smem %%s", lead);
	out_str(o, "mem", fmt, rc_mem_kind_name(kind));
	if (cuda)
		out_i64(o, "gpu", ":%lld", gpu);
	else
		out_null(o, "gpu");
	out_str(o, "registration", cuda ? " via %s" : NULL, rc_mem_reg_name(reg));
	if (cuda && reg == RC_REG_BOUNCE)
		out_text(o,
			 " (a host bounce buffer: peers reach a host copy, not GPU memory; no GPUDirect)");
	if (cuda && notes && notes[0])
		out_str(o, "registration_notes", " [tried first: %s]", notes);
	else
		out_null(o, "registration_notes");
}

void out_json(struct out *o, const char *key, json_t *val)
{
	if (o->root)
		add(o, key, val);
	else
		json_decref(val);
}

void out_text(struct out *o, const char *fmt, ...)
{
	va_list ap;

	if (!text_on(o))
		return;
	va_start(ap, fmt);
	vfprintf(o->fp, fmt, ap);
	va_end(ap);
}

static void push(struct out *o, const char *key, json_t *val)
{
	if (!o->root)
		return;
	if (o->depth + 1 >= OUT_MAX_DEPTH) {
		json_decref(val);
		return;
	}
	add(o, key, json_incref(val));
	json_decref(val);
	o->stack[++o->depth] = val;
}

void out_obj_begin(struct out *o, const char *key)
{
	if (o->root)
		push(o, key, json_object());
}

void out_arr_begin(struct out *o, const char *key)
{
	if (o->root)
		push(o, key, json_array());
}

void out_obj_end(struct out *o)
{
	if (o->root && o->depth > 0)
		o->depth--;
}

void out_arr_end(struct out *o)
{
	out_obj_end(o);
}

const char *out_errno_name(int err)
{
	/* ENOTSUP and EOPNOTSUPP share a value on Linux: the JSON code has always
	 * been ENOTSUP, and JSON codes are API. */
	if (err == ENOTSUP)
		return "ENOTSUP";
	return err > 0 ? strerrorname_np(err) : NULL;
}

void out_verr(struct out *o, int err, const char *fmt, va_list ap)
{
	char msg[1024], shown[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	o->has_error = true;
	o->err_code = err;
	if (!out_is_json(o)) {
		fprintf(o->err_fp, "rdmactl: %s%s%s\n", o->err_prefix ? o->err_prefix : "",
			o->err_prefix ? ": " : "", printable(msg, shown, sizeof(shown)));
		return;
	}
	json_t *e = json_object();
	const char *name = out_errno_name(err);

	json_object_set_new(e, "message", json_text(msg));
	if (err) {
		json_object_set_new(e, "errno", json_integer(err));
		if (name)
			json_object_set_new(e, "code", json_string(name));
	}
	/* A second failure in one command (a serve that failed, then a region
	 * that could not be written back) keeps the first: "error" is the last
	 * one, as always, and "errors" lists them all in order. */
	json_t *prev = json_object_get(o->root, "error");

	if (prev) {
		json_t *all = json_object_get(o->root, "errors");

		if (!all) {
			all = json_array();
			json_array_append(all, prev);
			json_object_set_new(o->root, "errors", all);
		}
		json_array_append(all, e);
	}
	json_object_set_new(o->root, "error", e);
}

void out_err(struct out *o, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	out_verr(o, err, fmt, ap);
	va_end(ap);
}

void out_log(struct out *o, const char *fmt, ...)
{
	va_list ap;

	fputs("rdmactl: ", o->err_fp);
	va_start(ap, fmt);
	vfprintf(o->err_fp, fmt, ap);
	va_end(ap);
	fputc('\n', o->err_fp);
	fflush(o->err_fp);
}

/* RDMACTL_TEST_JSON_LOG=DIR, for the tests only (tests/lib/assert.bash sets
 * it): each document printed is also appended to DIR/rdmactl.PID.jsonl as
 * one line {"command": the command's path or null, "argv": [...], "document":
 * the document}, in one write, for tests/lib/schema-check.js to validate
 * against schemas/. Whatever fails here is ignored: stdout is the output. */
static json_t *own_argv(void)
{
	char buf[8192];
	json_t *a = json_array();
	ssize_t n = -1;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n > 0)
		buf[n] = '\0';
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
		json_array_append_new(a, json_text(buf + i));
	return a;
}

static void mkdirs(const char *dir)
{
	char p[4096];

	if (snprintf(p, sizeof(p), "%s", dir) >= (int)sizeof(p))
		return;
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0777);
			*s = '/';
		}
	mkdir(p, 0777);
}

static void test_log(const struct out *o, json_t *doc)
{
	static json_t *argv; /* read once: a server prints many events */
	const char *dir = getenv("RDMACTL_TEST_JSON_LOG");
	int fd, saved = errno;
	char path[4096];
	json_t *rec;
	char *line;

	if (!dir || !dir[0])
		return;
	if (!argv)
		argv = own_argv();
	rec = json_pack("{s:s?, s:O, s:O}", "command", o->cmd, "argv", argv, "document", doc);
	line = rec ? json_dumps(rec, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	json_decref(rec);
	if (!line)
		return; /* out of memory: nothing recorded */
	snprintf(path, sizeof(path), "%s/rdmactl.%ld.jsonl", dir, (long)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
	if (fd < 0 && errno == ENOENT) { /* the first record: the folder, once */
		mkdirs(dir);
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
	}
	if (fd >= 0) {
		size_t len = strlen(line);
		ssize_t w;

		line[len] = '\n'; /* over the NUL: one write, one line */
		w = write(fd, line, len + 1);
		(void)w;
		close(fd);
	}
	free(line);
	errno = saved; /* the command's own errno, as it was */
}

void out_print_json(struct out *o, json_t *doc, bool compact)
{
	size_t flags = !compact && o->mode == OUT_JSON_PRETTY ? JSON_INDENT(2) : JSON_COMPACT;

	json_dumpf(doc, o->fp, flags | JSON_ENCODE_ANY);
	fputc('\n', o->fp);
	fflush(o->fp);
	test_log(o, doc);
}

static void print_doc(struct out *o, bool compact)
{
	if (o->capture) {
		if (!o->captured)
			o->captured = json_array();
		json_array_append(o->captured, o->root);
		return;
	}
	out_print_json(o, o->root, compact);
}

void out_finish(struct out *o)
{
	/* After a stream of events, an empty document would only add noise. */
	if (out_is_json(o) && !o->printed && !(o->streamed && json_object_size(o->root) == 1)) {
		print_doc(o, false);
		o->printed = true;
	}
	fflush(o->fp);
}

void out_event(struct out *o)
{
	if (o->keep_tree && o->root) { /* for --metrics: the event's values */
		if (o->last_event)
			json_decref(o->last_event);
		o->last_event = json_incref(o->root);
	}
	if (out_is_json(o)) {
		print_doc(o, true);
		new_doc(o);
		o->streamed = true;
	} else if (o->keep_tree) { /* text: a new tree, the errors kept */
		json_decref(o->root);
		o->root = new_root();
		o->stack[0] = o->root;
		o->depth = 0;
	}
	fflush(o->fp);
}
