// SPDX-License-Identifier: MIT
/*
 * A preload library for the replay tests of the group's connect plane
 * (tests/rxe/multicast.bats): it stands between rdmactl and librdmacm's
 * rdma_connect, so that the bytes of a real connect request are what is
 * recorded and replayed.
 *
 *   GROUP_REPLAY_RECORD=FILE  the private data of the first connect request
 *                             is written to FILE (an eavesdropper's copy)
 *   GROUP_REPLAY_PLAY=FILE    every connect request carries FILE's bytes
 *                             instead of its own (a replay)
 *
 * LD_PRELOAD=.../libgroup_replay.so rdmactl ...
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *p);

static void record(const char *path, const struct rdma_conn_param *p)
{
	int fd;

	if (!p || !p->private_data || !p->private_data_len)
		return;
	/* the first request only: a later one finds the file there */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return;
	if (write(fd, p->private_data, p->private_data_len) != (ssize_t)p->private_data_len)
		unlink(path);
	close(fd);
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	static unsigned char buf[256];
	int (*real)(struct rdma_cm_id *, struct rdma_conn_param *) =
		(int (*)(struct rdma_cm_id *, struct rdma_conn_param *))dlsym(RTLD_NEXT,
									      "rdma_connect");
	const char *rec = getenv("GROUP_REPLAY_RECORD"), *play = getenv("GROUP_REPLAY_PLAY");
	struct rdma_conn_param q;
	ssize_t n;
	int fd;

	if (!real)
		return -1;
	if (rec)
		record(rec, p);
	if (!play || !p)
		return real(id, p);
	fd = open(play, O_RDONLY);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf));
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return real(id, p);
	q = *p;
	q.private_data = buf;
	q.private_data_len = (uint8_t)n;
	return real(id, &q);
}
