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

/* A PCI address DDDD:BB:DD.F (a domain of 4 to 8 hex digits: VMD uses
 * 10000:) in the len bytes at s. */
RC_EXPORT bool rc_pci_addr_valid(const char *s, size_t len);
/* Compare two PCI addresses as numbers: domain, bus, device, function. This
 * is the order of nvidia-smi and of CUDA_DEVICE_ORDER=PCI_BUS_ID; a name sort
 * (strverscmp) reads "3b" before "34". Case does not matter ("0000:3B" is
 * NVML's spelling, with an 8-digit domain). Unparsable addresses sort last,
 * by name. */
RC_EXPORT int rc_pci_addr_cmp(const char *a, const char *b);
/* Tokens are 1..56 bytes, printable ASCII without spaces. */
RC_EXPORT bool rc_token_valid(const char *token);
/* Whether got (len bytes as a peer sent them: its token, then any zero
 * padding) carries the token want, zero-padded to RC_TOKEN_MAX + 1 bytes.
 * Bytes past len count as zeros; a non-zero byte past the token refuses.
 * Every byte of want and of got is compared whatever the two hold, so the
 * time depends on len only: not on where they differ nor on either
 * token's length. An empty want accepts anything. */
RC_EXPORT bool rc_token_equal(const char want[RC_TOKEN_MAX + 1], const void *got, size_t len);
/* A proof that the sender holds token, without the token: the first n
 * bytes (at most 32) of HMAC-SHA256(token, label NUL msg). A NULL or empty
 * token gives n zero bytes. */
RC_EXPORT void rc_token_proof(const char *token, const char *label, const void *msg, size_t len,
			      void *out, size_t n);
/* Whether the n bytes at a and b are equal, in a time that depends on n only. */
RC_EXPORT bool rc_bytes_equal(const void *a, const void *b, size_t n);
/* n unpredictable bytes from the kernel (getrandom). 0 or -errno. */
RC_EXPORT int rc_random_bytes(void *buf, size_t n);

#endif
