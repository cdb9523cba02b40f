/* SPDX-License-Identifier: MIT */
/* A client of a region server: connect, learn the region, move data. */
#ifndef RDMACTL_CLIENT_H
#define RDMACTL_CLIENT_H

#include <rdmactl/conn.h>
#include <rdmactl/ctrl.h>
#include <rdmactl/parse.h>

struct rc_client {
	struct rc_conn *conns[64];
	int nconns;
	struct rc_region_desc region;
	struct rc_region_desc all[RC_MAX_REGIONS];
	int nregions;
};

struct rc_client_opts {
	struct rc_conn_opts conn;
	const char *token;
	int nconns;          /* QPs to open (default 1) */
};

/* Connect (nconns QPs), fetch the region table and select t->region (or the
 * server's only region when t->region is empty). */
int rc_client_open(const struct rc_target *t, const struct rc_client_opts *opts,
		   struct rc_client **out, struct rc_err *err);
int rc_client_close(struct rc_client *cl);
/* Select the region t names among those the server listed (its only one when
 * t->region is empty): lets one connection serve several regions in turn. */
int rc_client_select(struct rc_client *cl, const struct rc_target *t, struct rc_err *err);
/* False once a connection saw a CM event (a disconnect, an error): an idle
 * established connection has none pending. Does not wait. */
bool rc_client_alive(const struct rc_client *cl);
/* Check that [off, off + len) lies in the region and the access allows op. */
int rc_client_check(const struct rc_client *cl, uint64_t off, uint64_t len, bool write,
		    bool atomic, struct rc_err *err);

#endif
