/* SPDX-License-Identifier: MIT */
/* Inside the group layer: the etcd rendezvous behind rc_rdv. */
#ifndef RDMACTL_GROUP_RDV_INT_H
#define RDMACTL_GROUP_RDV_INT_H

#include <rdmactl/group.h>

struct rc_etcd_rdv;

/* url: "etcd://HOST:PORT/JOB". */
int etcd_open(const char *url, int rank, int world, int timeout_ms, struct rc_etcd_rdv **out,
	      struct rc_err *err);
int etcd_exchange(struct rc_etcd_rdv *e, const struct rc_endpoint *self, struct rc_endpoint *all,
		  struct rc_err *err);
int etcd_close(struct rc_etcd_rdv *e);

/* rdv_text.c: "ADDR:PORT HOSTNAME WORLD" and back. */
void endpoint_format(const struct rc_endpoint *ep, int world, char *buf, size_t len);
int endpoint_scan(const char *s, struct rc_endpoint *ep, int *world);

/* "1, 4, 7" for the ranks whose have[] is false. */
void ranks_missing(const bool *have, int world, char *buf, size_t len);

#endif
