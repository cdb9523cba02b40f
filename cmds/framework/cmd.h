/* SPDX-License-Identifier: MIT */
/*
 * The command table: each subcommand declares its options in one table
 * next to its handler. The parser, the help text, the completion answers
 * and the man page drift test all read these tables, so an option exists
 * in one place only.
 */
#ifndef RDMACTL_CMD_H
#define RDMACTL_CMD_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdmactl/mem.h>
#include <rdmactl/parse.h>

#include "output.h"

/* Exit codes of the program: EXIT_AUTH when the command failed because a
 * peer refused its token or proof, or failed to prove one (libcore's
 * -EKEYREJECTED), so an orchestrator tells it from a closed port. */
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_AUTH = 3 };

/* How a shell may complete an option's argument. */
enum comp_kind {
	COMP_NONE,    /* free text */
	COMP_FILE,    /* a path */
	COMP_DIR,     /* a directory */
	COMP_WORDS,   /* one of the '|'-separated words in opt.values */
	COMP_DEVICE,  /* an RDMA device name */
	COMP_TARGET,  /* HOST:PORT/REGION, completed from the shell's known peers */
	COMP_REGION,  /* a region served by this shell */
	COMP_COMMAND, /* a command name */
};

/* What a typed option row holds (OPT_NONE: read through the accessors). */
enum opt_type {
	OPT_NONE,
	OPT_T_FLAG,   /* bool: given or not */
	OPT_T_STR,    /* const char *: the argument as given */
	OPT_T_SIZE,   /* uint64_t: 4096, 4K, 1M, 1G */
	OPT_T_U64,    /* uint64_t: a non-negative integer */
	OPT_T_U32,    /* uint32_t in [min, max] */
	OPT_T_INT,    /* int in [min, max] */
	OPT_T_WORD,   /* int: the index of the argument among the words of values */
	OPT_T_DOUBLE, /* double in [dlo, dhi] (above dlo when open) */
	OPT_T_RATE,   /* double: bytes/s from "100Gbit", "12.5GB"; a bare number in unit bytes/s */
	OPT_T_DUR,    /* int: milliseconds from N, Nms, Ns or Nm (s when bare), in [min, max] */
};

struct cmd_opt {
	const char *name; /* long name, without "--" */
	char short_name;  /* 0 when none */
	const char *arg;  /* metavariable, NULL for a flag */
	const char *help;
	enum comp_kind comp;
	const char *values; /* for COMP_WORDS: "host|hugepage|file" */
	bool repeat;        /* may be given more than once */
	bool hidden;        /* a test hook: parsed, never offered (help, completion) */
	/* A global option that may also stand after the command (rdmactl(8),
	 * GLOBAL OPTIONS): -j -p -d -g -t -v. -V, -b and --force choose what runs
	 * and come before it. */
	bool anywhere;
	/* A typed row (OPT_FLAG, OPT_SIZE... below): opts_fill stores its value
	 * at off in the command's argument struct, checked against [min, max],
	 * def (the text help shows as "(default X)") when it is absent. */
	enum opt_type type;
	size_t off;
	int64_t min, max;
	const char *def;
	double dlo, dhi, unit; /* OPT_T_DOUBLE: the bounds; OPT_T_RATE: a bare number's unit */
	bool open;             /* OPT_T_DOUBLE: dlo itself refused */
	/* OPT_GIVEN: the argument as given (NULL: absent) at given_off - 1. */
	size_t given_off;
	/* In the table of a command with sub-commands (shared by them, at the
	 * same indexes): bit i (OPT_SUB(i)) set when subs[i] takes the option;
	 * 0: every one does. */
	unsigned in;
};

#define OPT_END \
	{ \
		0 \
	}
/* The most options one table may hold: opts_parse builds its getopt tables on
 * the stack for this many. */
#define OPT_MAX 48
/* After every option table: a table that does not fit opts_parse is a build
 * error, not a stack overrun (OPT_END is the entry past the last). */
