// SPDX-License-Identifier: MIT
#include <errno.h>

#include "cmds.h"
#include "kvxfer.h"

int kvxfer_serve(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v)
{
	return fail(ctx, -ENOSYS, "not yet");
}

int kvxfer_send(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v)
{
	return fail(ctx, -ENOSYS, "not yet");
}
