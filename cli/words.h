/* SPDX-License-Identifier: MIT */
/* Splitting a line into words, for batch files and the shell. */
#ifndef RDMACTL_WORDS_H
#define RDMACTL_WORDS_H

struct words {
	char **argv; /* NULL-terminated */
	int argc;
	char *buf; /* the words' bytes */
};

/* The line ends in a backslash: the caller appends the next line. */
#define WORDS_MORE 1

/* Split one line as a POSIX shell would, without any expansion: blanks
 * separate words; '...' keeps every byte; "..." keeps every byte but \" and
 * \\; elsewhere a backslash keeps the next byte; an unquoted # starts a
 * comment. Returns 0, WORDS_MORE (nothing split) or -EINVAL with *why. */
int words_split(const char *line, struct words *w, const char **why);
void words_free(struct words *w);

#endif
