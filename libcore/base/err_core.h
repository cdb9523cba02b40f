/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/err.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_ERR_CORE_H
#define RDMACTL_ERR_CORE_H

#include <rdmactl/err.h>

/* Add context to the error a callee left in e: its message becomes
 * "CONTEXT: <the callee's message>" (CONTEXT from fmt), cut to fit. code
 * as for rc_err_set, 0 keeping the callee's (EIO when it set none). e may
 * be NULL. Returns the error's -code. */
int rc_err_wrap(struct rc_err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The same, the other way round: "<the callee's message>; MORE". */
int rc_err_append(struct rc_err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The name the program gives the parameter field ("land_pages"), as
 * rc_config's name_param writes it (rdmactl: the option, --land-pages),
 * else the field itself: into buf, which it returns. For a text that is
 * not an rc_err (a refusal sent to a peer, a finding's fix). */
const char *rc_param_name(const char *field, char *buf, size_t cap);

#endif
