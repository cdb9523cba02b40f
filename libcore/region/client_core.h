/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/client.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_CLIENT_CORE_H
#define RDMACTL_CLIENT_CORE_H

#include <rdmactl/client.h>

/* Send one control message (header included) on the first connection and
 * wait for the answer: its length, or -errno. A timeout_ms <= 0 is the
 * connection's own. */
int rc_client_ctrl(struct rc_client *cl, const void *req, size_t len, void *resp, size_t cap,
		   int timeout_ms, struct rc_err *err);

#endif
