/* SPDX-License-Identifier: MIT */
/*
 * libcore never prints: a failing call returns -errno and, when the caller
 * passed one, fills a struct rc_err with a message naming the cause.
 */
#ifndef RDMACTL_ERR_H
#define RDMACTL_ERR_H

#include <stddef.h>

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

/* How a program names a parameter that a message names by its field
 * ("land_pages", the first len bytes of field): the name into out (cap
 * bytes). rdmactl: the option, --land-pages. */
typedef void (*rc_param_namer)(const char *field, size_t len, char *out, size_t cap);

/* e's message with each parameter it names (rc_err_opt's {FIELD}s, or
 * rc_err_param's) as name names it (NULL: as rc_config's name_param does,
 * else the field itself): into buf (len bytes), which it returns; e->msg
 * itself when it names none. The text to print, or to send a peer. */
RC_EXPORT const char *rc_err_text(const struct rc_err *e, rc_param_namer name, char *buf,
				  size_t len);

#endif
