// SPDX-License-Identifier: MIT
/* The group options alltoall and multicast share (group_cmds.h). */
#include "group_cmds.h"

int group_args_parse(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int first,
		     struct group_args *a)
{
	int rank = -1, world = -1, local = -1, rc;
	struct rc_err e;

	if ((rc = opt_int_at(ctx, c, v, first + GO_RANK, 0, RC_GROUP_MAX, &rank)) ||
	    (rc = opt_int_at(ctx, c, v, first + GO_WORLD, 0, 1 << 20, &world)) ||
	    (rc = opt_int_at(ctx, c, v, first + GO_LOCAL_RANK, 0, RC_GROUP_MAX, &local)))
		return rc;
	if (rc_rank_resolve(rank, world, local, NULL, &a->who, &e))
		return usage_err(ctx, "%s", e.msg);
	a->rendezvous = opt_arg(v, first + GO_RENDEZVOUS);
	a->listen = opt_arg(v, first + GO_LISTEN);
	return opt_token(ctx, v, first + GO_TOKEN, first + GO_TOKEN_FILE, a->token_buf, &a->token);
}

int group_rendezvous_ready(struct ctx *ctx, const char *what, const struct group_args *a)
{
	if (!a->rendezvous)
		return usage_err(ctx, "%s needs --rendezvous etcd://HOST:PORT/JOB or file:PATH", what);
	if (!strncmp(a->rendezvous, "file:", 5))
		return input_file(ctx, "--rendezvous", a->rendezvous + 5);
	return 0;
}
