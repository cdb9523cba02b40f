// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <rdmactl/err.h>
#include <rdmactl/err_core.h>

/* An error's code: code (either sign), else the callee's in e (NULL: none),
 * else EIO; never 0, which would read as success. */
static int err_code(const struct rc_err *e, int code)
{
	if (code < 0)
		code = -code;
	return code ? code : e && e->code > 0 ? e->code : EIO;
}

int rc_err_set(struct rc_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	code = err_code(NULL, code);
	if (e) {
		e->code = code;
		e->param = NULL;
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	return -code;
}

int rc_err_param(struct rc_err *e, const char *param, int code, const char *fmt, ...)
{
	va_list ap;

	code = err_code(NULL, code);
	if (e) {
		e->code = code;
		e->param = param;
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	return -code;
}

int rc_err_wrap(struct rc_err *e, int code, const char *fmt, ...)
{
	char why[sizeof(e->msg)];
	size_t n;
	va_list ap;

	code = err_code(e, code);
	if (!e)
		return -code;
	memcpy(why, e->msg, sizeof(why));
	why[sizeof(why) - 1] = '\0';
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	n = strlen(e->msg);
	if (why[0] && n + 2 < sizeof(e->msg)) {
		size_t w = strlen(why), room = sizeof(e->msg) - n - 3;

		if (w > room)
			w = room;
		memcpy(e->msg + n, ": ", 2);
		memcpy(e->msg + n + 2, why, w);
		e->msg[n + 2 + w] = '\0';
	}
	e->code = code;
	return -code;
}

int rc_err_append(struct rc_err *e, int code, const char *fmt, ...)
{
	size_t n;
	va_list ap;

	code = err_code(e, code);
	if (!e)
		return -code;
	e->msg[sizeof(e->msg) - 1] = '\0';
	n = strlen(e->msg);
	if (n && n + 2 < sizeof(e->msg)) {
		memcpy(e->msg + n, "; ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(e->msg + n, sizeof(e->msg) - n, fmt, ap);
	va_end(ap);
	e->code = code;
	return -code;
}
