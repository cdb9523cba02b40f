/* SPDX-License-Identifier: MIT */
/* The region client's data path between client_io.c and rails.c: a staging
 * buffer kept across transfers (a rail's, for all its chunks). */
#ifndef RDMACTL_CLIENT_INT_H
#define RDMACTL_CLIENT_INT_H

#include <rdmactl/client_core.h>

/* A staging buffer, registered on the client's PD (one PD serves every QP). */
struct staging {
	void *buf;
	size_t len;
	struct ibv_mr *mr;
};

int staging_get(struct rc_client *cl, struct staging *st, size_t len, const char *what,
		struct rc_err *err);
void staging_put(struct staging *st);
/* WRITE or READ len bytes at off through st (of RC_CLIENT_CHUNK *
 * RC_CLIENT_DEPTH bytes or more); a write announced to the server (INTENT,
 * DONE), as rc_client_write, but not retried where the region moved. */
int client_stream_with(struct rc_client *cl, struct staging *st, enum rc_op op, uint64_t off,
		       uint64_t len, const struct rc_client_io *io, struct rc_stream_result *res,
		       struct rc_err *err);

#endif
