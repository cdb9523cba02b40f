/* SPDX-License-Identifier: MIT */
/* A region server: registers regions and serves them to RC clients. */
#ifndef RDMACTL_SERVER_H
#define RDMACTL_SERVER_H

#include <rdmactl/export.h>

#include <stdbool.h>
#include <stddef.h>

#include <rdmactl/conn.h>
#include <rdmactl/ctrl.h>
#include <rdmactl/dev.h>
#include <rdmactl/export.h>
#include <rdmactl/mem.h>

struct rc_region {
	struct rc_region_desc d;
	struct rc_mem mem;
	struct ibv_mr *mr;
	char path[4096]; /* file-backed: the file */
	/* Another server's memory, registered here too (a rail): that server
	 * writes it back and frees it, this one only deregisters. */
	bool shared;
	/* The servers this memory is served by, this one among them, when
	 * more than one: a region on several rails (0: this server only). */
	int rails;
};

enum rc_server_event_kind {
	RC_EV_CONNECTED,
	RC_EV_DISCONNECTED,
	RC_EV_REJECTED,
	RC_EV_IMM,
	RC_EV_FLUSH_FAILED, /* a periodic write-back of region failed: reason says why */
};

struct rc_server_event {
	enum rc_server_event_kind kind;
	const char *peer;   /* NULL for FLUSH_FAILED */
	const char *region; /* FLUSH_FAILED: the region's name, else NULL */
	const char *reason; /* REJECTED, FLUSH_FAILED; DISCONNECTED: the error that dropped it (or NULL) */
	uint32_t imm; /* IMM: immediate data of an RDMA WRITE_WITH_IMM */
};

struct rc_server;

struct rc_server_opts {
	const char *addr;
	const char *port;
	const char *dev_name;
	const char *token; /* NULL: no token */
	/* The credential of migration steps (TRACK to DROP, PULL, HASH): a
	 * connection that presents it instead of token may run them. NULL:
	 * they are refused, unless allow_unauth_migration. */
	const char *admin_token;
	bool allow_unauth_migration; /* without admin_token: anyone connected may */
	int gid_index;               /* -1: automatic */
	int max_conns;               /* default 64 */
	int keepalive_ms;   /* probe each connection this often: 0 default (5000), < 0 off */
	int flush_every_ms; /* write file-backed regions back to their files this often: 0 off */
	void (*on_event)(void *arg, const struct rc_server_event *ev);
	void *arg;
};

RC_EXPORT int rc_server_create(const struct rc_server_opts *opts, struct rc_server **out,
			       struct rc_err *err);
/* The same for memory a spec describes: GPU memory on GPU spec->gpu, by
 * the registration path spec->reg (RC_REG_AUTO: dma-buf, then peer memory,
 * then a host bounce buffer); the region's mem.reg says which ran. */
RC_EXPORT int rc_server_add_region_spec(struct rc_server *s, const char *name,
					const struct rc_mem_spec *spec, enum rc_access access,
					struct rc_err *err);
/* Serve owner's region i (another server's, on another device) here too:
 * the same memory, registered on this server's PD, under its name; both
 * entries count the rails that serve it (a region on several rails is
 * never moved live). Call it before either server runs. Release this
 * server before the one that owns the memory. */
RC_EXPORT int rc_server_share_region(struct rc_server *s, struct rc_server *owner, int i,
				     struct rc_err *err);
/* A server on a set of one or more rails (rdmactl-register(8), --listen
 * ADDR1,ADDR2 -d DEV1,DEV2): s, the first rail's, and a server per further
 * rail serving s's regions (rc_server_share_region), each on a thread of
 * its own; every rail's events go to s's on_event, one at a time. One rail
 * is the ordinary case: s alone, nothing started. */
struct rc_server_rails;
struct rc_rail_listen {
	const char *addr;
	const char *port;
	const char *dev; /* NULL: the one addr routes through */
};
/* Open rails[1..n-1] (rails[0] is s's own), after s has its regions and
 * before it runs, as s's options say but for the address and device. On a
 * failure *out is set still: close it. */
RC_EXPORT int rc_server_rails_open(struct rc_server *s, const struct rc_rail_listen *rails, int n,
				   struct rc_server_rails **out, struct rc_err *err);
RC_EXPORT int rc_server_rails_count(const struct rc_server_rails *sr);
/* Rail i's server (0: s). */
RC_EXPORT struct rc_server *rc_server_rails_server(const struct rc_server_rails *sr, int i);
/* Serve the further rails, each on its thread, until rc_server_rails_close
 * (run s as ever beside them). */
RC_EXPORT int rc_server_rails_start(struct rc_server_rails *sr, struct rc_err *err);
/* Stop and release the further rails (not s: destroy it after); the first
 * failure, a rail's serve included. sr NULL: nothing. */
RC_EXPORT int rc_server_rails_close(struct rc_server_rails *sr, struct rc_err *err);

/* Handle whatever is pending, waiting at most timeout_ms; returns 0 or -errno
 * on a fatal error. Single-threaded: call it from one thread. */
RC_EXPORT int rc_server_step(struct rc_server *s, int timeout_ms, struct rc_err *err);
/* Serve until stop_fd becomes readable. */
RC_EXPORT int rc_server_run(struct rc_server *s, int stop_fd, struct rc_err *err);
/* Disconnect everyone, persist file-backed regions, deregister, free.
 * Goes on after a failure. Returns the first region whose write-back to
 * its file failed (err names it), else the first other error. */
RC_EXPORT int rc_server_destroy(struct rc_server *s, struct rc_err *err);

RC_EXPORT int rc_server_nregions(const struct rc_server *s);
RC_EXPORT const struct rc_region *rc_server_region(const struct rc_server *s, int i);
RC_EXPORT const struct rc_listener *rc_server_listener(const struct rc_server *s);
RC_EXPORT const struct rc_gid_info *rc_server_gid(const struct rc_server *s);
RC_EXPORT const char *rc_server_token(const struct rc_server *s);

/* What a server has counted since it was created (register --metrics). */
struct rc_server_stats {
	int conns;         /* connections now */
	uint64_t accepted; /* connections established */
	uint64_t rejected; /* connect requests refused (token, too many, accept failed) */
	uint64_t dropped;  /* connections dropped on an error (a failed completion, keepalive) */
	uint64_t requests; /* control requests answered (LIST, migration steps) */
	uint64_t imms;     /* immediate data received (RDMA WRITE_WITH_IMM) */
	uint64_t flush_failed; /* periodic write-backs of a region that failed */
	/* Writes that rdmactl's clients announced done (a WRITE's notices, which a
	 * live migration tracks): their bytes and how many. A server sees no other
	 * one-sided traffic: READs, and a foreign client's writes, are not in them. */
	uint64_t written_bytes;
	uint64_t writes;
};
RC_EXPORT void rc_server_stats(const struct rc_server *s, struct rc_server_stats *out);

#endif
