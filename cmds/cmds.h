/* SPDX-License-Identifier: MIT */
/* Every subcommand's table entry; one file per command under cmds/. */
#ifndef RDMACTL_CMDS_H
#define RDMACTL_CMDS_H

#include <rdmactl/server.h>

#include "cmd.h"

extern const struct cmd cmd_register;
extern const struct cmd cmd_write;
extern const struct cmd cmd_read;
extern const struct cmd cmd_atomic;
extern const struct cmd cmd_probe_topology;
extern const struct cmd cmd_kvxfer;
extern const struct cmd cmd_alltoall;
extern const struct cmd cmd_multicast;
extern const struct cmd cmd_sweep;
extern const struct cmd cmd_preflight;
extern const struct cmd cmd_migrate;
extern const struct cmd cmd_shell;
extern const struct cmd cmd_regions;
extern const struct cmd cmd_unregister;
extern const struct cmd cmd_help;
extern const struct cmd cmd_version;
extern const struct cmd cmd_complete;

/* The shell's options: its table is in cmds/shellcmds.c, its body in cli/
 * reads them by these indexes. */
/* What the shell was asked (its typed rows). */
struct shell_args {
	const char *history; /* --history FILE, or NULL */
};
#define SHELL_OPTS(X) \
	X(SH_HISTORY, "history", 0, "FILE", "history file (default: $RDMACTL_HISTORY)", COMP_FILE, \
	  OPT_STR(struct shell_args, history, NULL))
enum { SHELL_OPTS(OPT_INDEX) SHELL_NOPTS };

/* The library's configuration (rdmactl/config.h) from the environment
 * (cmds/config.c): the program calls it once, first. */
void cmds_config_load(void);
/* $RDMACTL_FABRIC as cmds_config_load read it (NULL: unset). */
const char *cmds_config_fabric(void);
/* e's message, its parameter (e->param, a field named in it) named as the
 * option that gives it, "kv_heads" as "--kv-heads": in buf, or e->msg itself
 * when it names none. */
struct rc_err;
const char *cmds_err_text(const struct rc_err *e, char *buf, size_t len);
/* The same in a buffer of the enclosing block: ERR_TEXT(e) for e.msg. */
#define ERR_TEXT(e) cmds_err_text(&(e), (char[sizeof((e).msg) + 64]){ 0 }, sizeof((e).msg) + 64)

/* Print one server event as register does (arg: the struct ctx). */
void register_on_event(void *arg, const struct rc_server_event *ev);

#endif