#define OPTS_FIT(table) \
	_Static_assert(sizeof(table) / sizeof((table)[0]) <= OPT_MAX + 1, \
		       #table " holds more options than opts_parse takes (OPT_MAX)")
#define POS_MAX 16
#define REPEAT_MAX 32

/* Parsed options: vals[i] is the (last) argument of opts[i]; count[i] how
 * often it was given. Repeated options keep every argument in order in
 * multi[] with the option index in multi_idx[]. */
struct opt_vals {
	const char *vals[OPT_MAX];
	int count[OPT_MAX];
	const char *multi[REPEAT_MAX];
	int multi_idx[REPEAT_MAX];
	int nmulti;
	char *pos[POS_MAX];
	int npos;
};

struct rc_session; /* the interactive shell's state, NULL elsewhere */

/* Global options and the output object, threaded through every handler. */
struct ctx {
	struct out out;
	const char *prog;
	const char *dev_name; /* -d: RDMA device */
	int gid_index;        /* -g: GID index override, -1 for automatic */
	int timeout_ms;       /* -t: connect and completion timeout */
	int verbose;
	bool usage_error; /* set by usage errors: exit code 2 */
	int exit_code;    /* when not 0, the status to exit with (the shell's exit N) */
	struct rc_session *session;
	/* The interactive shell lives in cli/, above cmds/: the program installs
	 * its entry point here, so the table entry "shell" reaches it without an
	 * arrow from cmds/ back up to cli/. NULL where no shell may start (a
	 * batch); inside the shell, session is set and a second one refused. */
	int (*shell)(struct ctx *ctx, int argc, char **argv);
};

struct cmd {
	const char *name;
	const char *const *aliases; /* NULL-terminated or NULL */
	int (*run)(struct ctx *ctx, int argc, char **argv);
	const struct cmd_opt *opts;
	const char *args;         /* positional synopsis, e.g. "TARGET" */
	enum comp_kind args_comp; /* how to complete the positional arguments;
				   * COMP_WORDS offers the words of args ("a|b") */
	const char *summary;
	bool hidden;
	bool long_running; /* serves until a signal: prints events */
	bool shell_only;   /* exists inside `rdmactl shell` only */
	/* Nested sub-commands, NULL-terminated, as iproute2 and bpftool nest
	 * theirs (each named by its whole path, "kvxfer plan"); NULL: none. The
	 * dispatcher runs the one the first word after the command names, or,
	 * with options first, the first positional word (run is unused). */
	const struct cmd *const *subs;
	/* A sub-command: the command it is nested in. Its options are the rows
	 * of parent->opts (the same table, the same indexes) that name it in
	 * their in; the dispatcher parses its words once against that table,
	 * an option of another sub-command refused naming the one it belongs
	 * to, and calls run_opts with the values (run is unused). */
	const struct cmd *parent;
	int (*run_opts)(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v);
};

/* Rows of a table shared by sub-commands: OPT_IN(OPT_SUB(0) | OPT_SUB(2))
 * after the row's type says that subs[0] and subs[2] take it. */
#define OPT_SUB(i) (1u << (i))
#define OPT_IN(mask) .in = (mask)

/* The table, NULL-terminated. */
extern const struct cmd *const rdmactl_cmds[];

const struct cmd *cmd_find(const char *name);
/* The sub-command of c named word (the last word of its name), or NULL. */
const struct cmd *cmd_sub_find(const struct cmd *c, const char *word);
/* Whether command c takes option o of its table: always, but for a
 * sub-command and a row whose in leaves it out. */
bool opt_for(const struct cmd *c, const struct cmd_opt *o);
/* The usage error for option o given to sub-command c, which does not take
 * it: "kvxfer send: --scatter does not apply here: --scatter belongs to
 * 'kvxfer serve', not 'kvxfer send'". Returns -EINVAL. */
int opt_not_for(struct ctx *ctx, const struct cmd *c, const struct cmd_opt *o);
/* Its text, into buf (subs.c). */
void opt_not_for_text(const struct cmd *c, const struct cmd_opt *o, char *buf, size_t cap);
/* The sub-commands of c whose bit is in mask: their last words joined as
 * "a, b or c" (joint " or "), or their whole names quoted (quote set). */
void cmd_subs_words(const struct cmd *c, unsigned mask, bool quote, const char *joint, char *buf,
		    size_t cap);
/* Right after getopt_long returned the long option o: the word that named
 * it when that was an abbreviation (--siz for --size), else NULL. getopt_long
 * takes unique prefixes; rdmactl takes whole names only. */
struct option;
const char *opt_abbrev(char **argv, const struct option *o);
/* Of the n words, the one closest to word, when word looks like a typo of
 * it (a few edits, or the start of it), else NULL: the "did you mean". */
const char *word_suggest(const char *word, const char *const *words, size_t n);
/* The usage error for a command name that is none, with the closest name
 * when it looks like a typo. Returns -EINVAL. */
int cmd_unknown(struct ctx *ctx, const char *name);
/* Run argv[0] as a command; prints errors through ctx->out. Global options
 * given after the command (opts_parse) hold for that command alone. */
int cmd_dispatch(struct ctx *ctx, int argc, char **argv);
void cmd_usage(const struct cmd *c, FILE *fp);
/* One help line: left (at indent), then text from column col, wrapped to
 * the terminal (80 columns when fp is not one). */
void help_line(FILE *fp, int indent, const char *left, int col, const char *text);
/* The command list (c NULL), or one command's usage, as text or (-j) JSON:
 * what help and every --help print. */
void help_print(struct ctx *ctx, const struct cmd *c);
void opts_print(const struct cmd_opt *opts, FILE *fp);
extern const struct cmd_opt rdmactl_global_opts[];
/* The global option g (one whose row is anywhere) with its argument arg, set
 * in ctx: the one place that takes their values, before the command
 * (cli/main.c) and after it (opts_parse). 0, or -EINVAL with *bad saying
 * why. */
int global_take(struct ctx *ctx, const struct cmd_opt *g, const char *arg, const char **bad);
/* The global options' defaults (their rows' OPT_DEFAULT: --timeout's) into
 * ctx, before the command line is read. */
void globals_default(struct ctx *ctx);
/* The commands one may run: shell-only ones too when shell is set. */
void cmds_list(FILE *fp, bool shell);
/* "file", "words"...: how -j help names a completion kind. */
const char *comp_kind_name(enum comp_kind k);

/* Parse argv against c->opts. "-h/--help" prints usage and returns 1.
 * Returns 0, 1 (help shown) or -EINVAL after a usage error. */
int opts_parse(struct ctx *ctx, const struct cmd *c, int argc, char **argv, struct opt_vals *v);
/* The index of the option called name in c->opts, -1 if it has none. */
int opt_index(const struct cmd *c, const char *name);
/* Options in a table, OPT_END not counted. */
int opts_count(const struct cmd_opt *opts);

/* Options bound to indexes. A command lists its options once, as an X-macro
 * X(ID, "name", short, "ARG", "help"...): OPT_INDEX makes its enum of
 * indexes, OPT_ENTRY its table in the same order, and OPTS_BOUND checks at
 * build time that the two match and fit the parser. A misspelt ID does not
 * build (a misspelt name string, with the accessors further down, would
 * quietly read as absent). */
#define OPT_INDEX(id, ...) id,
#define OPT_ENTRY(id, ...) [id] = { __VA_ARGS__ },
#define OPTS_BOUND(table, count) \
	OPTS_FIT(table); \
	_Static_assert(sizeof(table) / sizeof((table)[0]) == (count) + 1, \
		       #table " does not match its enum of indexes")

/* Typed rows: the last arguments of an X(...) row, after the help (and any
 * comp, values), name the field of the command's argument struct S that
 * opts_fill fills. The field's type is checked at build time (_Generic has
 * no match otherwise). D is the default as help shows it, NULL for none
 * (the field then keeps what the command set). */
#define OPT_FIELD(S, f, T) (offsetof(S, f) + 0 * sizeof(_Generic(((S *)0)->f, T : 1)))
#define OPT_FLAG(S, f) .type = OPT_T_FLAG, .off = OPT_FIELD(S, f, bool)
#define OPT_STR(S, f, D) .type = OPT_T_STR, .off = OPT_FIELD(S, f, const char *), .def = (D)
#define OPT_SIZE(S, f, D) .type = OPT_T_SIZE, .off = OPT_FIELD(S, f, uint64_t), .def = (D)
#define OPT_U64(S, f, D) .type = OPT_T_U64, .off = OPT_FIELD(S, f, uint64_t), .def = (D)
#define OPT_U32(S, f, LO, HI, D) \
	.type = OPT_T_U32, .off = OPT_FIELD(S, f, uint32_t), .min = (LO), .max = (HI), .def = (D)
#define OPT_INT(S, f, LO, HI, D) \
	.type = OPT_T_INT, .off = OPT_FIELD(S, f, int), .min = (LO), .max = (HI), .def = (D)
/* The row's comp is COMP_WORDS and its values "a|b|c": the field is the index. */
#define OPT_WORD(S, f, D) .type = OPT_T_WORD, .off = OPT_FIELD(S, f, int), .def = (D)
/* A decimal from LO to HI; OPT_DOUBLE_ABOVE refuses LO itself. HI may be
 * INFINITY (any finite number from LO). */
#define OPT_DOUBLE(S, f, LO, HI, D) \
	.type = OPT_T_DOUBLE, .off = OPT_FIELD(S, f, double), .dlo = (LO), .dhi = (HI), .def = (D)
#define OPT_DOUBLE_ABOVE(S, f, LO, HI, D) OPT_DOUBLE(S, f, LO, HI, D), .open = true
/* A rate into bytes/s (opt_rate_parse); a bare number is in UNIT bytes/s. */
#define OPT_RATE(S, f, UNIT, D) \
	.type = OPT_T_RATE, .off = OPT_FIELD(S, f, double), .unit = (UNIT), .def = (D)
/* A duration into milliseconds, from LO to HI ms (opt_dur_parse). */
#define OPT_DUR(S, f, LO, HI, D) \
	.type = OPT_T_DUR, .off = OPT_FIELD(S, f, int), .min = (LO), .max = (HI), .def = (D)
/* After a typed row's type: the field g of S gets the argument as given,
 * NULL when the option is absent (a default tells nothing of that), for
 * "given" checks and for messages that quote it. */
#define OPT_GIVEN(S, g) .given_off = OPT_FIELD(S, g, const char *) + 1
/* The default of a row without a type (one read another way: a repeated
 * option, a global one), as help shows it; the code reads it from the row
 * (opt_arg_def), so it is written once. */
#define OPT_DEFAULT(D) .def = (D)

/* Fill args from the typed rows first..last-1 of c->opts (in that order):
 * each given value parsed, each absent one with a default set to it. The
 * first bad value is a usage error naming the option, the accessors' words.
 * Returns 0 or -EINVAL. Rows without a type are left to the accessors. */
int opts_fill(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int first, int last,
	      void *args);
/* The whole table. */
#define opts_fill_all(ctx, c, v, args) opts_fill(ctx, c, v, 0, opts_count((c)->opts), args)
/* Every OPT_GIVEN field of c's rows set from v, no value parsed: for a
 * command that checks what was given before it parses the values. */
void opts_given(const struct cmd *c, const struct opt_vals *v, void *args);
/* The same for rows first..last-1 only (a block with a struct of its own). */
void opts_given_at(const struct cmd *c, const struct opt_vals *v, int first, int last, void *args);
/* o's help as shown: with " (default D)" when the row has one. */
const char *opt_help(const struct cmd_opt *o, char *buf, size_t cap);
/* o's help as command c shows it: for a command with sub-commands, led
 * by those that take it when not all do ("serve, send: ..."), so a help
 * text never names them by hand. */
const char *cmd_opt_help(const struct cmd *c, const struct cmd_opt *o, char *buf, size_t cap);

/* By index: the (last) argument of option i, NULL when absent; given or not. */
static inline const char *opt_arg(const struct opt_vals *v, int i)
{
	return v->count[i] ? v->vals[i] : NULL;
}
static inline bool opt_on(const struct opt_vals *v, int i)
{
	return v->count[i] > 0;
}
/* By index: the argument of option i, else its row's default (OPT_DEFAULT). */
static inline const char *opt_arg_def(const struct cmd *c, const struct opt_vals *v, int i)
{
	return v->count[i] ? v->vals[i] : c->opts[i].def;
}
/* Typed accessors by index: return 0 (value stored, or option absent and
 * *out untouched) or -EINVAL after printing a usage error naming the
 * option. An integer is checked against [min, max]. */
/* A size for --name s into *out: 0, or -EINVAL after a usage error that says
 * whether it is malformed or too large. */
int opt_size_parse(struct ctx *ctx, const char *name, const char *s, uint64_t *out);
int opt_size_at(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int i,
		uint64_t *out);
int opt_u64_at(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int i, uint64_t *out);
int opt_int_at(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int i, int min,
	       int max, int *out);
/* A rate in bytes/s for --name s (opt_values.c: "100Gbit", "12.5GB"; a bare
 * number is in bare_unit bytes/s, a bare "100G" is refused). 0 or -EINVAL
 * after a usage error naming the option. */
int opt_rate_parse(struct ctx *ctx, const char *name, const char *s, double bare_unit, double *out);
/* A duration for --o->name s into *ms: N, Nms, Ns or Nm (seconds when bare),
 * from o->min to o->max ms. 0 or -EINVAL after a usage error that names
 * the bounds ("expected 100ms to 24h, such as 500ms, 30s or 5m"). */
int opt_dur_parse(struct ctx *ctx, const struct cmd_opt *o, const char *s, int *ms);
/* A decimal for the OPT_DOUBLE row o: 0, or -EINVAL (no message) when s is
 * not a number in its bounds. */
int opt_double_parse(const struct cmd_opt *o, const char *s, double *out);
/* By index: where option i's word stands in words (NULL-terminated). */
int opt_word_at(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int i,
		const char *const *words, int *out);
/* The token, from the first given of: --token TOKEN at index i_token (any
 * local user reads it in /proc), --token-file FILE at i_file
 * (opt_secret_file), $RDMACTL_TOKEN (empty: unset). -1 for an index the
 * command lacks. *out is NULL (none), buf (read from the file) or the
 * argument; the token is checked (rc_token_valid). 0 or -EINVAL after a
 * usage error: both options, a bad file, an invalid token naming its source. */
int opt_token(struct ctx *ctx, const struct opt_vals *v, int i_token, int i_file,
	      char buf[RC_TOKEN_MAX + 1], const char **out);
/* The same from the arguments as given (typed rows: OPT_STR of --token and
 * --token-file, NULL when absent). */
int token_take(struct ctx *ctx, const char *token, const char *token_file,
	       char buf[RC_TOKEN_MAX + 1], const char **out);
/* A secret from a file, for --OPT PATH: its first line without the line
 * end, into buf (cap bytes with the NUL). Refused, naming the file: one that
 * cannot be read, is a directory or is a regular file that group or others
 * may read or write (ssh's rule for keys) (a failure, exit 1, as every input
 * file that cannot be used); an empty first line, one that does not fit
 * (malformed contents: usage errors). */
int opt_secret_file(struct ctx *ctx, const char *opt, const char *path, char *buf, size_t cap);
/* By index: an --admin-token-file FILE option (its one line), else
 * $RDMACTL_ADMIN_TOKEN, into out ("" when neither is set). Returns 0 or
 * what usage_err returned (a file that cannot be read or holds no token). */
int opt_admin_token_at(struct ctx *ctx, const struct opt_vals *v, int i, char out[RC_TOKEN_MAX + 1]);
/* The same from --admin-token-file as given (NULL: absent). */
int admin_token_take(struct ctx *ctx, const char *path, char out[RC_TOKEN_MAX + 1]);

/* --mem ARG (NULL: host): host, hugepage, cuda or cuda:N. A build without
 * CUDA refuses cuda plainly, and so does a caller that cannot use GPU memory
 * (cuda_ok false: why_not_cuda says why). Returns 0, or what usage_err or
 * fail returned. */
int opt_mem(struct ctx *ctx, const char *arg, bool cuda_ok, const char *why_not_cuda,
	    enum rc_mem_kind *kind, int *gpu);
/* After the usage checks, before any connection or group: for GPU memory,
 * whether the driver loads and GPU gpu exists (rc_mem_gpu_check), a failure
 * naming which. Returns 0 or what fail returned. */
int opt_mem_ready(struct ctx *ctx, const char *arg, enum rc_mem_kind kind, int gpu);

/* Report a usage error: message, hint, exit code 2. Returns -EINVAL. */
int usage_err(struct ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A local file the command is to read (path "-": stdin, always fine),
 * checked before any device is opened: a missing, unreadable one or a
 * folder is a failure (exit 1) naming what (an option) and the path. */
int input_file(struct ctx *ctx, const char *what, const char *path);
/* A local file the command is to write (created when missing), checked
 * before any device is opened: a folder, a missing folder to create it in,
 * or one it cannot create files in is a failure (exit 1) naming what and the
 * path. */
int output_file(struct ctx *ctx, const char *what, const char *path);
/* A test hook's pause (never in user help): creates PATH.MARK to say it
 * got there, then waits, at most 60 s, until PATH exists. */
void test_hook_wait(const char *path, const char *mark);
/* Report a failure from libcore. Returns rc. */
int fail(struct ctx *ctx, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
