/* SPDX-License-Identifier: MIT */
/*
 * A group of ranks on many hosts: who we are (flags or the launcher's
 * environment), where the others are (a rendezvous: etcd or a peers file),
 * one RC connection to each peer that is needed, small control messages, a
 * barrier, and counters of the immediate data that one-sided writes carry.
 * Reused by every collective (alltoall, multicast, migrate).
 */
#ifndef RDMACTL_GROUP_H
#define RDMACTL_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmactl/conn.h>
#include <rdmactl/err.h>
#include <rdmactl/export.h>

#define RC_GROUP_MAX 4096 /* ranks in one group */
#define RC_EP_MAX 320     /* "ADDR:PORT HOSTNAME WORLD" */

struct rc_rank_info {
	int rank;
	int world;
	int local_rank;  /* -1 when neither a flag nor the launcher gave it */
	char source[48]; /* "flags", "slurm", "openmpi", "pmix", "torchrun", or a mix */
};

/* Rank, world size and local rank: each from its flag when >= 0, else from
 * the first launcher whose variables are set (Open MPI, Slurm, PMIx,
 * torchrun). env is a NULL-terminated "NAME=VALUE" array, NULL for the
 * process environment. -EINVAL with a message for missing or bad values. */
RC_EXPORT int rc_rank_resolve(int rank, int world, int local_rank, char *const *env,
			      struct rc_rank_info *out, struct rc_err *err);

/* One rank's endpoint as the rendezvous knows it. */
struct rc_endpoint {
	char host[RC_HOST_MAX];
	char port[8];
	char hostname[64]; /* the host's name, for grouping ranks by node */
};

/* A rendezvous: "file:PATH" (one "RANK ADDR:PORT [HOSTNAME]" a line, '#'
 * comments) or "etcd://HOST:PORT/JOB" (etcd's v3 JSON gateway). */
struct rc_rdv;

/* Control messages carry at most this much. */
#define RC_GROUP_MSG_MAX 960

struct rc_group;

struct rc_group_opts {
	int rank;
	int world;
	const char *dev_name; /* refuse routes through another device */
	int timeout_ms;       /* connect, barrier and wait timeout */
	int sq_depth;         /* per connection (default 128) */
	int recv_depth;       /* receives kept posted per connection (default 32) */
	bool busy_poll;
	bool keep_going; /* a failed connection fails its peer only (multicast) */
	/* a pair that cannot connect is left out (rc_group_link says why): the
	 * ranks agree on the pairs left out and the barrier's tree goes around
	 * them (sweep); a rank they cut off fails the connect */
	bool partial;
	/* Every connection proves this token both ways (without sending it):
	 * a connection joins only once its peer proved it; NULL: none, and a
	 * peer that has one is refused. 1 to RC_TOKEN_MAX printable characters (copied). */
	const char *token;
};

RC_EXPORT int rc_group_close(struct rc_group *g);

/* Joining in one call: open the rendezvous, listen (--listen ADDR[:PORT], or
 * the address the peers file gives this rank), exchange the endpoints, plan
 * the connections from them (need[i * world + j], symmetric), connect. */
struct rc_group_join {
	int rank;
	int world;
	const char *rendezvous; /* "etcd://HOST:PORT/JOB" or "file:PATH" */
	const char *listen;     /* "ADDR[:PORT]", or NULL: the peers file's */
	const char *dev_name;
	int timeout_ms;
	bool busy_poll;
	bool keep_going;
	bool partial;      /* rc_group_opts.partial */
	int recv_depth;    /* receives kept posted per connection (0: 32) */
	const char *token; /* the group's token (rc_group_opts), or NULL */
	/* libfabric's provider (as rc_ofi_opts names it: "tcp", "verbs"...), or
	 * NULL: verbs. Over libfabric a rank binds its endpoint to the address
	 * it publishes; partial and keep_going are verbs only. */
	const char *fabric;
	/* Fill need from every rank's endpoint (their hosts name the nodes);
	 * 0, or -errno with err set (-EINVAL: the caller's input is wrong). */
	int (*plan)(void *arg, const struct rc_endpoint *all, int world, uint8_t *need,
		    struct rc_err *err);
	void *plan_arg;
};
struct rc_group_join_out {
	bool usage; /* the failure lies in the caller's input (rendezvous, listen, plan) */
};
/* The group owns the rendezvous until rc_group_close (an etcd lease lives
 * that long). Failures after listening name this rank ("rank R: ..."). */
RC_EXPORT int rc_group_join(const struct rc_group_join *j, struct rc_group **out,
			    struct rc_group_join_out *how, struct rc_err *err);
