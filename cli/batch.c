// SPDX-License-Identifier: MIT
/*
 * rdmactl -b FILE: one command a line, each through the very dispatcher of
 * the command line. With -j the documents are kept and printed at the end
 * as one JSON array of {"command": [...], "line": N, "output": document}.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "words.h"

struct batch {
	struct ctx *ctx;
	const char *name; /* the file as errors name it */
	char where[4200]; /* "FILE:LINE", the error prefix */
	json_t *results;  /* -j: the array printed at the end */
	int failed;
};

static json_t *argv_json(const struct words *w)
{
	json_t *a = json_array();

	for (int i = 0; i < w->argc; i++)
		json_array_append_new(a, json_string(w->argv[i]));
	return a;
}

/* The documents a command printed: one as is, several (a long-running
 * command's events) as an array. */
static json_t *take_output(struct out *o)
{
	json_t *docs = o->captured, *one;

	o->captured = NULL;
	if (!docs)
		return json_null();
	if (json_array_size(docs) != 1)
		return docs;
	one = json_incref(json_array_get(docs, 0));
	json_decref(docs);
	return one;
}

/* Run one logical line, split into w (split: words_split's result), that
 * started at line number lineno. Returns false when it failed. */
static bool run_line(struct batch *b, int split, struct words *w, const char *why, int lineno)
{
	struct ctx *ctx = b->ctx;
	int rc;
	bool ok;

	if (split == 0 && w->argc == 0)
		return true; /* blank or a comment */
	snprintf(b->where, sizeof(b->where), "%s:%d", b->name, lineno);
	ctx->out.err_prefix = b->where;
	ctx->usage_error = false;
	out_reset(&ctx->out);
	if (split)
		rc = usage_err(ctx, "%s", why);
	else
		rc = cmd_dispatch(ctx, w->argc, w->argv);
	out_finish(&ctx->out);
	ok = !rc && !ctx->usage_error && !ctx->out.has_error;
	if (b->results) {
		json_t *entry = json_object();

		json_object_set_new(entry, "command", argv_json(w));
		json_object_set_new(entry, "line", json_integer(lineno));
		json_object_set_new(entry, "output", take_output(&ctx->out));
		json_array_append_new(b->results, entry);
	}
	ctx->out.err_prefix = NULL;
	return ok;
}

/* Append src to the growing *buf. */
static int append(char **buf, size_t *len, const char *src)
{
	size_t n = strlen(src);
	char *p = realloc(*buf, *len + n + 1);

	if (!p)
		return -ENOMEM;
	memcpy(p + *len, src, n + 1);
	*buf = p;
	*len += n;
	return 0;
}

/* Split and run the command gathered in cmd; false when it failed. */
static bool run_text(struct batch *b, const char *cmd, int lineno)
{
	const char *why = NULL;
	struct words w = { 0 };
	int split = words_split(cmd, &w, &why);
	bool ok;

	if (split == WORDS_MORE) { /* only at the end of the file */
		split = -EINVAL;
		why = "a backslash continues the last line past the end of the file";
	}
	ok = run_line(b, split, &w, why, lineno);
	words_free(&w);
	return ok;
}

static bool continued(const char *cmd)
{
	const char *why;
	struct words w;
	int split = words_split(cmd, &w, &why);

	if (split == 0)
		words_free(&w);
	return split == WORDS_MORE;
}

static int read_lines(struct batch *b, FILE *fp, bool force)
{
	char *line = NULL, *cmd = NULL;
	size_t cap = 0, len = 0;
	int lineno = 0, start = 0, rc = 0;
	ssize_t n;

	while ((n = getline(&line, &cap, fp)) >= 0) {
		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if ((rc = append(&cmd, &len, line)))
			break;
		if (!start)
			start = lineno;
		if (continued(cmd)) {
			cmd[--len] = '\0'; /* the backslash joins the next line */
			continue;
		}
		if (!run_text(b, cmd, start))
			b->failed++;
		len = 0;
		start = 0;
		if (b->failed && !force)
			break;
	}
	if (!rc && start && (!b->failed || force)) {
		cmd[len++] = '\\'; /* put back the dangling backslash to report it */
		cmd[len] = '\0';
		if (!run_text(b, cmd, start))
			b->failed++;
	}
	free(line);
	free(cmd);
	if (!rc && ferror(fp))
		rc = -EIO;
	return rc;
}

int batch_run(struct ctx *ctx, const char *path, bool force)
{
	struct batch b = { .ctx = ctx, .name = path };
	FILE *fp = stdin;
	int rc;

	if (input_file(ctx, "--batch", path))
		return EXIT_FAIL;
	if (strcmp(path, "-")) {
		fp = fopen(path, "re");
		if (!fp) {
			fail(ctx, -errno, "cannot open batch file '%s': %s", path, strerror(errno));
			return EXIT_FAIL;
		}
	} else {
		b.name = "stdin";
	}
	if (out_is_json(&ctx->out)) {
		b.results = json_array();
		ctx->out.capture = true;
	}
	rc = read_lines(&b, fp, force);
	if (fp != stdin)
		fclose(fp);
	if (b.results) {
		ctx->out.capture = false;
		ctx->out.cmd = "batch";
		out_print_json(&ctx->out, b.results, false);
		json_decref(b.results);
	}
	/* Nothing of the batch's own is left to print. */
	out_reset(&ctx->out);
	ctx->out.printed = true;
	if (rc) {
		ctx->out.printed = false;
		fail(ctx, rc, "cannot read batch file '%s': %s", b.name, strerror(-rc));
		return EXIT_FAIL;
	}
	return b.failed ? EXIT_FAIL : EXIT_OK;
}
