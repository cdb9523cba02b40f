/* SPDX-License-Identifier: MIT */
/*
 * One output layer for text and JSON. Each value is emitted once: in text
 * mode it is printed with its format, in JSON mode it lands in the document
 * tree, which is printed once by out_finish(). Errors go through out_err()
 * and end up on stderr (text) or as {"error": {...}} in the document.
 */
#ifndef RDMACTL_OUTPUT_H
#define RDMACTL_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "rdmactl/mem.h"

#define RDMACTL_SCHEMA_VERSION 2

enum out_mode { OUT_TEXT, OUT_JSON, OUT_JSON_PRETTY };

#define OUT_MAX_DEPTH 16

struct out {
	enum out_mode mode;
	FILE *fp;     /* document and text output (stdout) */
	FILE *err_fp; /* errors and logs in text mode (stderr) */
	json_t *root; /* the document; NULL in text mode */
	json_t *stack[OUT_MAX_DEPTH];
	const char *keys[OUT_MAX_DEPTH];
	int depth;
	bool has_error;
	int err_code;           /* errno of the last error recorded (0: none, or none given) */
	bool printed;           /* out_finish() already printed the document */
	bool keep_tree;         /* text mode: the document built all the same (--metrics) */
	bool muted;             /* text mode: the values go to the document only (out_mute) */
	json_t *last_event;     /* the last event out_event() ended, with out_keep_tree() or -j */
	bool streamed;          /* out_event() printed this command's documents */
	const char *err_prefix; /* text mode: put before each error ("FILE:LINE") */
	bool capture;           /* batch mode: keep the document instead of printing */
	json_t *captured;       /* the kept document when capture is set */
	const char *cmd;        /* the command whose document this is ("kvxfer plan"), for
			  * RDMACTL_TEST_JSON_LOG (output.c); NULL before one is found */
};

void out_init(struct out *o, enum out_mode mode, FILE *fp, FILE *err_fp);
void out_reset(struct out *o);
void out_free(struct out *o);
bool out_is_json(const struct out *o);
/* Switch the output mode (-j or -p given after the command; back again after
 * it in a batch or the shell). Text to JSON starts the document; JSON to
 * text drops it (out_finish it first). An error already recorded stays. */
void out_set_mode(struct out *o, enum out_mode mode);
/* This document's schema_version, when its command changed a key since
 * RDMACTL_SCHEMA_VERSION (multicast's report is 3: its sha256 keys are null
 * unless --digest sha256); every other document carries that one. */
void out_schema_version(struct out *o, int version);
/* Build the document in text mode too, from now to the next out_reset(), so
 * that another backend (the --metrics file) renders the values the report
 * emitted; JSON mode builds it always. */
void out_keep_tree(struct out *o);
/* The document so far (NULL: text mode without out_keep_tree). */
json_t *out_tree(const struct out *o);
/* Muted, a report is built (out_keep_tree) but not printed: a rank that
 * writes --metrics but does not print its report. */
void out_mute(struct out *o, bool on);
/* The document of the last event out_event() ended (a summary), NULL when none. */
json_t *out_last_event(const struct out *o);

/* Values: the text format receives the value as its only argument. A NULL
 * format prints nothing in text mode. */
void out_str(struct out *o, const char *key, const char *fmt, const char *val);
void out_u64(struct out *o, const char *key, const char *fmt, uint64_t val);
void out_i64(struct out *o, const char *key, const char *fmt, int64_t val);
void out_f64(struct out *o, const char *key, const char *fmt, double val);
void out_bool(struct out *o, const char *key, const char *fmt, bool val);
void out_null(struct out *o, const char *key);
/* A buffer's memory with register's keys (mem, gpu, registration,
 * registration_notes): text "LEADmem cuda:0 via dmabuf [tried first: ...]",
 * the bounce buffer said plainly. */
void out_mem(struct out *o, const char *lead, enum rc_mem_kind kind, int gpu, enum rc_mem_reg reg,
	     const char *notes);
/* Text-only decoration (headings, newlines); ignored in JSON mode. */
void out_text(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A ready-made JSON value (stolen reference) added under key. */
void out_json(struct out *o, const char *key, json_t *val);

void out_obj_begin(struct out *o, const char *key);
void out_obj_end(struct out *o);
void out_arr_begin(struct out *o, const char *key);
void out_arr_end(struct out *o);

/* Record an error. err is a positive errno value (or 0). */
void out_err(struct out *o, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void out_verr(struct out *o, int err, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
/* The symbolic name of a positive errno (the JSON error "code"), NULL for a
 * value the C library does not know. */
const char *out_errno_name(int err);

/* Log line on stderr, never in the document. */
void out_log(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print the document (JSON modes) and start a new one. For long-running
 * servers, out_event() prints the current document as one line. */
/* Print a JSON value as a document is printed (compact: one line). */
void out_print_json(struct out *o, json_t *doc, bool compact);
void out_finish(struct out *o);
void out_event(struct out *o);

#endif
