/* SPDX-License-Identifier: MIT */
/* What the group commands (alltoall, multicast) share: who this rank is and
 * where the group meets. */
#ifndef RDMACTL_GROUP_CMDS_H
#define RDMACTL_GROUP_CMDS_H

#include <rdmactl/group.h>
#include <rdmactl/parse.h>

#include "cmd.h"
#include "metrics.h"

/* The group options, as an X-macro list like CLIENT_OPTS (client_cmds.h):
 * GROUP_OPTS(X, A2A) makes A2A_RANK ... A2A_METRICS. A command lists the
 * block whole, so group_args_parse finds it from the first one's index. */
#define GROUP_OPTS(X, P) \
	X(P##_RANK, "rank", 'r', "R", "this rank (default: the launcher's)", \
	  OPT_INT(struct group_args, rank, 0, RC_GROUP_MAX, NULL)) \
	X(P##_WORLD, "world", 'w', "N", "ranks in the group (default: from the launcher)", \
	  OPT_INT(struct group_args, world, 0, 1 << 20, NULL)) \
	X(P##_LOCAL_RANK, "local-rank", 0, "L", "rank in the node (default: the launcher's)", \
	  OPT_INT(struct group_args, local_rank, 0, RC_GROUP_MAX, NULL)) \
	X(P##_RENDEZVOUS, "rendezvous", 'R', "URL", \
	  "etcd://HOST:PORT/JOB or file:PATH (peers file)", COMP_FILE, \
	  OPT_STR(struct group_args, rendezvous, NULL)) \
	X(P##_LISTEN, "listen", 'l', "ADDR[:PORT]", "address to accept peers on", \
	  OPT_STR(struct group_args, listen, NULL)) \
	X(P##_RAILS, "rails", 0, "PLAN", "rail plan's rail: auto, gpu:N or numa:N", COMP_WORDS, \
	  "auto|gpu:0|numa:0", OPT_STR(struct group_args, rails, NULL)) \
	X(P##_TOKEN, "token", 'T', "TOKEN", "group token, visible in /proc: use --token-file", \
	  OPT_STR(struct group_args, token_arg, NULL)) \
	X(P##_TOKEN_FILE, "token-file", 0, "FILE", "the group token, from FILE (mode 600)", \
	  COMP_FILE, OPT_STR(struct group_args, token_file, NULL)) \
	X(P##_METRICS, "metrics", 0, "FILE", "figures to FILE (Prometheus; %r: the rank)", \
	  COMP_FILE, OPT_STR(struct group_args, metrics_arg, NULL))

enum { GROUP_OPTS(OPT_INDEX, GO) GO_COUNT };

/* --rails-per-rank, of the commands that run on several rails a rank
 * (alltoall, multicast): into the group_args grp of their struct S, read by
 * group_rails_per_rank. */
#define GROUP_RAILS_OPT(X, P, S) \
	X(P##_RAILS_PER_RANK, "rails-per-rank", 0, "N", "--rails: rails a rank, 1-16 or all", \
	  COMP_WORDS, "1|2|all", OPT_STR(S, grp.rails_per_rank_arg, "1"), \
	  OPT_GIVEN(S, grp.rails_per_rank_given))

/* The group options, parsed: the rank resolved from the flags or the
 * launcher's environment; rendezvous and listen as given (NULL if not). */
struct group_args {
	int rank, world, local_rank; /* as given, -1: from the launcher */
	struct rc_rank_info who;
	const char *rendezvous;
	const char *listen;
	const char *rails;                /* --rails PLAN, NULL: none */
	const char *rails_per_rank_arg;   /* --rails-per-rank, else its row's default */
	const char *rails_per_rank_given; /* --rails-per-rank as given, or NULL */
	/* Set by the command before group_args_parse: the most rails a rank
	 * may run on (0 or 1: one), and how many of the plan's --rails gives it
	 * (0: one, -1: all). */
	int rails_max;
	int rails_per_rank;
	/* The devices this rank runs on (nrails of them; 0: -d's one, or any),
	 * from --rails or -d DEV1,DEV2, and where each listens. */
	int nrails;
	char rail_dev[RC_RAILS_MAX][64];
	char rail_listen[RC_RAILS_MAX][RC_HOST_MAX + 8];
	const char *token_arg, *token_file; /* --token, --token-file as given */
	const char *metrics_arg;            /* --metrics as given */
	const char *token;                  /* NULL: none */
	char token_buf[RC_TOKEN_MAX + 1];   /* what --token-file held */
	char metrics[4096];                 /* --metrics, %r replaced by the rank ("": none) */
	bool metrics_per_rank;              /* it held %r: every rank writes its own */
};
/* Parse the GROUP_OPTS block whose first option (RANK) is at index first;
 * with --rails, read the rail plan and pick this rank's device (rail_dev).
 * 0, -EINVAL after a usage error, or the plan's failure (said). */
int group_args_parse(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int first,
		     struct group_args *a);
/* The device the group of rail i opens: --rails's pick, else -d's (NULL:
 * any). */
static inline const char *group_dev(const struct ctx *ctx, const struct group_args *a, int i)
{
	return !a->nrails ? ctx->dev_name : a->rail_dev[i][0] ? a->rail_dev[i] : NULL;
}
/* Where rail i listens: its device's address (--rails), its --listen
 * address, else --listen as given (NULL: the peers file's). */
