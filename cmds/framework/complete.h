/* SPDX-License-Identifier: MIT */
/* Completion candidates, from the command table: what `rdmactl __complete`
 * prints for the bash and zsh scripts, and what the shell offers on Tab. */
#ifndef RDMACTL_COMPLETE_H
#define RDMACTL_COMPLETE_H

#include <stdbool.h>

#include "cmd.h"

/* Markers for "complete a path here" instead of a word. */
#define COMPLETE_FILES "__files"
#define COMPLETE_DIRS "__dirs"

/* Candidates for the last of words[] (the partial word; "" when none),
 * given the words before it. shell: the words start at the command (no
 * program name, no global options) and the session's names are offered.
 * emit() receives each candidate that starts with the partial word. */
void complete_words(const struct ctx *ctx, char *const *words, int nwords, bool shell,
		    void (*emit)(void *arg, const char *cand), void *arg);
/* The hidden command `rdmactl __complete`, a row of the program's table. */
extern const struct cmd cmd_complete;

#endif
