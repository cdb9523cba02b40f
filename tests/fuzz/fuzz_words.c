// SPDX-License-Identifier: MIT
/*
 * Lines of a batch file and of the shell, split into words as a POSIX shell
 * would without expansion. A split line yields a NULL-terminated argv of
 * argc strings; a line that cannot be split says why.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "words.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why = NULL;
	struct words w;
	char *line;
	int r;

	line = malloc(size + 1);
	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	memset(&w, 0, sizeof(w));
	r = words_split(line, &w, &why);
	FUZZ_CHECK(r == 0 || r == WORDS_MORE || r == -EINVAL || r == -ENOMEM);
	if (r == -EINVAL)
		FUZZ_CHECK(why != NULL && why[0] != '\0');
	if (r == 0) {
		FUZZ_CHECK(w.argc >= 0 && w.argv != NULL && w.argv[w.argc] == NULL);
		for (int i = 0; i < w.argc; i++)
			FUZZ_CHECK(w.argv[i] != NULL && strlen(w.argv[i]) <= size);
		words_free(&w);
	}
	free(line);
	return 0;
}
