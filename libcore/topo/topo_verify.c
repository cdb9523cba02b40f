// SPDX-License-Identifier: MIT
/*
 * Does a port carry traffic? Two RC QPs of one device, connected to each
 * other through the port (RoCE: its recommended GID; InfiniBand: its LID),
 * and a few MiB of RDMA WRITE from one buffer into the other, checked.
 * Each chunk of the source carries bytes of its own (a random pattern by
 * offset) and the destination starts as their complement, so a chunk that
 * lands at a wrong offset, or not at all, shows. No rdma_cm, no peer,
 * bounded by a timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>

#include <rdmactl/config_core.h>
#include <rdmactl/dev.h>
#include <rdmactl/mem.h>
#include <rdmactl/ops.h>
#include <rdmactl/dev_core.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>
#include <rdmactl/topo_core.h>

#include "topo_int.h"

#define VERIFY_BUF (1u << 20)
#define VERIFY_CHUNK (64u << 10)
#define VERIFY_DEPTH 16

struct loop {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_qp *qp[2];
	struct ibv_mr *mr[2];
	void *buf[2];
};

static int loop_close(struct loop *l)
{
	int rc = 0, r;

	/* Keep going after a failure: everything gets released. The destroy
	 * calls return the error (errno is not theirs to set). */
	for (int i = 0; i < 2; i++)
		if (l->qp[i] && (r = ibv_destroy_qp(l->qp[i])) && !rc)
			rc = -r;
	for (int i = 0; i < 2; i++)
		if (l->mr[i] && (r = ibv_dereg_mr(l->mr[i])) && !rc)
			rc = -r;
	if (l->cq && (r = ibv_destroy_cq(l->cq)) && !rc)
		rc = -r;
	if (l->cch && (r = ibv_destroy_comp_channel(l->cch)) && !rc)
		rc = -r;
	if (l->pd && (r = ibv_dealloc_pd(l->pd)) && !rc)
		rc = -r;
	if (l->ctx && ibv_close_device(l->ctx) && !rc)
		rc = -errno;
	for (int i = 0; i < 2; i++)
		free(l->buf[i]);
	return rc;
}

static int connect_qp(struct ibv_qp *qp, uint32_t remote_qpn, uint8_t port,
		      const struct ibv_port_attr *pa, int gid_index, const union ibv_gid *gid,
		      struct rc_err *err)
{
	struct ibv_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	/* ibv_modify_qp and ibv_query_port return the error; errno is not theirs. */
	rc = ibv_modify_qp(qp, &a,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (rc)
		return rc_err_set(err, rc, "QP to INIT: %s", strerror(rc));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = pa->active_mtu;
	a.dest_qp_num = remote_qpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = port;
	if (gid_index >= 0) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = *gid;
		a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
		a.ah_attr.grh.hop_limit = 64;
	} else {
		a.ah_attr.dlid = pa->lid;
	}
	rc = ibv_modify_qp(qp, &a,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc)
		return rc_err_set(err, rc, "QP to RTR (%s): %s",
				  gid_index >= 0 ? "GID routed" : "LID routed", strerror(rc));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	rc = ibv_modify_qp(qp, &a,
			   IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				   IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (rc)
		return rc_err_set(err, rc, "QP to RTS: %s", strerror(rc));
	return 0;
}

/* The source (i 0): a random pattern by offset, so no two chunks are
 * alike; the destination (i 1): its complement, so every byte must change. */
static void fill(struct loop *l, int i)
{
	unsigned char *b = l->buf[i];

	rc_pattern_fill("random:20240917", 0, b, VERIFY_BUF);
	for (size_t k = 0; i && k < VERIFY_BUF; k++)
		b[k] = (unsigned char)~b[k];
}

static int loop_open(struct loop *l, const char *dev, uint8_t port, int gid_index,
		     struct rc_err *err)
{
	struct ibv_qp_init_attr qa;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int rc;

