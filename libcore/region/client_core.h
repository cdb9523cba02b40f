/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/client.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_CLIENT_CORE_H
#define RDMACTL_CLIENT_CORE_H

#include <rdmactl/client.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ctrl_core.h>
#include <rdmactl/msgch_core.h>

/* The handles rdmactl/client.h declares opaque. */
struct rc_client {
	struct rc_conn *conns[64];
	int nconns;
	struct rc_region_desc region;
	struct rc_region_desc all[RC_MAX_REGIONS];
	int nregions;
	/* How it was opened, to follow a region that moves (rdmactl-migrate(8)):
	 * the server now (the region's new home once followed), the options,
	 * and copies of the strings they point to. */
	char host[RC_HOST_MAX];
	char port[8];
	struct rc_client_opts opts;
	char token[RC_TOKEN_MAX + 1];
	char bind[RC_HOST_MAX];
	char dev[64];
	int moves; /* how often it followed its region */
	char admin[RC_TOKEN_MAX + 1];
	uint8_t role;        /* enum rc_ctrl_role its connections proved */
	struct rc_auth auth; /* its first connection's handshake */
	/* Control requests' message channel on ctrl_conn (conns[0] when it was
	 * made; NULL: none yet), kept between requests (client.c). */
	struct rc_msgch ctrl;
	struct rc_conn *ctrl_conn;
};

struct rc_rails {
	struct rc_client *cl[RC_RAILS_MAX];
	int n;
	bool borrowed; /* rc_rails_of: cl[0] is the caller's to close */
};

/* Send one control message (header included) on the first connection and
 * wait for the answer: its length, or -errno. A timeout_ms <= 0 is the
 * connection's own. */
int rc_client_ctrl(struct rc_client *cl, const void *req, size_t len, void *resp, size_t cap,
		   int timeout_ms, struct rc_err *err);

/* One connection to a region server through protocol 2's handshake
 * (ctrl_core.h): connect with a HELLO for role, check the server's proof
 * of token (NULL: none to check), prove it in turn. *out is then served;
 * a's nonces are the session's. -EKEYREJECTED when either side's proof
 * failed, -ECONNREFUSED with the server's reason when it refused the
 * request (a server without an admin token: "no admin token here"). */
int rc_region_connect(const char *host, const char *port, const char *token, enum rc_ctrl_role role,
		      const struct rc_conn_opts *co, struct rc_conn **out, struct rc_auth *a,
		      struct rc_err *err);
/* Free cl's control channel (before its connections go, or when they are
 * replaced); the next request makes a new one. */
void client_ctrl_drop(struct rc_client *cl);
/* One more connection of cl to t (client_auth.c): the admin role when
 * cl->opts.admin_token is set and the server holds one, else the data role. */
int client_connect(struct rc_client *cl, const struct rc_target *t, const struct rc_conn_opts *co,
		   struct rc_conn **out, struct rc_err *err);
/* The token cl's connections proved (NULL: none) and their first one's
 * handshake, for a secret of the session (rc_auth_session). */
const char *rc_client_session(const struct rc_client *cl, const struct rc_auth **a);

#endif
