/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/parse.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_PARSE_CORE_H
#define RDMACTL_PARSE_CORE_H

#include <rdmactl/parse.h>

/* A PCI address DDDD:BB:DD.F (a domain of 4 to 8 hex digits: VMD uses
 * 10000:) in the len bytes at s. */
bool rc_pci_addr_valid(const char *s, size_t len);
/* Compare two PCI addresses as numbers: domain, bus, device, function. This
 * is the order of nvidia-smi and of CUDA_DEVICE_ORDER=PCI_BUS_ID; a name sort
 * (strverscmp) reads "3b" before "34". Case does not matter ("0000:3B" is
 * NVML's spelling, with an 8-digit domain). Unparsable addresses sort last,
 * by name. */
int rc_pci_addr_cmp(const char *a, const char *b);

/* Whether got (len bytes as a peer sent them: its token, then any zero
 * padding) carries the token want, zero-padded to RC_TOKEN_MAX + 1 bytes.
 * Bytes past len count as zeros; a non-zero byte past the token refuses.
 * Every byte of want and of got is compared whatever the two hold, so the
 * time depends on len only: not on where they differ nor on either
 * token's length. An empty want accepts anything. */
bool rc_token_equal(const char want[RC_TOKEN_MAX + 1], const void *got, size_t len);
/* A proof that the sender holds token, without the token: the first n
 * bytes (at most 32) of HMAC-SHA256(token, label NUL msg). A NULL or empty
 * token gives n zero bytes. */
void rc_token_proof(const char *token, const char *label, const void *msg, size_t len, void *out,
		    size_t n);
/* Whether the n bytes at a and b are equal, in a time that depends on n only. */
bool rc_bytes_equal(const void *a, const void *b, size_t n);
/* n unpredictable bytes from the kernel (getrandom). 0 or -errno. */
int rc_random_bytes(void *buf, size_t n);

#endif
