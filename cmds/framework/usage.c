// SPDX-License-Identifier: MIT
/* The help text: one command's usage and its options, wrapped to the terminal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cmd.h"

/* The width help wraps to: the terminal's when fp is one ($COLUMNS when
 * set, else the window's), else 80. At least 60. */
static int help_width(FILE *fp)
{
	struct winsize ws;
	const char *env = getenv("COLUMNS");
	int w = 80;

	if (isatty(fileno(fp))) {
		if (env && atoi(env) > 0)
			w = atoi(env);
		else if (ioctl(fileno(fp), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
			w = ws.ws_col;
	}
	return w < 60 ? 60 : w;
}

void help_line(FILE *fp, int indent, const char *left, int col, const char *text)
{
	int width = help_width(fp), pos;

	pos = fprintf(fp, "%*s%s", indent, "", left);
	if (pos >= col) { /* a long left column: the text starts below it */
		fputc('\n', fp);
		pos = 0;
	}
	fprintf(fp, "%*s", col - pos, "");
	pos = col;
	while (*text) {
		size_t n = strcspn(text, " ");

		if (pos > col && pos + 1 + (int)n > width) {
			fprintf(fp, "\n%*s", col, "");
			pos = col;
		} else if (pos > col) {
			fputc(' ', fp);
			pos++;
		}
		fprintf(fp, "%.*s", (int)n, text);
		pos += (int)n;
		text += n;
		text += strspn(text, " ");
	}
	fputc('\n', fp);
}

static void rows_print(const struct cmd *c, const struct cmd_opt *opts, FILE *fp);

void cmd_usage(const struct cmd *c, FILE *fp)
{
	fprintf(fp, "Usage: rdmactl %s%s%s%s\n", c->name, c->opts ? " [OPTIONS]" : "",
		c->args ? " " : "", c->args ? c->args : "");
	fprintf(fp, "%s\n", c->summary);
	if (c->opts && c->opts[0].name) {
		fprintf(fp, "\nOptions:\n");
		rows_print(c, c->opts, fp);
	}
	/* What a region is called: the argument every client command takes. */
	if (c->args && strstr(c->args, "TARGET")) {
		fprintf(fp, "\nArguments:\n");
		help_line(fp, 2, "TARGET", 33,
			  "the region: HOST:PORT/REGION, [IPV6]:PORT/REGION or HOST/REGION (port "
			  "7471); /REGION may be left out when the server serves one region; or "
			  "etcd://HOST:PORT/NS/REGION for a region register --publish put in "
			  "etcd. See rdmactl(8), TARGETS.");
	}
}

/* The rows of opts that c takes (c NULL: all), with -h last. */
static void rows_print(const struct cmd *c, const struct cmd_opt *opts, FILE *fp)
{
	for (int i = 0; opts[i].name; i++) {
		const struct cmd_opt *o = &opts[i];
		char left[64];
		char help[512];

		if (o->hidden || !opt_for(c, o))
			continue;
		if (o->short_name)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", o->short_name, o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		help_line(fp, 2, left, 33, cmd_opt_help(c, o, help, sizeof(help)));
	}
	help_line(fp, 2, "-h, --help", 33, "show this help");
}

void opts_print(const struct cmd_opt *opts, FILE *fp)
{
	rows_print(NULL, opts, fp);
}
