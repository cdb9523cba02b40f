// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>

#include <rdmactl/err.h>

int rc_err_set(struct rc_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (code < 0)
		code = -code;
	if (e) {
		e->code = code;
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	return -code;
}
