/* SPDX-License-Identifier: MIT */
/*
 * libcore never prints: a failing call returns -errno and, when the caller
 * passed one, fills a struct rc_err with a message naming the cause.
 */
#ifndef RDMACTL_ERR_H
#define RDMACTL_ERR_H

#include <rdmactl/export.h>

#define RC_ERR_NAMED 3

struct rc_err {
	int code; /* positive errno */
	char msg[512];
	/* The parameter the error is about, by the name of the argument's field
	 * ("skew", "kv_heads"), which the message names as that word; NULL
	 * when none. A program names it its own way (rdmactl: the option,
	 * cmds_err_text): libcore knows no command line. */
	const char *param;
	/* Where msg names parameters (rc_err_opt): the offset and length of each
	 * name, the argument's field ("land_pages"), in msg; nnamed of them. A
	 * message built around another keeps them (rc_err_wrap moves them). */
	struct {
		unsigned short at, len;
	} named[RC_ERR_NAMED];
	int nnamed;
};

/* Fill e (may be NULL) and return -code. code is an errno, either sign; 0
 * (an errno read where the failing call set none) is EIO: an error is never
 * returned as success. */
RC_EXPORT int rc_err_set(struct rc_err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The same, about the parameter param (a string that lives as long as e). */
RC_EXPORT int rc_err_param(struct rc_err *e, const char *param, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The same, about the parameters the message names where fmt writes {FIELD}
 * in its text (at most RC_ERR_NAMED: "give {rank} and {world}"): msg holds
 * FIELD there, without the braces, and named[] says where. */
RC_EXPORT int rc_err_opt(struct rc_err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