	if ((rc = rc_dev_open(dev, &l->ctx, err)))
		return rc;
	rc = ibv_query_port(l->ctx, port, &pa);
	if (rc)
		return rc_err_set(err, rc, "cannot query port %u: %s", port, strerror(rc));
	if (pa.state != IBV_PORT_ACTIVE)
		return rc_err_set(err, ENETDOWN, "port %u is not ACTIVE", port);
	if (pa.link_layer == IBV_LINK_LAYER_INFINIBAND)
		gid_index = -1;
	else if (gid_index < 0)
		return rc_err_set(err, ENOENT, "port %u has no RoCE v2 GID to route by", port);
	if (gid_index < 0 && !pa.lid)
		return rc_err_set(err, ENETDOWN, "port %u has no LID (no subnet manager?)", port);
	if (gid_index >= 0 && ibv_query_gid(l->ctx, port, gid_index, &gid))
		return rc_err_set(err, errno, "cannot read GID %d: %s", gid_index, strerror(errno));
	if (!(l->pd = ibv_alloc_pd(l->ctx)))
		return rc_err_set(err, errno, "cannot allocate a PD: %s", strerror(errno));
	/* The CQ sleeps on a non-blocking channel, as a connection's does: rc_poll
	 * waits on it (verbs/cq.c). */
	if (!(l->cch = ibv_create_comp_channel(l->ctx)))
		return rc_err_set(err, errno, "cannot create a completion channel: %s",
				  strerror(errno));
	if ((rc = fcntl(l->cch->fd, F_GETFL)) < 0 || fcntl(l->cch->fd, F_SETFL, rc | O_NONBLOCK) < 0)
		return rc_err_set(err, errno, "cannot make the completion channel non-blocking: %s",
				  strerror(errno));
	if (!(l->cq = ibv_create_cq(l->ctx, VERIFY_DEPTH * 2, NULL, l->cch, 0)))
		return rc_err_set(err, errno, "cannot create a CQ: %s", strerror(errno));
	for (int i = 0; i < 2; i++) {
		if (posix_memalign(&l->buf[i], 4096, VERIFY_BUF))
			return rc_err_set(err, ENOMEM, "out of memory for the buffers");
		fill(l, i);
		l->mr[i] = ibv_reg_mr(l->pd, l->buf[i], VERIFY_BUF,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!l->mr[i])
			return rc_err_set(err, errno,
					  "cannot register 1 MiB: %s (is the memlock limit too low?)",
					  strerror(errno));
		memset(&qa, 0, sizeof(qa));
		qa.send_cq = qa.recv_cq = l->cq;
		qa.qp_type = IBV_QPT_RC;
		qa.cap.max_send_wr = VERIFY_DEPTH;
		qa.cap.max_recv_wr = 1;
		qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
		if (!(l->qp[i] = ibv_create_qp(l->pd, &qa)))
			return rc_err_set(err, errno, "cannot create a QP: %s", strerror(errno));
	}
	for (int i = 0; i < 2; i++)
		if ((rc = connect_qp(l->qp[i], l->qp[!i]->qp_num, port, &pa, gid_index, &gid, err)))
			return rc;
	return 0;
}

/* The first len bytes of the destination are the source's; the rest of the
 * buffer, never written, still holds the complement. */
static int check(const struct loop *l, uint64_t len, struct rc_err *err)
{
	const unsigned char *s = l->buf[0], *d = l->buf[1];

	for (uint64_t k = 0; k < VERIFY_BUF; k++) {
		if (k < len && d[k] != s[k])
			return rc_err_set(err, EIO,
					  "the written data does not match what was sent: byte %llu "
					  "(chunk %llu) is 0x%02x, not 0x%02x",
					  (unsigned long long)k,
					  (unsigned long long)(k / VERIFY_CHUNK), d[k], s[k]);
		if (k >= len && (d[k] ^ s[k]) != 0xff)
			return rc_err_set(err, EIO, "byte %llu was written, past the %llu sent",
					  (unsigned long long)k, (unsigned long long)len);
	}
	return 0;
}

static int loop_run(struct loop *l, uint64_t bytes, int timeout_ms, double *secs, struct rc_err *err)
{
	uint64_t posted = 0, done = 0, nwr = (bytes + VERIFY_CHUNK - 1) / VERIFY_CHUNK;
	/* The two QPs share the one CQ: the data path waits on it as on any
	 * connection's (verbs/cq.c), with the same meaning of the timeout. */
	struct rc_conn c = { .qp = l->qp[0],
			     .cq = l->cq,
			     .cch = l->cch,
			     .timeout_ms = timeout_ms,
			     .peer = "the loopback QP" };
	double start = rc_now();
	int inflight = 0;

	while (done < nwr) {
		struct ibv_wc wc[VERIFY_DEPTH];
		struct rc_chain ch;
		int n, rc;

		ch.n = 0;
		while (inflight < VERIFY_DEPTH && posted < nwr) {
			uint32_t off = (uint32_t)((posted * VERIFY_CHUNK) % VERIFY_BUF);
			uint64_t left = bytes - posted * VERIFY_CHUNK;
			struct rc_wr w = { .op = RC_OP_WRITE,
					   .laddr = (uintptr_t)l->buf[0] + off,
					   .len = left < VERIFY_CHUNK ? (uint32_t)left
								      : VERIFY_CHUNK,
					   .lkey = l->mr[0]->lkey,
					   .raddr = (uintptr_t)l->buf[1] + off,
					   .rkey = l->mr[1]->rkey,
					   .user = posted,
					   .signaled = true };

			rc_chain_add(&ch, &w);
			posted++;
			inflight++;
		}
		rc = rc_chain_post(&c, &ch, err);
		if (rc < 0)
			return rc;
		/* An error completion comes back as rc_wc_error's message. */
		n = rc_poll(&c, wc, VERIFY_DEPTH, timeout_ms, err);
		if (n == -ETIMEDOUT)
			return rc_err_set(err, ETIMEDOUT,
					  "no completion within %d ms (%llu of %llu writes done)",
					  timeout_ms, (unsigned long long)done,
					  (unsigned long long)nwr);
		if (n < 0)
			return n;
		done += (uint64_t)n;
		inflight -= n;
	}
	*secs = rc_now() - start;
	/* Test hook (the configuration's test_topo_verify_corrupt, RDMACTL_TEST_TOPO_VERIFY_CORRUPT set, as the fake drivers'
	 * RDMACTL_*_LIB are): one written byte made wrong, the first of chunk 1
	 * (of chunk 0 for a write of one chunk), so that the check must fail. */
	if (rc_config()->test_topo_verify_corrupt)
		((unsigned char *)l->buf[1])[bytes > VERIFY_CHUNK ? VERIFY_CHUNK : 0] ^= 0x5a;
	return check(l, bytes < VERIFY_BUF ? bytes : VERIFY_BUF, err);
}

int rc_topo_verify_port(const char *dev, int port, int gid_index, uint64_t bytes, int timeout_ms,
			struct rc_topo_verify *res, struct rc_err *err)
{
	struct loop l = { 0 };
	double secs = 0;
	int rc;