static inline const char *group_listen(const struct group_args *a, int i)
{
	return a->nrails && a->rail_listen[i][0] ? a->rail_listen[i] : a->listen;
}
/* Rail i's rendezvous, into buf: the job's own for rail 0, "JOB.railI"
 * for the others (an etcd rendezvous: every rail publishes its endpoints
 * apart). */
const char *group_rail_rendezvous(const struct group_args *a, int i, char *buf, size_t cap);
/* A rail's figures, as the commands on several rails report them: the
 * bytes it carried and the seconds it took. */
struct group_rail_fig {
	uint64_t bytes;
	double seconds;
};
/* "DEV1,DEV2" of the rails' groups (n of them). */
void group_rail_devs(struct rc_group *const *g, int n, char *buf, size_t cap);
/* Rail i of n (f: every rail's): its object's head, after out_arr_begin:
 * rail, device, bytes, share (of all the rails' bytes), seconds and
 * gbyte_per_s, in text "# rail I: DEV bytes B share S in T s (R GB/s)".
 * The command adds its own keys, then group_rail_end. */
void group_rail_begin(struct out *o, struct rc_group *const *g, const struct group_rail_fig *f,
		      int n, int i);
/* Its finding (a rail below half the fastest rail's rate, judged only when
 * the slowest took 0.1 s or more; else null), the line's end and the
 * object's. */
void group_rail_end(struct out *o, struct rc_group *const *g, const struct group_rail_fig *f, int n,
		    int i);
/* --rails-per-rank N|all (s; NULL: absent), before group_args_parse (which
 * picks the rails): a command that runs on several rails a rank. */
int group_rails_per_rank(struct ctx *ctx, const char *s, struct group_args *a);
/* The options every rank of a group must be given alike, as
 * rc_group_agree compares them: a command adds each with group_setting. */
struct group_settings {
	struct rc_group_setting s[RC_GROUP_SETTINGS_MAX];
	char text[RC_GROUP_SETTINGS_MAX][RC_GROUP_SETTING_TEXT];
	int n;
};
/* Option name with its value as text (printf's fmt), compared as text; the
 * setting added, for the caller to set data and len (compare bytes
 * instead) or any_if_empty. */
struct rc_group_setting *group_setting(struct group_settings *gs, const char *name, const char *fmt,
				       ...) __attribute__((format(printf, 3, 4)));
/* Over g (this rank's): every rank was given rank 0's settings; one that was not is a
 * usage error, the same message on every rank ("rank 1's --hidden (7168)
 * differs from rank 0's (4096)..."). 0, or the error said. */
int group_agree(struct ctx *ctx, struct rc_group *g, int rank, const struct group_settings *gs);
/* Join the group of every rail of this rank into g[] (one, or a->nrails),
 * each from the template j with its rail's rendezvous, listen address and
 * device: rail 0's first, over which the ranks of a command that may run
 * on several (rails_max) agree on how many rails each runs (the error
 * names a rank that differs) and on the settings gs (NULL: none), then the
 * others. 0, or a failure said (a usage error where the input is at
 * fault); the groups joined are in g[] for the caller to close. */
int group_join_rails(struct ctx *ctx, const struct group_args *a, const struct rc_group_join *j,
		     const struct group_settings *gs, struct rc_group **g);
/* After every usage check: --rendezvous is given, a file: one can be read
 * (what names the command in the message), --metrics can be written. */
int group_rendezvous_ready(struct ctx *ctx, const char *what, const struct group_args *a);
/* The "group" object of a report: how long the rendezvous, the connections
 * and the first barrier took, what this rank holds (QPs, CQs, message
 * rings) and its peak resident memory; a text line beginning "# group:". */
void group_report(struct out *o, const struct rc_group *g);
/* The same object with no text (a report whose text says nothing of it). */
void group_report_data(struct out *o, const struct rc_group *g);
/* --metrics: the rows of the group object (rendezvous and connect time, QPs). */
extern const struct metric_table group_metric_table;
/* Whether this rank writes --metrics: every rank with %r in the path, else
 * the one that reports (rank 0, multicast's root). */
static inline bool group_metrics_on(const struct group_args *a, int reporter)
{
	return a->metrics[0] && (a->metrics_per_rank || a->who.rank == reporter);
}

/* --plan: the world from --world (2 to RC_GROUP_MAX, required), this rank
 * from --rank when given (else -1); the other group options are not needed
 * and not read, so a launch line with --plan added sizes its job. what names
 * the command in the messages. 0 or -EINVAL after a usage error. */
int group_plan_args(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v, int first,
		    const char *what, struct group_args *a);
/* --ranks-per-node rpn (0: absent) for a plan of world ranks: a usage error
 * when it does not divide the world. */
int group_plan_rpn(struct ctx *ctx, int rpn, int world);

/* A job to size: the connection plan (need, world x world), the receives
 * per connection (0: the group's default), the bytes each rank registers
 * for the command's own buffers (buf_bytes[world], named buf_what), ranks
 * per node (0: no figures per node) and the rank to detail (-1: none). */
struct group_plan_in {
	const uint8_t *need;
	int world;
	int recv_depth;
	const uint64_t *buf_bytes;
	const char *buf_what;
	int ranks_per_node;
	int rank;
};
/* The plan's figures, after the command's own heading: per rank the min,
 * median and max of QPs, CQs, receive buffers, message-ring bytes, the
 * command's buffer bytes, registered bytes and connect rounds; for the job
 * the totals, the connect rounds of the busiest rank and the barrier tree's
 * depth; per node the busiest node's QPs and registered bytes. 0, or what
 * fail returned. */
int group_plan_print(struct ctx *ctx, const struct group_plan_in *in);

#endif
