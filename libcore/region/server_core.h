/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/server.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_SERVER_CORE_H
#define RDMACTL_SERVER_CORE_H

#include <rdmactl/server.h>

int rc_server_add_region(struct rc_server *s, const char *name, enum rc_mem_kind kind, size_t len,
			 const char *path, enum rc_access access, struct rc_err *err);

int rc_server_nconns(const struct rc_server *s);

#endif
