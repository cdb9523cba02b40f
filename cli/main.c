// SPDX-License-Identifier: MIT
/* rdmactl: global options, the output mode, exit codes; batch and shell
 * start from here. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <rdmactl/parse.h>

#include "cli.h"
#include "cmds.h"

/* An unknown global option: tok ("--name..."), or the letter of "-x". */
static int bad_global(struct cli_opts *co, const char *tok, int letter)
{
	const char *names[OPT_MAX + 1], *near = NULL;
	size_t n = 0, len;
	char name[64];

	if (!tok) {
		snprintf(co->bad_buf, sizeof(co->bad_buf),
			 "unknown global option '-%c' (see 'rdmactl --help'; a command's own options go after it)",
			 letter);
		co->bad = co->bad_buf;
		return -EINVAL;
	}
	len = strcspn(tok + 2, "=");
	snprintf(name, sizeof(name), "%.*s", (int)len, tok + 2);
	for (; rdmactl_global_opts[n].name && n < OPT_MAX; n++)
		names[n] = rdmactl_global_opts[n].name;
	names[n++] = "help";
	if (!strncmp(tok, "--", 2))
		near = word_suggest(name, names, n);
	if (near)
		snprintf(co->bad_buf, sizeof(co->bad_buf),
			 "unknown global option '%s' (did you mean '--%s'?)", tok, near);
	else
		snprintf(co->bad_buf, sizeof(co->bad_buf),
			 "unknown global option '%s' (see 'rdmactl --help'; a command's own options go after it)",
			 tok);
	co->bad = co->bad_buf;
	return -EINVAL;
}

static int parse_globals(struct ctx *ctx, int argc, char **argv, struct cli_opts *co)
{
	struct option lopts[OPT_MAX + 2];
	char shorts[OPT_MAX * 2 + 4] = "+:h";
	size_t s = strlen(shorts);
	int n, ch;

	/* An option without a short name answers with 256 + its index. */
	for (n = 0; rdmactl_global_opts[n].name; n++) {
		const struct cmd_opt *o = &rdmactl_global_opts[n];

		lopts[n] = (struct option){ o->name, o->arg ? required_argument : no_argument, NULL,
					    o->short_name ? o->short_name : 256 + n };
		if (!o->short_name)
			continue;
		shorts[s++] = o->short_name;
		if (o->arg)
			shorts[s++] = ':';
	}
	lopts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	lopts[n] = (struct option){ 0 };
	shorts[s] = '\0';

	optind = 0;
	opterr = 0;
	for (int li = -1; (ch = getopt_long(argc, argv, shorts, lopts, &li)) != -1; li = -1) {
		/* No abbreviations: --jso is not --json. */
		if (li >= 0 && ch != '?' && ch != ':' && opt_abbrev(argv, &lopts[li]))
			return bad_global(co, opt_abbrev(argv, &lopts[li]), 0);
		if (ch >= 256 && !strcmp(rdmactl_global_opts[ch - 256].name, "force")) {
			co->force = true;
			continue;
		}
		if (ch > 0 && ch < 256 && strchr("jpdgtv", ch)) {
			const char *bad = NULL;

			for (int g = 0; rdmactl_global_opts[g].name; g++)
				if (rdmactl_global_opts[g].short_name == ch &&
				    global_take(ctx, &rdmactl_global_opts[g], optarg, &bad)) {
					co->bad = bad;
					return -EINVAL;
				}
			continue;
		}
		switch (ch) {
		case 'V':
			co->version = true;
			break;
		case 'b':
			co->batch = optarg;
			break;
		case 'h':
			co->help = true;
			break;
		case ':':
			snprintf(co->bad_buf, sizeof(co->bad_buf),
				 "global option '%s' needs an argument (see 'rdmactl --help')",
				 argv[optind - 1]);
			co->bad = co->bad_buf;
			return -EINVAL;
		default:
			return bad_global(co, optopt ? NULL : argv[optind - 1], optopt);
		}
	}
	return optind;
}

/* The output could not all be written (a full disk, a closed pipe): said on
 * stderr, since stdout is where it failed. */
static bool stdout_failed(void)
{
	bool earlier = ferror(stdout);

	errno = 0;
	if (fflush(stdout) != EOF && !earlier)
		return false;
	if (!earlier && errno)
		fprintf(stderr, "rdmactl: cannot write the output to standard output: %s\n",
			strerror(errno));
	else
		fprintf(stderr, "rdmactl: cannot write the output to standard output\n");
	return true;
}

/* Every connection holds descriptors of its own (completion channel, CM
 * channel): a group of a few hundred peers or a server of a thousand
 * clients passes the usual soft limit of 1024 long before any other. The
 * soft limit goes up to the hard one the administrator allows, as many
 * servers do at start; a failure leaves it as it was. */
static void raise_fd_limit(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

int main(int argc, char **argv)
{
	struct cli_opts co = { 0 };
	struct ctx ctx = { .prog = "rdmactl", .gid_index = -1, .shell = shell_run };
	int first, rc;

	/* A peer that goes away must not kill us through a broken pipe on
	 * stdout; the write error is reported instead. */
	signal(SIGPIPE, SIG_IGN);
	raise_fd_limit();
	cmds_config_load();
	out_init(&ctx.out, OUT_TEXT, stdout, stderr);
	globals_default(&ctx);
	first = parse_globals(&ctx, argc, argv, &co);
	if (first < 0) {
		usage_err(&ctx, "%s", co.bad);
		out_finish(&ctx.out);
		out_free(&ctx.out);
		return EXIT_USAGE;
	}
	if (co.force && !co.batch) {
		rc = usage_err(&ctx, "--force goes with --batch FILE");
	} else if (co.batch && first < argc) {
		rc = usage_err(&ctx,
			       "--batch: the commands come from the file, not the command line ('%s')",
			       argv[first]);
	} else if (co.batch) {
		ctx.shell = NULL; /* a batch has no terminal of its own */
		rc = batch_run(&ctx, co.batch, co.force);
		out_finish(&ctx.out);
		out_free(&ctx.out);
		if (stdout_failed())
			return EXIT_FAIL;
		return rc;
	} else if (co.version) {
		char *vargv[] = { "version", NULL };

		rc = cmd_dispatch(&ctx, 1, vargv);
	} else if (co.help && first < argc) {
		/* rdmactl --help write: as 'rdmactl help write'. */
		argv[first - 1] = "help";
		rc = cmd_dispatch(&ctx, argc - first + 1, argv + first - 1);
	} else if (co.help || first >= argc) {
		char *hargv[] = { "help", NULL };

		/* No command: text shows the commands, then the error; JSON is
		 * one document, the error alone (rdmactl -j help has the table). */
		rc = co.help || !out_is_json(&ctx.out) ? cmd_dispatch(&ctx, 1, hargv) : 0;
		if (!co.help)
			rc = usage_err(&ctx, "no command given (see 'rdmactl help')");
	} else {
		rc = cmd_dispatch(&ctx, argc - first, argv + first);
	}
	out_finish(&ctx.out);
	out_free(&ctx.out);
	if (stdout_failed())
		return EXIT_FAIL;
	if (ctx.usage_error)
		return EXIT_USAGE;
	if (!rc && ctx.exit_code)
		return ctx.exit_code;
	/* The one place an authentication refusal becomes its own status. */
	if (rc && ctx.out.err_code == EKEYREJECTED)
		return EXIT_AUTH;
	return rc ? EXIT_FAIL : EXIT_OK;
}
