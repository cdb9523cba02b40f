// SPDX-License-Identifier: MIT
/* Ranks from flags and launchers, endpoints, peers files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdmactl/group.h>
#include <rdmactl/group_core.h>

#include "check.h"

static void launchers(void)
{
	struct rc_rank_info r;
	struct rc_err e;
	char *slurm[] = { "SLURM_PROCID=3", "SLURM_NTASKS=8", "SLURM_LOCALID=1", NULL };
	char *ompi[] = { "SLURM_PROCID=0",
			 "SLURM_NTASKS=1",
			 "OMPI_COMM_WORLD_RANK=5",
			 "OMPI_COMM_WORLD_SIZE=6",
			 "OMPI_COMM_WORLD_LOCAL_RANK=2",
			 NULL };
	char *pmix[] = { "PMIX_RANK=2", NULL };
	char *torch[] = { "RANK=1", "WORLD_SIZE=4", "LOCAL_RANK=1", NULL };
	char *bad[] = { "SLURM_PROCID=x1", "SLURM_NTASKS=4", NULL };
	char *none[] = { "HOME=/root", NULL };

	CHECK(rc_rank_resolve(-1, -1, -1, slurm, &r, &e) == 0);
	CHECK(r.rank == 3 && r.world == 8 && r.local_rank == 1);
	CHECK_STR(r.source, "slurm");
	/* mpirun inside a Slurm step: Open MPI's own rank wins */
	CHECK(rc_rank_resolve(-1, -1, -1, ompi, &r, &e) == 0);
	CHECK(r.rank == 5 && r.world == 6 && r.local_rank == 2);
	CHECK_STR(r.source, "openmpi");
	CHECK(rc_rank_resolve(-1, -1, -1, torch, &r, &e) == 0);
	CHECK(r.rank == 1 && r.world == 4 && r.local_rank == 1);
	CHECK_STR(r.source, "torchrun");
	/* PMIx gives the rank; the world comes from the flag */
	CHECK(rc_rank_resolve(-1, -1, -1, pmix, &r, &e) == -EINVAL);
	CHECK(strstr(e.msg, "world") != NULL);
	CHECK(rc_rank_resolve(-1, 4, -1, pmix, &r, &e) == 0);
	CHECK(r.rank == 2 && r.world == 4 && r.local_rank == -1);
	CHECK_STR(r.source, "flags+pmix");
	/* flags win over the environment */
	CHECK(rc_rank_resolve(0, 2, 0, slurm, &r, &e) == 0);
	CHECK(r.rank == 0 && r.world == 2);
	CHECK_STR(r.source, "flags");
	CHECK(rc_rank_resolve(-1, -1, -1, bad, &r, &e) == -EINVAL);
	CHECK(strstr(e.msg, "SLURM_PROCID") != NULL);
	CHECK(rc_rank_resolve(-1, -1, -1, none, &r, &e) == -EINVAL);
	CHECK(strstr(e.msg, "launcher") != NULL);
	CHECK(rc_rank_resolve(4, 4, -1, none, &r, &e) == -EINVAL);
	CHECK(strstr(e.msg, "rank 4 is not below the world size 4") != NULL);
	CHECK(rc_rank_resolve(0, RC_GROUP_MAX + 1, -1, none, &r, &e) == -EINVAL);
	CHECK(rc_rank_resolve(1, 2, 2, none, &r, &e) == -EINVAL);
}

static void endpoints(void)
{
	struct rc_endpoint ep;

	CHECK(rc_endpoint_parse("198.18.0.1:18000", &ep) == 0);
	CHECK_STR(ep.host, "198.18.0.1");
	CHECK_STR(ep.port, "18000");
	CHECK(rc_endpoint_parse("[fe80::1]:7", &ep) == 0);
	CHECK_STR(ep.host, "fe80::1");
	CHECK(rc_endpoint_parse("198.18.0.1", &ep) == -EINVAL);
	CHECK(rc_endpoint_parse("198.18.0.1:", &ep) == -EINVAL);
	CHECK(rc_endpoint_parse(":80", &ep) == -EINVAL);
	CHECK(rc_endpoint_parse("h:8x", &ep) == -EINVAL);
	CHECK(rc_endpoint_parse("h:70000", &ep) == -EINVAL);
	CHECK(rc_endpoint_parse("fe80::1:80", &ep) == -EINVAL);
}

static char *write_file(const char *text)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/test_group.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		abort();
	close(fd);
	return path;
}

/* Open a peers file with world 3 as rank 1; the error text or "". */
static int peers(const char *text, struct rc_err *e, struct rc_endpoint *all)
{
	char url[96];
	char *path = write_file(text);
	struct rc_rdv *r = NULL;
	struct rc_endpoint self;
	int rc;

	snprintf(url, sizeof(url), "file:%s", path);
	e->msg[0] = '\0';
	rc = rc_rdv_open(url, 1, 3, 1000, &r, e);
	if (!rc) {
		CHECK(rc_rdv_self(r, &self, e) == 0);
		CHECK_STR(self.host, "10.0.0.2");
		CHECK(rc_rdv_exchange(r, &self, all, e) == 0);
		CHECK_STR(rc_rdv_kind(r), "file");
		rc_rdv_close(r);
	}
	unlink(path);
	return rc;
}

