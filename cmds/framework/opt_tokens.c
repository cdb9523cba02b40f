// SPDX-License-Identifier: MIT
/* The secrets: --token, --token-file, --admin-token-file and their variables. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdmactl/parse.h>

#include "cmd.h"

int opt_secret_file(struct ctx *ctx, const char *opt, const char *path, char *buf, size_t cap)
{
	char line[512];
	struct stat st;
	ssize_t n;
	size_t len;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return fail(ctx, -errno, "--%s %s: cannot read it: %s", opt, path, strerror(errno));
	if (fstat(fd, &st)) {
		int e = errno;

		close(fd);
		return fail(ctx, -e, "--%s %s: %s", opt, path, strerror(e));
	}
	/* As ssh does with its keys: a secret others may read is no secret. A
	 * pipe (--token-file <(...)) or a device is taken as it is. */
	if (S_ISREG(st.st_mode) && (st.st_mode & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH))) {
		close(fd);
		/* A file that cannot be used as it is, as one that cannot be read:
		 * a failure (1), rdmactl(8) EXIT STATUS. */
		return fail(ctx, -EACCES,
			    "--%s %s: group or others may read or write it (mode %04o): make it private (chmod 600 %s)",
			    opt, path, (unsigned)(st.st_mode & 07777), path);
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return fail(ctx, -EISDIR, "--%s %s: a directory, not a file", opt, path);
	}
	len = 0;
	while (len < sizeof(line) - 1 && (n = read(fd, line + len, sizeof(line) - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			close(fd);
			return fail(ctx, -e, "--%s %s: cannot read it: %s", opt, path, strerror(e));
		}
		len += (size_t)n;
		if (memchr(line, '\n', len))
			break;
	}
	close(fd);
	line[len] = '\0';
	/* The first line, without its line end. */
	len = strcspn(line, "\n");
	line[len] = '\0';
	if (len && line[len - 1] == '\r')
		line[--len] = '\0';
	if (!len) {
		explicit_bzero(line, sizeof(line));
		return usage_err(ctx, "--%s %s: its first line is empty", opt, path);
	}
	if (len >= cap) {
		explicit_bzero(line, sizeof(line));
		return usage_err(ctx, "--%s %s: its first line is longer than %zu characters", opt,
				 path, cap - 1);
	}
	memcpy(buf, line, len + 1);
	explicit_bzero(line, sizeof(line));
	return 0;
}

int token_take(struct ctx *ctx, const char *t, const char *path, char buf[RC_TOKEN_MAX + 1],
	       const char **out)
{
	const char *from = "--token";
	int rc;

	*out = NULL;
	if (t && path)
		return usage_err(ctx, "give --token or --token-file, not both");
	if (path) {
		if ((rc = opt_secret_file(ctx, "token-file", path, buf, RC_TOKEN_MAX + 1)))
			return rc;
		if (!rc_token_valid(buf))
			return usage_err(
				ctx,
				"--token-file %s: a token is 1 to %d printable characters without spaces",
				path, RC_TOKEN_MAX);
		*out = buf;
		return 0;
	}
	if (!t) {
		t = getenv("RDMACTL_TOKEN");
		from = "$RDMACTL_TOKEN";
		if (t && !*t)
			t = NULL;
	}
	if (t && !rc_token_valid(t))
		return usage_err(ctx, "invalid %s: 1 to %d printable characters without spaces",
				 from, RC_TOKEN_MAX);
	*out = t;
	return 0;
}

int admin_token_take(struct ctx *ctx, const char *path, char out[RC_TOKEN_MAX + 1])
{
	const char *env;
	int rc;

	out[0] = 0;
	if (path) {
		if ((rc = opt_secret_file(ctx, "admin-token-file", path, out, RC_TOKEN_MAX + 1)))
			return rc;
		if (rc_token_valid(out))
			return 0;
		out[0] = 0;
		return usage_err(
			ctx,
			"--admin-token-file %s: the file holds no token (one line of 1 to %d printable characters without spaces)",
			path, RC_TOKEN_MAX);
	}
	env = getenv("RDMACTL_ADMIN_TOKEN");
	if (!env || !*env)
		return 0;
	if (!rc_token_valid(env))
		return usage_err(
			ctx,
			"invalid $RDMACTL_ADMIN_TOKEN: 1 to %d printable characters without spaces",
			RC_TOKEN_MAX);
	snprintf(out, RC_TOKEN_MAX + 1, "%s", env);
	return 0;
}

int opt_token(struct ctx *ctx, const struct opt_vals *v, int i_token, int i_file,
	      char buf[RC_TOKEN_MAX + 1], const char **out)
{
	return token_take(ctx, i_token >= 0 ? opt_arg(v, i_token) : NULL,
			  i_file >= 0 ? opt_arg(v, i_file) : NULL, buf, out);
}

int opt_admin_token_at(struct ctx *ctx, const struct opt_vals *v, int i, char out[RC_TOKEN_MAX + 1])
{
	return admin_token_take(ctx, i >= 0 ? opt_arg(v, i) : NULL, out);
}
