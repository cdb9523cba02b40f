// SPDX-License-Identifier: MIT
/* An accepting side's QP taken to RTR and RTS by itself, with an RNR retry
 * count of its own, then accepted (rc_accept, rc_conn_opts.rnr_retry). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/conn_core.h>

/* The accepting side's own RNR retry count. The CM takes the one the peer's
 * connect request asks for (7, for ever, from a peer that means to hold
 * the replies it never reads), and RTS to RTS cannot change it; so the QP
 * goes to RTR and RTS here, as rdma_accept would take it, with that count,
 * and the accept then goes out for the QP number alone. */
static int ready(struct rdma_cm_id *child, const struct rdma_conn_param *cp, int rnr_retry)
{
	/* Bits 21-23: the kernel's RoCE attributes, which librdmacm masks off
	 * too; no user space attribute lives there. */
	const int kernel_only = 0xe00000;
	struct ibv_qp_attr a;
	int mask, rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (rdma_init_qp_attr(child, &a, &mask))
		return -errno;
	a.max_dest_rd_atomic = cp->responder_resources;
	if ((rc = ibv_modify_qp(child->qp, &a, mask & ~kernel_only)))
		return -abs(rc);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	if (rdma_init_qp_attr(child, &a, &mask))
		return -errno;
	a.max_rd_atomic = cp->initiator_depth;
	a.rnr_retry = (uint8_t)rnr_retry;
	rc = ibv_modify_qp(child->qp, &a, (mask & ~kernel_only) | IBV_QP_RNR_RETRY);
	return -abs(rc);
}

int rc_accept_own_rnr(struct rdma_cm_id *child, struct rdma_conn_param *cp, int rnr_retry)
{
	struct ibv_qp *qp = child->qp;
	int rc = ready(child, cp, rnr_retry < 7 ? rnr_retry : 7);

	if (rc)
		return rc;
	/* Ready: rdma_accept only answers, for the QP number (it moves the
	 * QP of an id that has one). */
	cp->qp_num = qp->qp_num;
	cp->srq = qp->srq != NULL;
	child->qp = NULL;
	rc = rdma_accept(child, cp) ? -errno : 0;
	child->qp = qp;
	return rc;
}

int rc_qp_remote_access(struct rc_conn *c, int access, int *was)
{
	struct ibv_qp_attr a = { 0 };
	struct ibv_qp_init_attr ia;

	if (!c || !c->qp)
		return -EINVAL;
	if (was) {
		if (ibv_query_qp(c->qp, &a, IBV_QP_ACCESS_FLAGS, &ia))
			return -EIO;
		*was = (int)a.qp_access_flags;
	}
	a.qp_access_flags = (unsigned)access;
	return ibv_modify_qp(c->qp, &a, IBV_QP_ACCESS_FLAGS) ? -EPERM : 0;
}

int rc_conn_release_access(struct rc_conn *c)
{
	int rc;

	if (!c || !c->held_access)
		return 0;
	if ((rc = rc_qp_remote_access(c, c->held_access, NULL)))
		return rc;
	c->held_access = 0;
	return 0;
}
