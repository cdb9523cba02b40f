// SPDX-License-Identifier: MIT
/*
 * Completion from the command table. The scripts in completions/ and the
 * shell's Tab key ask here, so no list of commands or options is kept
 * anywhere else.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "complete.h"
#include "session.h"

struct comp {
	const struct ctx *ctx;
	const char *cur; /* the partial word */
	/* What each candidate is put after: "--lat-clock=" for the values of
	 * "--lat-clock=a", "rxe0," for the devices of "-d rxe0,r". */
	char prefix[128];
	bool shell;
	void (*emit)(void *arg, const char *cand);
	void *arg;
};

static void offer(void *arg, const char *cand)
{
	struct comp *st = arg;
	char word[256];

	snprintf(word, sizeof(word), "%s%s", st->prefix, cand);
	if (!strncmp(word, st->cur, strlen(st->cur)))
		st->emit(st->arg, word);
}

/* The options of opts that c takes (c NULL: all). */
static void offer_opts(struct comp *st, const struct cmd *c, const struct cmd_opt *opts)
{
	char buf[64];

	for (int i = 0; opts && opts[i].name; i++) {
		if (opts[i].hidden || !opt_for(c, &opts[i]))
			continue;
		snprintf(buf, sizeof(buf), "--%s", opts[i].name);
		offer(st, buf);
	}
}

static void offer_cmds(struct comp *st)
{
	for (int i = 0; rdmactl_cmds[i]; i++) {
		const struct cmd *c = rdmactl_cmds[i];

		if (c->hidden || (c->shell_only && !st->shell))
			continue;
		/* An alias runs, but is not shown: help lists none either. */
		offer(st, c->name);
	}
}

/* $RDMACTL_SYSFS names another sysfs root (a captured or fixture tree, as
 * probe-topology --sysfs reads), so the device list can be tested anywhere. */
static void offer_devices(struct comp *st)
{
	const char *root = getenv("RDMACTL_SYSFS");
	char path[4096];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "%s/class/infiniband", root && *root ? root : "/sys");
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			offer(st, e->d_name);
	closedir(d);
}

static void offer_values(struct comp *st, enum comp_kind kind, const char *values)
{
	char word[128];

	switch (kind) {
	case COMP_FILE:
		st->emit(st->arg, COMPLETE_FILES);
		break;
	case COMP_DIR:
		st->emit(st->arg, COMPLETE_DIRS);
		break;
	case COMP_WORDS:
		for (const char *p = values; p && *p;) {
			size_t n = strcspn(p, "|");

			snprintf(word, sizeof(word), "%.*s", (int)n, p);
			offer(st, word);
			p += n + (p[n] == '|');
		}
		break;
	case COMP_DEVICE:
		/* -d rxe0,r: a list of devices, one a rail */
		if (strrchr(st->cur, ','))
			snprintf(st->prefix, sizeof(st->prefix), "%.*s",
				 (int)(strrchr(st->cur, ',') + 1 - st->cur), st->cur);
		offer_devices(st);
		break;
	case COMP_TARGET:
	case COMP_REGION:
		if (st->ctx->session)
			session_names(st->ctx->session, kind, offer, st);
		break;
	case COMP_COMMAND:
		offer_cmds(st);
		break;
	case COMP_NONE:
		break;
	}
}

/* The option words[i] names ("--name", "--name=x", "-x", "-xVALUE"), and
 * whether its argument is the next word. NULL when it is not an option. */
static const struct cmd_opt *option_of(const struct cmd_opt *opts, const char *w, bool *arg_next)
{
	*arg_next = false;
	if (w[0] != '-' || !w[1])
		return NULL;
	if (w[1] == '-') {
		size_t n = strcspn(w + 2, "=");

		for (int i = 0; opts && opts[i].name; i++) {
			if (strlen(opts[i].name) == n && !strncmp(opts[i].name, w + 2, n)) {
				*arg_next = opts[i].arg && !w[2 + n];
				return &opts[i];
			}
		}
		return NULL;
	}
	/* A cluster of short options: the first one taking an argument ends it. */
	for (const char *p = w + 1; *p; p++) {
		for (int i = 0; opts && opts[i].name; i++) {
			if (opts[i].short_name != *p)
				continue;
			if (opts[i].arg) {
				*arg_next = !p[1];
				return &opts[i];
			}
		}
	}
	return NULL;
}

