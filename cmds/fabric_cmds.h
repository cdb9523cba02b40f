/* SPDX-License-Identifier: MIT */
/* --fabric: which transport register, write, read and atomic run on, and
 * their runs over libfabric (fabric_cmds.c, register_ofi.c). */
#ifndef RDMACTL_FABRIC_CMDS_H
#define RDMACTL_FABRIC_CMDS_H

#include <rdmactl/fabric.h>

#include "cmd.h"

#define FABRIC_WORDS "verbs|auto|ofi:tcp|ofi:verbs|ofi:efa"
#define FABRIC_HELP "verbs, ofi:PROVIDER or auto ($RDMACTL_FABRIC)"

/* --fabric as given (NULL: $RDMACTL_FABRIC, else verbs) into f: a usage
 * error naming the choices for a bad one; an error for verbs asked where
 * the host has no RDMA device, and for auto where it picks nothing. */
int fabric_pick(struct ctx *ctx, const char *cmd, const char *given, struct rc_fabric *f);
/* The transport's three keys of a report: transport, provider, domain. */
void fabric_report(struct ctx *ctx, const char *transport, const struct rc_fabric_info *fi);
/* The same three over verbs, in JSON only: verbs, verbs, the device(s). */
void fabric_verbs_keys(struct ctx *ctx, const char *devs);

struct client_args;
/* write, read and atomic over libfabric: the target and the descriptor,
 * the handshake. */
int fabric_client_open(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		       const struct client_args *a, struct rc_fcli **out);
/* A transfer over libfabric: bytes at the client's offset moved through io,
 * then a write's immediate data (imm, or NULL), then the report (verb
 * "wrote to", "read from"; out: read's --out). */
int fabric_transfer(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		    const struct client_args *a, bool write, uint64_t size, bool have_size,
		    rc_fcli_fill io, void *arg, const char *out, const uint32_t *imm);

#endif
