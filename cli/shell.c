// SPDX-License-Identifier: MIT
/*
 * rdmactl shell: the command line's dispatcher behind GNU readline, with a
 * session that outlives each command (regions served in the background,
 * client connections kept open). See rdmactl-shell(8).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include <rdmactl/parse.h>

#include "cli.h"
#include "cmds.h"
#include "complete.h"
#include "session.h"
#include "words.h"

#define PROMPT "rdmactl> "
#define PROMPT_MORE "> "
#define HISTORY_MAX 1000
#define CANDS_MAX 512

struct shell {
	struct ctx *ctx;
	char history[4096]; /* "" when none is kept */
	const char *prompt;
	char *cands[CANDS_MAX];
	int ncands, next;
	bool files;    /* complete a path instead */
	bool tty;      /* stdin is a terminal: readline, a prompt, a banner */
	int exit_code; /* exit N: the shell's own status (-1: none given) */
};

/*
 * readline's callbacks take no argument: this is the one way they reach
 * the shell, set only while shell_run() runs. The signal flag is the other
 * exception to "state lives in struct ctx": a handler can only set a flag.
 */
static struct shell *active;
static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

/* readline saw its read interrupted by a signal. */
static int on_signal_event(void)
{
	if (got_signal == SIGINT) {
		/* Ctrl-C drops the line being typed, as in bash. */
		got_signal = 0;
		rl_replace_line("", 0);
		rl_crlf();
		rl_on_new_line();
		rl_redisplay();
	} else if (got_signal) {
		rl_replace_line("", 0);
		rl_done = 1;
	}
	return 0;
}

/* Called while readline waits for a key: show server events at once,
 * above the line being typed. */
static int on_idle(void)
{
	struct shell *sh = active;
	char *text;
	int point;

	/* With an event hook, readline swallows an interrupted wait itself. */
	if (got_signal)
		on_signal_event();
	if (!sh || !session_pending(sh->ctx->session))
		return 0;
	text = rl_copy_text(0, rl_end);
	point = rl_point;
	rl_set_prompt("");
	rl_replace_line("", 0);
	rl_redisplay();
	session_drain(sh->ctx->session, sh->ctx);
	rl_set_prompt(sh->prompt);
	rl_replace_line(text ? text : "", 0);
	rl_point = point;
	rl_forced_update_display();
	free(text);
	return 0;
}

static void add_cand(void *arg, const char *cand)
{
	struct shell *sh = arg;

	if (!strcmp(cand, COMPLETE_FILES) || !strcmp(cand, COMPLETE_DIRS)) {
		sh->files = true;
		return;
	}
	for (int i = 0; i < sh->ncands; i++)
		if (!strcmp(sh->cands[i], cand))
			return;
	if (sh->ncands < CANDS_MAX)
		sh->cands[sh->ncands++] = strdup(cand);
}

static void clear_cands(struct shell *sh)
{
	for (int i = 0; i < sh->ncands; i++)
		free(sh->cands[i]);
	sh->ncands = 0;
	sh->next = 0;
	sh->files = false;
}

/* rl_completion_matches() hands the candidates out one by one; readline
 * frees what it gets. */
static char *next_cand(const char *text, int state)
{
	struct shell *sh = active;

	(void)text;
	while (sh->next < sh->ncands) {
		char *c = sh->cands[sh->next];

		sh->cands[sh->next++] = NULL;
		if (c)
			return c;
	}
	return NULL;
}

static char **on_complete(const char *text, int start, int end)
{
	struct shell *sh = active;
	char *before = strndup(rl_line_buffer, (size_t)start), **argv;
	const char *why;
	struct words w;
	char **matches = NULL;

	(void)end;
	rl_attempted_completion_over = 1;
	if (!before || words_split(before, &w, &why)) {
		free(before);
		return NULL;
	}
	argv = calloc((size_t)w.argc + 2, sizeof(char *));
	if (argv) {
		memcpy(argv, w.argv, sizeof(char *) * (size_t)w.argc);
		argv[w.argc] = (char *)text;
		clear_cands(sh);
		complete_words(sh->ctx, argv, w.argc + 1, true, add_cand, sh);
		if (w.argc == 0) {
			if (!strncmp("exit", text, strlen(text)))
				add_cand(sh, "exit");
			if (!strncmp("quit", text, strlen(text)))
				add_cand(sh, "quit");
		}
		if (sh->files)
			rl_attempted_completion_over = 0; /* readline completes the path */
		else if (sh->ncands)
			matches = rl_completion_matches(text, next_cand);
		clear_cands(sh);
	}
	free(argv);
	words_free(&w);
	free(before);
	return matches;
}

static void history_path(struct shell *sh, const char *opt)
{
	const char *env = getenv("RDMACTL_HISTORY"), *home = getenv("HOME");

	if (opt)
		snprintf(sh->history, sizeof(sh->history), "%s", opt);
	else if (env)
		snprintf(sh->history, sizeof(sh->history), "%s", env); /* "": none */
	else if (home && *home)
		snprintf(sh->history, sizeof(sh->history), "%s/.rdmactl_history", home);
}

static void history_start(struct shell *sh)
{
	using_history();
	stifle_history(HISTORY_MAX);
	if (!sh->history[0])
		return;
	if (read_history(sh->history) == ENOENT && write_history(sh->history)) {
		out_log(&sh->ctx->out, "cannot create the history file '%s': %s", sh->history,
			strerror(errno));
		sh->history[0] = '\0';
	}
}