/* An option of opts, or a global one that may follow the command (after a
 * command: its table first), named by w; NULL when none. */
static const struct cmd_opt *option_here(const struct cmd_opt *opts, const char *w, bool *arg_next)
{
	const struct cmd_opt *o = option_of(opts, w, arg_next);

	if (!o && opts != rdmactl_global_opts) {
		o = option_of(rdmactl_global_opts, w, arg_next);
		if (o && !o->anywhere)
			o = NULL;
	}
	return o;
}

/* The word being completed is "--name=VALUE": the values of that option,
 * each after "--name=" (no paths: the scripts complete those from an empty
 * word). False when it is not such a word. */
static bool offer_after_eq(struct comp *st, const struct cmd_opt *opts)
{
	const char *eq = strchr(st->cur, '=');
	const struct cmd_opt *o;
	bool arg_next;

	if (strncmp(st->cur, "--", 2) || !eq)
		return false;
	o = option_here(opts, st->cur, &arg_next);
	if (!o || !o->arg || o->comp == COMP_FILE || o->comp == COMP_DIR)
		return true;
	snprintf(st->prefix, sizeof(st->prefix), "%.*s", (int)(eq + 1 - st->cur), st->cur);
	offer_values(st, o->comp, o->values);
	return true;
}

void complete_words(const struct ctx *ctx, char *const *words, int nwords, bool shell,
		    void (*emit)(void *arg, const char *cand), void *arg)
{
	struct comp st = { .ctx = ctx, .shell = shell, .emit = emit, .arg = arg };
	const struct cmd_opt *o;
	const struct cmd *c;
	int last = nwords - 1, i = 0;
	bool arg_next, positional = false;

	st.cur = nwords > 0 ? words[last] : "";
	/* Global options come before the command on the command line. */
	while (!shell && i < last && words[i][0] == '-') {
		o = option_of(rdmactl_global_opts, words[i], &arg_next);
		if (!strcmp(words[i], "--")) {
			i++;
			break;
		}
		if (o && arg_next && ++i == last) {
			offer_values(&st, o->comp, o->values);
			return;
		}
		i++;
	}
	if (i >= last) {
		if (!shell && offer_after_eq(&st, rdmactl_global_opts))
			return;
		if (!shell && st.cur[0] == '-')
			offer_opts(&st, NULL, rdmactl_global_opts);
		else
			offer_cmds(&st);
		return;
	}
	c = cmd_find(words[i]);
	if (!c || c->hidden || (c->shell_only && !shell))
		return;
	/* A nested sub-command completes from its own table. */
	if (c->subs && i + 1 < last && cmd_sub_find(c, words[i + 1]))
		c = cmd_sub_find(c, words[++i]);
	for (i++; i < last; i++) {
		if (!strcmp(words[i], "--")) {
			positional = true;
			continue;
		}
		o = positional ? NULL : option_here(c->opts, words[i], &arg_next);
		/* bash without bash-completion splits "--opt=" into "--opt" "=" */
		if (o && arg_next && i + 2 == last && !strcmp(words[i + 1], "="))
			i++;
		if (o && arg_next && ++i == last) {
			offer_values(&st, o->comp, o->values);
			return;
		}
	}
	if (!positional && offer_after_eq(&st, c->opts))
		return;
	if (!positional && st.cur[0] == '-')
		offer_opts(&st, c, c->opts);
	else if (c->args)
		offer_values(&st, c->args_comp, c->args_comp == COMP_WORDS ? c->args : NULL);
}

static void print_line(void *arg, const char *cand)
{
	fprintf(arg, "%s\n", cand);
}

/* rdmactl __complete WORDS...: the words after the program name, the last
 * one being completed. Never parses them as its own options. */
static int do_complete(struct ctx *ctx, int argc, char **argv)
{
	char *none[] = { "" };

	if (argc < 2)
		complete_words(ctx, none, 1, false, print_line, ctx->out.fp);
	else
		complete_words(ctx, argv + 1, argc - 1, false, print_line, ctx->out.fp);
	return 0;
}

const struct cmd cmd_complete = {
	.name = "__complete",
	.run = do_complete,
	.args = "WORDS...",
	.summary = "print completion candidates for the last word (for the completion scripts)",
	.hidden = true,
};