static void peers_files(void)
{
	struct rc_endpoint all[3];
	struct rc_rdv *r;
	struct rc_err e;

	CHECK(peers("# job\n0 10.0.0.1:7000 hostA\n\n1 10.0.0.2:7001   # me\n2 [fe80::3]:7002\n",
		    &e, all) == 0);
	CHECK_STR(all[0].hostname, "hostA");
	CHECK_STR(all[2].host, "fe80::3");
	CHECK_STR(all[2].port, "7002");
	CHECK(peers("0 10.0.0.1:7000\n1 10.0.0.2:7001\n1 10.0.0.3:7001\n2 10.0.0.3:1\n", &e, all) ==
	      -EINVAL);
	CHECK(strstr(e.msg, ":3: rank 1 is listed twice (also on line 2)") != NULL);
	CHECK(peers("0 10.0.0.1:7000\n1 10.0.0.2:7001\n3 10.0.0.3:1\n", &e, all) == -EINVAL);
	CHECK(strstr(e.msg, "rank 3 is not below the world size 3") != NULL);
	CHECK(peers("0 10.0.0.1:7000\n1 10.0.0.2:7001\n", &e, all) == -EINVAL);
	CHECK(strstr(e.msg, "no address for rank 2") != NULL);
	CHECK(peers("0 10.0.0.1:7000\n1 10.0.0.2\n2 10.0.0.3:1\n", &e, all) == -EINVAL);
	CHECK(strstr(e.msg, ":2: '10.0.0.2' is not ADDR:PORT") != NULL);
	CHECK(peers("zero 10.0.0.1:7000\n", &e, all) == -EINVAL);
	CHECK(strstr(e.msg, ":1: expected 'RANK ADDR:PORT") != NULL);
	CHECK(rc_rdv_open("file:/nonexistent/peers", 0, 2, 100, &r, &e) == -EINVAL);
	CHECK(strstr(e.msg, "/nonexistent/peers") != NULL);
	CHECK(rc_rdv_open("tcp://x", 0, 2, 100, &r, &e) == -EINVAL);
	CHECK(rc_rdv_open("etcd://127.0.0.1:2379", 0, 2, 100, &r, &e) == -EINVAL);
	CHECK(rc_rdv_open("etcd://127.0.0.1:2379/a/b", 0, 2, 100, &r, &e) == -EINVAL);
	CHECK(rc_rdv_open("etcd://nohostport/job", 0, 2, 100, &r, &e) == -EINVAL);
	/* nothing listens on port 1: a runtime error that names the server */
	CHECK(rc_rdv_open("etcd://127.0.0.1:1/job", 0, 2, 1000, &r, &e) == -ECONNREFUSED);
	CHECK(strstr(e.msg, "cannot reach etcd at 127.0.0.1:1") != NULL);
}

/* A received control message: its stated length must be what came (a
 * short one would leave the previous message's bytes behind). */
static void msg_lengths(void)
{
	uint32_t m[4 + RC_GROUP_MSG_MAX / 4 + 20] = { 0x72646d67u, 1, 0, 8 };
	struct rc_err e;

	CHECK(rc_group_msg_check(m, 16 + 8, &e) == 0);
	m[3] = 0;
	CHECK(rc_group_msg_check(m, 16, &e) == 0);
	/* says 8 bytes, 4 came */
	m[3] = 8;
	CHECK(rc_group_msg_check(m, 16 + 4, &e) == -EPROTO);
	CHECK(strstr(e.msg, "says 8 bytes but 4 came") != NULL);
	/* says 4, 8 came */
	m[3] = 4;
	CHECK(rc_group_msg_check(m, 16 + 8, &e) == -EPROTO);
	/* a header cut short, and more than a message holds */
	CHECK(rc_group_msg_check(m, 12, &e) == -EPROTO);
	CHECK(strstr(e.msg, "of 12 bytes") != NULL);
	m[3] = RC_GROUP_MSG_MAX + 4;
	CHECK(rc_group_msg_check(m, 16 + RC_GROUP_MSG_MAX + 4, &e) == -EPROTO);
	m[3] = RC_GROUP_MSG_MAX;
	CHECK(rc_group_msg_check(m, 16 + RC_GROUP_MSG_MAX, &e) == 0);
	/* a length that wraps when the header is added */
	m[3] = UINT32_MAX;
	CHECK(rc_group_msg_check(m, 16 + 4, &e) == -EPROTO);
}

int main(void)
{
	launchers();
	endpoints();
	peers_files();
	msg_lengths();
	CHECK_DONE();
}
