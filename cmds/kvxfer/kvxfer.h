/* SPDX-License-Identifier: MIT */
/* What the kvxfer command's files share: the geometry from flags or a
 * model file, and the three subcommands. */
#ifndef RDMACTL_CMDS_KVXFER_H
#define RDMACTL_CMDS_KVXFER_H

#include <rdmactl/kv.h>

#include "cmd.h"

/* The geometry from --model FILE and the flags (flags win). Reports a usage
 * error and returns -EINVAL when it is incomplete or wrong. */
int kvxfer_geom(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		struct kv_geom *g);
/* The geometry as an object under key (text: one line). */
void kvxfer_put_geom(struct out *o, const struct kv_geom *g);

int kvxfer_plan(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v);
int kvxfer_serve(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v);
int kvxfer_send(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v);

#endif
