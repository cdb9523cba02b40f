/* SPDX-License-Identifier: MIT */
/* Strict parsers shared by the command line and the library. */
#ifndef RDMACTL_PARSE_H
#define RDMACTL_PARSE_H

#include <rdmactl/export.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RC_DEFAULT_PORT "7471"
#define RC_NAME_MAX 32 /* region name, including the NUL */
#define RC_HOST_MAX 256
/* The most rails (NICs) one process uses for one job: write, read, register,
 * kvxfer serve. */
#define RC_RAILS_MAX 16
#define RC_TOKEN_MAX 56 /* what fits in an rdma_cm connect request */

/* "4096", "4K", "1M", "1G", "1T", "64KiB" (binary multiples). Returns 0 or
 * -EINVAL (malformed) / -ERANGE (overflow). */
RC_EXPORT int rc_parse_size(const char *s, uint64_t *out);
/* Decimal or 0x-hex unsigned integer. */
RC_EXPORT int rc_parse_u64(const char *s, uint64_t *out);
/* Decimal or 0x-hex, optionally negative (two's complement into 64 bits). */
RC_EXPORT int rc_parse_i64(const char *s, int64_t *out);
/* Format a byte count with a binary suffix ("64KiB", "1.5MiB"). */
RC_EXPORT void rc_format_size(uint64_t bytes, char *buf, size_t len);

/* A served region as addressed on the command line:
 *   HOST:PORT/REGION, [IPV6]:PORT/REGION, HOST/REGION (default port),
 *   HOST:PORT (the server's only region). */
struct rc_target {
	char host[RC_HOST_MAX];
	char port[8];
	char region[RC_NAME_MAX]; /* "" when not given */
};

RC_EXPORT int rc_parse_target(const char *s, struct rc_target *t);
RC_EXPORT bool rc_region_name_valid(const char *name);

/* Tokens are 1..56 bytes, printable ASCII without spaces. */
RC_EXPORT bool rc_token_valid(const char *token);

#endif
