/* SPDX-License-Identifier: MIT */
/*
 * libcore never prints: a failing call returns -errno and, when the caller
 * passed one, fills a struct rc_err with a message naming the cause.
 */
#ifndef RDMACTL_ERR_H
#define RDMACTL_ERR_H

#include <rdmactl/export.h>

struct rc_err {
	int code; /* positive errno */
	char msg[512];
};

/* Fill e (may be NULL) and return -code. code is an errno, either sign; 0
 * (an errno read where the failing call set none) is EIO: an error is never
 * returned as success. */
RC_EXPORT int rc_err_set(struct rc_err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Add context to the error a callee left in e: its message becomes
 * "CONTEXT: <the callee's message>" (CONTEXT from fmt), cut to fit. code
 * as for rc_err_set, 0 keeping the callee's (EIO when it set none). e may
 * be NULL. Returns the error's -code. */
RC_EXPORT int rc_err_wrap(struct rc_err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The same, the other way round: "<the callee's message>; MORE". */
RC_EXPORT int rc_err_append(struct rc_err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