/* "etcd" or "file": how the group met. */
RC_EXPORT const char *rc_group_rdv_kind(const struct rc_group *g);

/* How the group came together and what it holds, for reports. */
struct rc_group_stats {
	double rendezvous_s;    /* rc_group_join: publishing and learning every endpoint */
	double connect_s;       /* connecting and accepting the planned peers */
	double first_barrier_s; /* the first barrier; < 0: none yet */
	int qps;                /* connections this rank holds */
	int cqs;                /* completion queues they use (one each today) */
	uint64_t ring_bytes;    /* registered for control messages */
	int tree_depth;         /* rounds of the barrier's tree, up or down */
};
RC_EXPORT void rc_group_stats(const struct rc_group *g, struct rc_group_stats *out);

/* Sizing a group before it exists (--plan): what rc_group_connect and
 * rc_group_stats will give rank for the connection plan need (world x world,
 * symmetric) with recv_depth receives per connection (0: the default), from
 * the functions the group sizes itself with. No device is touched. */
struct rc_group_plan {
	int qps;              /* connections (rc_group_stats's qps) */
	int cqs;              /* completion queues they use (cqs) */
	int recv_buffers;     /* control-message receives kept posted */
	uint64_t ring_bytes;  /* registered for control messages (ring_bytes) */
	int connects;         /* peers above rank: it connects to them */
	int accepts;          /* peers below rank: they connect to it */
	int connects_at_once; /* connects in flight at once */
	int connect_rounds;   /* rounds of them for connects */
};
RC_EXPORT void rc_group_plan_rank(const uint8_t *need, int world, int rank, int recv_depth,
				  struct rc_group_plan *out);
/* The depth of the barrier's and the allgather's tree for need (rc_group_stats's
 * tree_depth): rounds up, and as many down; -1 when need leaves a rank
 * unreachable, -ENOMEM. */
RC_EXPORT int rc_group_plan_depth(const uint8_t *need, int world);
RC_EXPORT const char *rc_group_dev(const struct rc_group *g);
/* The transport a group runs over: "verbs", or "ofi" with libfabric's
 * provider and domain (NULL over verbs). */
RC_EXPORT const char *rc_group_transport(const struct rc_group *g, const char **provider,
					 const char **domain);

/* Why a planned connection could not be made (partial groups). */
enum rc_link {
	RC_LINK_UP = 0,  /* connected, or not planned */
	RC_LINK_ROUTE,   /* no route, address or route resolution failed, or a route
			   * through another device than dev_name */
	RC_LINK_GID,     /* no usable GID for the address (no RDMA device behind it) */
	RC_LINK_TIMEOUT, /* no answer within the timeout */
	RC_LINK_REFUSED, /* rejected by the peer (a wrong token, nothing listening) */
	RC_LINK_OTHER,
};
/* "up", "route", "gid", "timeout", "refused", "other". */
RC_EXPORT const char *rc_link_name(enum rc_link k);

/* Every rank's value, also through ranks without a direct connection: up
 * and down a spanning tree of the connections (at most 8 children a rank
 * where the connections allow), as many rounds as the tree is deep, each
 * rank talking to its parent and children only. */
RC_EXPORT int rc_group_allgather_u64(struct rc_group *g, uint64_t mine, uint64_t *all,
				     struct rc_err *err);

/* A setting every rank of a group must share: its name as the caller shows
 * it (rdmactl passes its option's name), its value as text ("7168"; shown in the
 * message, cut to RC_GROUP_SETTING_TEXT), and what is compared: data, len
 * bytes, or the text where data is NULL. Empty (no text, or len 0) with
 * any_if_empty agrees with every value: a rank not given the option takes
 * what the others were given. */
struct rc_group_setting {
	const char *name;
	const char *text;
	const void *data;
	size_t len;
	bool any_if_empty;
};
#define RC_GROUP_SETTING_TEXT 48
#define RC_GROUP_SETTINGS_MAX 32
/* Whether every rank was given rank 0's settings (n of them, the same list
 * on every rank), once the group stands: every rank calls it, over the
 * group's tree. -EINVAL, the same message on every rank, naming the lowest
 * rank that differs, the first setting it differs on and both values:
 * "rank 1's NAME (7168) differs from rank 0's (4096)", and how many
 * more ranks differ; -EPROTO for a rank that checks another list. */
RC_EXPORT int rc_group_agree(struct rc_group *g, const struct rc_group_setting *s, int n,
			     struct rc_err *err);

#endif
