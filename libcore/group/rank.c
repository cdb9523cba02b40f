// SPDX-License-Identifier: MIT
/* Who this process is in the group: flags first, then the launcher. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/group.h>
#include <rdmactl/group_core.h>

extern char **environ;

struct launcher {
	const char *name;
	const char *rank, *world, *local;
};

/* Open MPI before Slurm: mpirun inside an allocation inherits SLURM_PROCID
 * of its own step, while OMPI_COMM_WORLD_RANK is the rank's own. */
static const struct launcher launchers[] = {
	{ "openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK" },
	{ "slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID" },
	{ "pmix", "PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK" },
	{ "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK" },
};

static const char *env_get(char *const *env, const char *name)
{
	size_t n = strlen(name);

	for (int i = 0; env && env[i]; i++)
		if (!strncmp(env[i], name, n) && env[i][n] == '=')
			return env[i] + n + 1;
	return NULL;
}

static int env_int(char *const *env, const char *name, int *out, struct rc_err *err)
{
	const char *s = env_get(env, name);
	char *end;
	long v;

	if (!s)
		return 0;
	errno = 0;
	v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < 0 || v > 1 << 24)
		return rc_err_set(err, EINVAL, "%s='%s' is not a rank number", name, s);
	*out = (int)v;
	return 1;
}

static void add_source(struct rc_rank_info *o, const char *name)
{
	size_t len = strlen(o->source);

	if (strstr(o->source, name))
		return;
	snprintf(o->source + len, sizeof(o->source) - len, "%s%s", len ? "+" : "", name);
}

int rc_rank_resolve(int rank, int world, int local_rank, char *const *env, struct rc_rank_info *o,
		    struct rc_err *err)
{
	const struct launcher *l = NULL;
	int rc;

	if (!env)
		env = environ;
	memset(o, 0, sizeof(*o));
	o->rank = rank;
	o->world = world;
	o->local_rank = local_rank;
	if (rank >= 0 || world >= 0 || local_rank >= 0)
		add_source(o, "flags");
	for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
		if (env_get(env, launchers[i].rank)) {
			l = &launchers[i];
			break;
		}
	}
	if (l) {
		int v;

		if (o->rank < 0) {
			if ((rc = env_int(env, l->rank, &v, err)) < 0)
				return rc;
			o->rank = v;
			add_source(o, l->name);
		}
		if (o->world < 0) {
			if ((rc = env_int(env, l->world, &v, err)) < 0)
				return rc;
			if (rc) {
				o->world = v;
				add_source(o, l->name);
			}
		}
		if (o->local_rank < 0) {
			if ((rc = env_int(env, l->local, &v, err)) < 0)
				return rc;
			if (rc) {
				o->local_rank = v;
				add_source(o, l->name);
			}
		}
	}
	if (o->rank < 0)
		return rc_err_opt(err, EINVAL,
				  "no rank: give {rank} and {world}, or start under a launcher "
				  "(Slurm, Open MPI, PMIx, torchrun)");
	if (o->world < 0)
		return rc_err_opt(err, EINVAL, "no world size: give {world} (%s gave the rank only)",
				  l ? l->name : "the flags");
	if (o->world < 1 || o->world > RC_GROUP_MAX)
		return rc_err_set(err, EINVAL, "world size %d is outside 1..%d", o->world,
				  RC_GROUP_MAX);
	if (o->rank >= o->world)
		return rc_err_set(err, EINVAL, "rank %d is not below the world size %d", o->rank,
				  o->world);
	if (o->local_rank >= o->world)
		return rc_err_set(err, EINVAL, "local rank %d is not below the world size %d",
				  o->local_rank, o->world);
	return 0;
}

int rc_endpoint_parse(const char *s, struct rc_endpoint *ep)
{
	const char *colon;
	size_t hl;

	memset(ep, 0, sizeof(*ep));
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		hl = (size_t)(close - s - 1);
		colon = close + 1;
		s++;
	} else {
		colon = strrchr(s, ':');
		if (!colon || strchr(s, ':') != colon)
			return -EINVAL;
		hl = (size_t)(colon - s);
	}
	if (!hl || hl >= sizeof(ep->host) || !colon[1] || strlen(colon + 1) >= sizeof(ep->port))
		return -EINVAL;
	for (const char *p = colon + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	if (atoi(colon + 1) > 65535)
		return -EINVAL;
	memcpy(ep->host, s, hl);
	snprintf(ep->port, sizeof(ep->port), "%s", colon + 1);
	return 0;
}