	memset(res, 0, sizeof(*res));
	res->done = true;
	res->gid_index = gid_index;
	if (port < 1 || port > 255)
		return rc_err_set(err, EINVAL, "invalid port %d", port);
	if (!bytes)
		bytes = 8u << 20;
	rc = loop_open(&l, dev, (uint8_t)port, gid_index, err);
	if (!rc)
		rc = loop_run(&l, bytes, timeout_ms > 0 ? timeout_ms : 10000, &secs, err);
	loop_close(&l);
	if (rc)
		return rc;
	res->ok = true;
	res->written = bytes;
	res->bytes = bytes < VERIFY_BUF ? bytes : VERIFY_BUF;
	res->seconds = secs;
	res->gbit_per_s = secs > 0 ? (double)bytes * 8 / 1e9 / secs : 0;
	return 0;
}

int rc_topo_verify(struct rc_topo *t, const char *only, uint64_t bytes, int timeout_ms)
{
	int failed = 0, tried = 0, devs = 0;

	for (int d = 0; d < t->ndevs; d++) {
		struct rc_topo_dev *dev = &t->devs[d];

		if (only && strcmp(only, dev->name))
			continue;
		devs++;
		for (int p = 0; p < dev->nports; p++) {
			struct rc_topo_port *port = &dev->ports[p];
			bool ib = !strcmp(port->link_layer, "InfiniBand");
			struct rc_err e;

			if (strcmp(port->state, "ACTIVE"))
				continue;
			tried++;
			if (!rc_topo_verify_port(dev->name, port->num, ib ? -1 : port->rec_gid,
						 bytes, timeout_ms, &port->verify, &e))
				continue;
			tp_copy(port->verify.error, sizeof(port->verify.error), e.msg);
			failed++;
			tp_add_finding(
				t, RC_SEV_ERROR, "verify",
				"check the port with ibv_devinfo -v and dmesg; on RoCE, the netdev's address and MTU",
				"%s port %d carried no loopback traffic: %s", dev->name, port->num,
				e.msg);
		}
	}
	if (tried)
		return failed;
	/* Nothing was written, so nothing was proven: a verify that passes
	 * with no port would tell a health check all is well. */
	if (!devs)
		tp_add_finding(
			t, RC_SEV_ERROR, "verify",
			"load the NIC's RDMA driver, or for SoftRoCE: rdma link add rxe0 type rxe netdev IF",
			"no port was verified: no RDMA device%s%s", only ? " named " : "",
			only ? only : "");
	else
		tp_add_finding(
			t, RC_SEV_ERROR, "verify",
			"bring a link up (ip link set IF up; check the cable or the switch port) and see the port states with ibv_devinfo",
			"no port was verified: no ACTIVE port on %s%s", only ? only : "the ",
			only ? "" : (devs == 1 ? "device" : "devices"));
	return -ENODEV;
}
