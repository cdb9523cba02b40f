// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "words.h"

static int is_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

/* Copy one word from *pp into *op; returns 0, WORDS_MORE or -EINVAL. */
static int one_word(const char **pp, char **op, const char **why)
{
	const char *p = *pp;
	char *out = *op;

	while (*p && !is_blank(*p)) {
		if (*p == '\'') {
			const char *end = strchr(p + 1, '\'');

			if (!end) {
				*why = "unterminated single quote";
				return -EINVAL;
			}
			memcpy(out, p + 1, (size_t)(end - p - 1));
			out += end - p - 1;
			p = end + 1;
		} else if (*p == '"') {
			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
					p++;
				*out++ = *p;
			}
			if (!*p) {
				*why = "unterminated double quote";
				return -EINVAL;
			}
			p++;
		} else if (*p == '\\') {
			if (!p[1])
				return WORDS_MORE;
			*out++ = p[1];
			p += 2;
		} else {
			*out++ = *p++;
		}
	}
	*out++ = '\0';
	*pp = p;
	*op = out;
	return 0;
}

int words_split(const char *line, struct words *w, const char **why)
{
	size_t len = strlen(line);
	const char *p = line;
	char *out;
	int rc = 0;

	memset(w, 0, sizeof(*w));
	w->buf = malloc(len + 1);
	/* At most one word per two bytes, plus the NULL. */
	w->argv = calloc(len / 2 + 2, sizeof(char *));
	if (!w->buf || !w->argv) {
		words_free(w);
		*why = "out of memory";
		return -ENOMEM;
	}
	out = w->buf;
	for (;;) {
		while (is_blank(*p))
			p++;
		if (!*p || *p == '#')
			break;
		w->argv[w->argc] = out;
		rc = one_word(&p, &out, why);
		if (rc) {
			words_free(w);
			return rc;
		}
		w->argc++;
	}
	w->argv[w->argc] = NULL;
	return 0;
}

void words_free(struct words *w)
{
	free(w->argv);
	free(w->buf);
	memset(w, 0, sizeof(*w));
}