/* Saved after each line, so a shell that is killed loses none. */
static void history_add(struct shell *sh, const char *line)
{
	int rc;

	add_history(line);
	if (!sh->history[0])
		return;
	rc = append_history(1, sh->history);
	if (!rc)
		rc = history_truncate_file(sh->history, HISTORY_MAX);
	if (rc) {
		out_log(&sh->ctx->out, "cannot save the history to '%s': %s (no longer saving it)",
			sh->history, strerror(rc));
		sh->history[0] = '\0';
	}
}

static void run_words(struct shell *sh, struct words *w, int split, const char *why)
{
	struct ctx *ctx = sh->ctx;

	ctx->usage_error = false;
	out_reset(&ctx->out);
	if (split)
		usage_err(ctx, "%s", why);
	else
		cmd_dispatch(ctx, w->argc, w->argv);
	out_finish(&ctx->out);
}

static bool is_exit(const struct words *w)
{
	return w->argc && (!strcmp(w->argv[0], "exit") || !strcmp(w->argv[0], "quit"));
}

/* exit [N]: true when the shell is to leave (N, when given, is its status);
 * a bad N is an error and the shell goes on. */
static bool take_exit(struct shell *sh, const struct words *w)
{
	uint64_t n;

	if (w->argc == 1)
		return true;
	if (w->argc == 2 && !rc_parse_u64(w->argv[1], &n) && n <= 255) {
		sh->exit_code = (int)n;
		return true;
	}
	sh->ctx->usage_error = false;
	out_reset(&sh->ctx->out);
	usage_err(sh->ctx, "%s: expected no argument or a status from 0 to 255", w->argv[0]);
	out_finish(&sh->ctx->out);
	return false;
}

/* The next line: readline on a terminal; from a pipe or a file, the plain
 * line, with no prompt or echo in the output (-j shell stays JSON). */
static char *next_line(struct shell *sh)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (sh->tty)
		return readline(sh->prompt);
	n = getline(&line, &cap, stdin);
	if (n < 0) {
		free(line);
		return NULL;
	}
	if (n && line[n - 1] == '\n')
		line[n - 1] = '\0';
	return line;
}

static void loop(struct shell *sh)
{
	char *acc = NULL, *line;
	size_t len = 0;

	for (;;) {
		struct words w = { 0 };
		const char *why = NULL;
		int split;
		char *grown;

		session_drain(sh->ctx->session, sh->ctx);
		sh->prompt = len ? PROMPT_MORE : PROMPT;
		got_signal = 0;
		line = next_line(sh);
		if (got_signal && got_signal != SIGINT) {
			free(line);
			break;
		}
		if (!line) {
			if (sh->tty)
				putchar('\n'); /* Ctrl-D */
			break;
		}
		grown = realloc(acc, len + strlen(line) + 1);
		if (!grown) {
			free(line);
			break;
		}
		acc = grown;
		strcpy(acc + len, line);
		len += strlen(line);
		free(line);
		split = words_split(acc, &w, &why);
		if (split == WORDS_MORE) {
			acc[--len] = '\0'; /* the backslash joins the next line */
			continue;
		}
		if (acc[strspn(acc, " \t")])
			history_add(sh, acc);
		len = 0;
		if (split == 0 && is_exit(&w) && take_exit(sh, &w)) {
			words_free(&w);
			break;
		}
		if (split == 0 && is_exit(&w)) {
			words_free(&w);
			continue;
		}
		if (split || w.argc)
			run_words(sh, &w, split, why);
		words_free(&w);
	}
	free(acc);
}

int shell_run(struct ctx *ctx, int argc, char **argv)
{
	struct shell sh = { .ctx = ctx,
			    .prompt = PROMPT,
			    .tty = isatty(STDIN_FILENO),
			    .exit_code = -1 };
	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term, old_hup;
	struct opt_vals v;
	struct rc_err e;
	struct shell_args args;
	int rc = opts_parse(ctx, &cmd_shell, argc, argv, &v);

	if (rc)
		return rc < 0 ? rc : 0;
	if (v.npos)
		return usage_err(ctx, "shell: unexpected argument '%s'", v.pos[0]);
	ctx->session = session_new();
	if (!ctx->session)
		return fail(ctx, -ENOMEM, "out of memory");
	opts_fill_all(ctx, &cmd_shell, &v, &args); /* a string: cannot fail */
	history_path(&sh, args.history);
	active = &sh;
	rl_readline_name = "rdmactl";
	rl_attempted_completion_function = on_complete;
	rl_completer_quote_characters = "'\"";
	/* readline polls its event hook instead of reading, and never sees the
	 * end of a pipe: the hook only serves a terminal. Without it, events
	 * are shown before each prompt. */
	if (isatty(STDIN_FILENO))
		rl_event_hook = on_idle;
	rl_signal_event_hook = on_signal_event;
	rl_catch_signals = 0;
	/* No SA_RESTART: a signal interrupts readline's read, which calls
	 * on_signal_event. While a command runs, Ctrl-C is ignored: every
	 * command's waits are bounded by --timeout. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);
	history_start(&sh);
	if (sh.tty && !out_is_json(&ctx->out))
		printf("rdmactl shell: 'help' lists the commands, 'help COMMAND' one's options; 'exit' or Ctrl-D leaves\n");

	loop(&sh);

	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	rl_event_hook = NULL;
	rl_signal_event_hook = NULL;
	rl_attempted_completion_function = NULL;
	active = NULL;
	/* The commands' results stay in the shell: its own is the teardown's. */
	ctx->usage_error = false;
	out_reset(&ctx->out);
	rc = session_free(ctx->session, &e);
	ctx->session = NULL;
	if (rc)
		return fail(ctx, rc, "%s", e.msg);
	ctx->out.printed = true; /* each command printed its own document */
	if (sh.exit_code > 0)
		ctx->exit_code = sh.exit_code;
	return 0;
}
