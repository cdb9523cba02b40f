// SPDX-License-Identifier: MIT
/* --pairs: the pairs a sweep measures, from a file of "A B" lines. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/parse.h>
#include <rdmactl/sweep.h>
#include <rdmactl/err_core.h>
#include <rdmactl/sweep_core.h>

#define PAIRS_FILE_MAX (1 << 20)

static int rank_word(const char *w, int world, int *out)
{
	uint64_t v;

	if (rc_parse_u64(w, &v) || v >= (uint64_t)world)
		return -1;
	*out = (int)v;
	return 0;
}

int rc_sweep_pairs_parse(const char *text, int world, uint8_t *want, struct rc_err *err)
{
	size_t N = (size_t)world;
	int line = 0, pairs = 0;

	if (world < 2 || world > RC_GROUP_MAX)
		return rc_err_set(err, EINVAL, "a world of %d ranks has no pairs", world);
	memset(want, 0, N * N);
	while (*text) {
		size_t len = strcspn(text, "\n");
		char buf[256], a[64], b[64], extra[2];
		int i, j, n;

		line++;
		if (len >= sizeof(buf))
			return rc_err_set(err, EINVAL, "line %d: too long", line);
		memcpy(buf, text, len);
		buf[len] = 0;
		text += len + (text[len] == '\n');
		buf[strcspn(buf, "#")] = 0;
		n = sscanf(buf, "%63s %63s %1s", a, b, extra);
		if (n <= 0)
			continue;
		if (n != 2)
			return rc_err_set(err, EINVAL, "line %d: expected two ranks, \"A B\"", line);
		if (rank_word(a, world, &i) || rank_word(b, world, &j))
			return rc_err_set(err, EINVAL, "line %d: \"%s %s\": ranks are 0 to %d",
					  line, a, b, world - 1);
		if (i == j)
			return rc_err_set(err, EINVAL, "line %d: rank %d paired with itself", line,
					  i);
		pairs += !want[(size_t)i * N + (size_t)j];
		want[(size_t)i * N + (size_t)j] = want[(size_t)j * N + (size_t)i] = 1;
	}
	if (!pairs)
		return rc_err_set(err, EINVAL, "no pair is named");
	return 0;
}

int rc_sweep_pairs_load(const char *path, int world, uint8_t *want, struct rc_err *err)
{
	FILE *f = fopen(path, "r");
	char *text;
	size_t n;
	int rc;

	if (!f)
		return rc_err_set(err, errno, "%s: %s", path, strerror(errno));
	text = malloc(PAIRS_FILE_MAX + 1);
	if (!text) {
		fclose(f);
		return rc_err_set(err, ENOMEM, "out of memory");
	}
	n = fread(text, 1, PAIRS_FILE_MAX + 1, f);
	fclose(f);
	if (n > PAIRS_FILE_MAX) {
		free(text);
		return rc_err_set(err, EFBIG, "%s: larger than 1 MiB", path);
	}
	text[n] = 0;
	if (strlen(text) != n)
		rc = rc_err_set(err, EINVAL, "%s: holds a NUL byte", path);
	else
		rc = rc_sweep_pairs_parse(text, world, want, err);
	if (rc == -EINVAL && err && strncmp(err->msg, path, strlen(path)))
		rc_err_wrap(err, EINVAL, "%s", path);
	free(text);
	return rc;
}
