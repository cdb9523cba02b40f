// SPDX-License-Identifier: MIT
/* The one sorting of CM events (rc_cm_sort), which the region server,
 * kvxfer's two sides and the group all take their events through: a
 * connection's state moves with its events (up once, gone with a why that
 * names the event), a request is a request only on a listener's channel
 * (its private data copied), and a listener's own events name no
 * connection. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include <rdmactl/conn_core.h>

#include "check.h"

static struct rc_cm_event sort(struct rdma_cm_id *id, enum rdma_cm_event_type t,
			       const struct rc_listener *l)
{
	struct rdma_cm_event ev = { .id = id, .event = t };
	struct rc_cm_event out;

	rc_cm_sort(&ev, l, &out);
	return out;
}

int main(void)
{
	struct rc_listener l = { 0 };
	struct rc_conn c = { 0 };
	struct rdma_cm_id cid = { .context = &c }, lid = { .context = &l }, child = { 0 };
	struct rc_cm_event e;

	/* up: conn marked, and it was not up before */
	e = sort(&cid, RDMA_CM_EVENT_ESTABLISHED, NULL);
	CHECK(e.kind == RC_CM_ESTABLISHED && e.conn == &c && !e.was_established);
	CHECK(c.established && !c.disconnected);
	/* the same event again: was_established says so (counted once) */
	e = sort(&cid, RDMA_CM_EVENT_ESTABLISHED, NULL);
	CHECK(e.was_established);
	/* gone: disconnected, with the event in its why */
	e = sort(&cid, RDMA_CM_EVENT_DISCONNECTED, NULL);
	CHECK(e.kind == RC_CM_GONE && e.conn == &c && e.was_established && c.disconnected);
	CHECK_STR(e.why, "disconnected (RDMA_CM_EVENT_DISCONNECTED)");
	/* every other way to go is a failed connection */
	const enum rdma_cm_event_type failed[] = { RDMA_CM_EVENT_CONNECT_ERROR,
						   RDMA_CM_EVENT_UNREACHABLE, RDMA_CM_EVENT_REJECTED,
						   RDMA_CM_EVENT_TIMEWAIT_EXIT };
	for (size_t i = 0; i < sizeof(failed) / sizeof(failed[0]); i++) {
		struct rc_conn f = { 0 };
		struct rdma_cm_id fid = { .context = &f };
		char want[96];

		e = sort(&fid, failed[i], NULL);
		snprintf(want, sizeof(want), "connection failed (%s)", rdma_event_str(failed[i]));
		CHECK(e.kind == RC_CM_GONE && f.disconnected && !e.was_established);
		CHECK_STR(e.why, want);
	}
	/* a removed device */
	e = sort(&cid, RDMA_CM_EVENT_DEVICE_REMOVAL, NULL);
	CHECK(e.kind == RC_CM_DEVICE_GONE);
	CHECK_STR(e.why, "device removed (RDMA_CM_EVENT_DEVICE_REMOVAL)");
	/* nothing to do: no why, no state change */
	struct rc_conn q = { 0 };
	struct rdma_cm_id qid = { .context = &q };

	e = sort(&qid, RDMA_CM_EVENT_ADDR_CHANGE, NULL);
	CHECK(e.kind == RC_CM_OTHER && !e.why[0] && !q.established && !q.disconnected);
	/* a request on a listener: its private data copied, the peer named */
	unsigned char pd[40];
	struct sockaddr_in *sa = (struct sockaddr_in *)&child.route.addr.dst_addr;

	memset(pd, 0xab, sizeof(pd));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(4791);
	inet_pton(AF_INET, "10.0.0.7", &sa->sin_addr);
	struct rdma_cm_event req = { .id = &child, .event = RDMA_CM_EVENT_CONNECT_REQUEST };

	req.param.conn.private_data = pd;
	req.param.conn.private_data_len = sizeof(pd);
	rc_cm_sort(&req, &l, &e);
	CHECK(e.kind == RC_CM_REQUEST && e.child == &child && !e.conn);
	CHECK(e.param.private_data == e.private_data && e.param.private_data_len == sizeof(pd));
	CHECK(!memcmp(e.private_data, pd, sizeof(pd)));
	CHECK_STR(e.peer, "10.0.0.7:4791");
	/* the same on a connecting side's channel is nothing asked of it */
	rc_cm_sort(&req, NULL, &e);
	CHECK(e.kind == RC_CM_OTHER && !e.child);
	/* the listener's own id names no connection */
	e = sort(&lid, RDMA_CM_EVENT_DEVICE_REMOVAL, &l);
	CHECK(e.kind == RC_CM_DEVICE_GONE && !e.conn);
	/* a refusal for the token is told apart from any other refusal */
	CHECK(rc_reject_errno("rdmactl: invalid token") == EKEYREJECTED);
	CHECK(rc_reject_errno("rdmactl: a token is required") == EKEYREJECTED);
	CHECK(rc_reject_errno("rdmactl: not authorised (a missing or wrong token)") == EKEYREJECTED);
	CHECK(rc_reject_errno("rdmactl: this rank has no group token, the connecting one has") ==
	      EKEYREJECTED);
	CHECK(rc_reject_errno("rdmactl: no admin token here (connect as a data client)") ==
	      ECONNREFUSED);
	CHECK(rc_reject_errno("rdmactl: too many connections still proving their token") ==
	      ECONNREFUSED);
	CHECK(rc_reject_errno("invalid token") == ECONNREFUSED); /* not rdmactl's */
	CHECK(rc_reject_errno(NULL) == ECONNREFUSED);
	CHECK_DONE();
}
