// SPDX-License-Identifier: MIT
/*
 * A host that claims to be a rank of an rdmactl group (alltoall,
 * multicast, sweep): it connects to a rank's listener as the group's
 * connect plane does (libcore/group/group_int.h, protocol 3), and prints
 * what the rank made of it.
 *
 *   group_impostor HOST PORT RANK WORLD TO [TOKEN]
 *
 * The request says "rank RANK of WORLD", whether it holds a token, and a
 * fresh nonce. Once the rank accepted, with TOKEN the impostor checks the
 * rank's proof (the exchange bound to the job GROUP_IMPOSTOR_JOB, default
 * "file", and the endpoints of RANK and TO in the peers file
 * GROUP_IMPOSTOR_PEERS) and prints "refused: rank TO (HOST:PORT) WHY" when
 * it fails, unless GROUP_IMPOSTOR_NOCHECK=1; then it sends its own proof
 * made for rank TO under TOKEN (zeros without), unless
 * GROUP_IMPOSTOR_NOPROOF=1 (which prints "up" once the rank accepted: its
 * place is taken), and waits GROUP_IMPOSTOR_HOLD seconds (default
 * 3) for the rank to drop the connection: "dropped" (exit 1) when it did,
 * "accepted" (exit 0) when the connection was still up then.
 *
 * GROUP_IMPOSTOR_SHORT=1 sends protocol 2's 12-byte request (an older
 * rdmactl). GROUP_IMPOSTOR_HALF=1 sends the request without a queue pair
 * and never answers the rank's accept (no RTU), held for
 * GROUP_IMPOSTOR_HOLD seconds: "half open" once the rank answered.
 * GROUP_IMPOSTOR_REPLAY=1 (with TOKEN) replays in the same job: the first
 * connection's request and the proof made for it are sent again on a
 * second connection ("replay: dropped" or "replay: accepted"), then the
 * proof on the first ("dropped" or "accepted").
 *
 * Prints "refused: REASON" (exit 1) when a request is refused; 2: usage.
 */
#include <endian.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdmactl/conn.h>
#include <rdmactl/ops.h>
#include <rdmactl/parse.h>
#include <rdmactl/parse_core.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/ops_core.h>

#include "../../libcore/group/group_int.h"

struct imp {
	const char *host, *port, *token;
	uint32_t rank, world, to;
	struct rc_endpoint *eps;
	struct ghello h;
	size_t hlen;
	int hold;
};

/* The next CM event within 10 s: its type, or -1. */
static int next_event(struct rdma_event_channel *ech)
{
	struct pollfd p = { .fd = ech->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int t;

	if (poll(&p, 1, 10000) != 1 || rdma_get_cm_event(ech, &ev))
		return -1;
	t = (int)ev->event;
	rdma_ack_cm_event(ev);
	return t;
}

static int half_open(const struct imp *im)
{
	struct rdma_event_channel *ech = rdma_create_event_channel();
	struct rdma_conn_param p = { .private_data = &im->h,
				     .private_data_len = (uint8_t)im->hlen,
				     .responder_resources = 1,
				     .initiator_depth = 1,
				     .retry_count = 7,
				     .rnr_retry_count = 7,
				     .qp_num = 0x1234 };
	struct rdma_cm_id *id = NULL;
	struct addrinfo *ai = NULL;
	int t = -1;

	if (ech && !rdma_create_id(ech, &id, NULL, RDMA_PS_TCP) &&
	    !getaddrinfo(im->host, im->port, NULL, &ai) &&
	    !rdma_resolve_addr(id, NULL, ai->ai_addr, 2000) &&
	    next_event(ech) == RDMA_CM_EVENT_ADDR_RESOLVED && !rdma_resolve_route(id, 2000) &&
	    next_event(ech) == RDMA_CM_EVENT_ROUTE_RESOLVED && !rdma_connect(id, &p))
		t = next_event(ech);
	if (ai)
		freeaddrinfo(ai);
	if (t != RDMA_CM_EVENT_CONNECT_RESPONSE)
		printf("refused: %s\n", t < 0 ? "no answer" : rdma_event_str(t));
	else
		printf("half open\n");
	fflush(stdout);
	if (t == RDMA_CM_EVENT_CONNECT_RESPONSE)
		sleep((unsigned)im->hold);
	if (id)
		rdma_destroy_id(id);
	if (ech)
		rdma_destroy_event_channel(ech);
	return t == RDMA_CM_EVENT_CONNECT_RESPONSE ? 0 : 1;
}

/* The peers file's endpoints (GROUP_IMPOSTOR_PEERS), world of them. */
static struct rc_endpoint *read_peers(uint32_t world)
{
	struct rc_endpoint *eps = calloc(world, sizeof(*eps));
	const char *path = getenv("GROUP_IMPOSTOR_PEERS");
	FILE *f = path ? fopen(path, "r") : NULL;
	char line[512], addr[300];
	int r;

	while (eps && f && fgets(line, sizeof(line), f)) {
		char *colon;

		if (sscanf(line, "%d %299s", &r, addr) != 2 || r < 0 || (uint32_t)r >= world ||
		    !(colon = strrchr(addr, ':')))
			continue;
		*colon = '\0';
		snprintf(eps[r].host, sizeof(eps[r].host), "%.*s", (int)sizeof(eps[r].host) - 1,
			 addr);
		snprintf(eps[r].port, sizeof(eps[r].port), "%.*s", (int)sizeof(eps[r].port) - 1,
			 colon + 1);
	}
	if (f)
		fclose(f);
	return eps;
}

/* The exchange on c, as the connecting rank reckons it. */
static void exchange(const struct imp *im, struct rc_conn *c, struct rc_auth *a)
{
	struct gjob job = { getenv("GROUP_IMPOSTOR_JOB") ?: "file",
			    im->rank < im->world && im->to < im->world ? im->eps : NULL };
	struct ibv_qp_attr qa = { 0 };
	struct ibv_qp_init_attr qi;

	ibv_query_qp(c->qp, &qa, IBV_QP_DEST_QPN, &qi);
	group_auth(a, &job, im->rank, im->to, im->world, c->qp->qp_num, qa.dest_qp_num);
	memcpy(a->cn, im->h.cn, RC_AUTH_NONCE);
}

/* Send len bytes of m on c: 0, or -1. */
static int send_msg(struct rc_conn *c, const struct gmsg *m, size_t len)
{
	static struct gmsg buf;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	int which = 0, rc;

	buf = *m;
	mr = ibv_reg_mr(c->pd, &buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		return -1;
	rc = rc_post_send(c, &buf, (uint32_t)len, mr->lkey, 1, NULL);
	if (!rc)
		rc = rc_poll_any(&c, 1, &wc, 1, 3000, &which, NULL) == 1 ? 0 : -1;
	ibv_dereg_mr(mr);
	return rc;
}

/* Whether the rank drops c within hold seconds. */
static bool dropped(struct rc_conn *c, int hold)
{
	double end = rc_now() + hold;

	while (rc_now() < end) {
		struct rdma_cm_event *ev;

		if (rc_conn_event(c, 100, &ev))
			continue;
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED) {
			rdma_ack_cm_event(ev);
			c->disconnected = true;
			return true;
		}
		rdma_ack_cm_event(ev);
	}
	return false;
}

static int connect_rank(const struct imp *im, struct rc_conn **c)
{
	struct rc_conn_opts co = { .timeout_ms = 5000 };
	struct rc_err e;

	co.private_data = &im->h;
	co.private_len = im->hlen;
	if (rc_connect(im->host, im->port, &co, c, &e)) {
		printf("refused: %s\n", e.msg);
		fflush(stdout);
		return 1;
	}
	return 0;
}

/* The rank's answer on c checked (a filled): 0, or 1 refused. */
static int check_answer(const struct imp *im, struct rc_conn *c, struct rc_auth *a)
{
	size_t len;
	const unsigned char *d = rc_conn_accept_data(c, &len);
	const char *why;

	exchange(im, c, a);
	why = group_accept_check(d, len, im->token, a);
	if (why && !getenv("GROUP_IMPOSTOR_NOCHECK")) {
		printf("refused: rank %u (%s:%s) %s\n", im->to, im->host, im->port, why);
		fflush(stdout);
		return 1;
	}
	return 0;
}

static int verdict(const char *what, bool gone)
{
	printf("%s%s\n", what, gone ? "dropped" : "accepted");
	fflush(stdout);
	return gone ? 1 : 0;
}

/* A whole exchange, and what the rank made of its proof. */
static int once(const struct imp *im)
{
	struct rc_conn *c;
	struct rc_auth a;
	struct gmsg m;
	int rc;

	if (connect_rank(im, &c))
		return 1;
	if (check_answer(im, c, &a)) {
		rc_conn_close(c);
		return 1;
	}
	if (!getenv("GROUP_IMPOSTOR_NOPROOF")) {
		group_proof_msg(&m, im->rank, im->token, &a);
		send_msg(c, &m, offsetof(struct gmsg, data) + RC_AUTH_MAC);
	} else {
		printf("up\n");
		fflush(stdout);
	}
	rc = verdict("", dropped(c, im->hold));
	rc_conn_close(c);
	return rc;
}

/* The same request and proof again on a second connection. */
static int replay(const struct imp *im)
{
	struct rc_conn *c1, *c2;
	struct rc_auth a1, a2;
	size_t len = offsetof(struct gmsg, data) + RC_AUTH_MAC;
	struct gmsg m;
	int rc;

	if (connect_rank(im, &c1))
		return 1;
	if (check_answer(im, c1, &a1) || connect_rank(im, &c2)) {
		rc_conn_close(c1);
		return 1;
	}
	check_answer(im, c2, &a2);
	group_proof_msg(&m, im->rank, im->token, &a1);
	send_msg(c2, &m, len);
	verdict("replay: ", dropped(c2, im->hold));
	send_msg(c1, &m, len);
	rc = verdict("", dropped(c1, im->hold));
	rc_conn_close(c2);
	rc_conn_close(c1);
	return rc;
}

int main(int argc, char **argv)
{
	struct imp im = { 0 };
	int rc;

	if (argc < 6 || argc > 7) {
		fprintf(stderr, "usage: group_impostor HOST PORT RANK WORLD TO [TOKEN]\n");
		return 2;
	}
	im.host = argv[1];
	im.port = argv[2];
	im.rank = (uint32_t)atoi(argv[3]);
	im.world = (uint32_t)atoi(argv[4]);
	im.to = (uint32_t)atoi(argv[5]);
	im.token = argc == 7 ? argv[6] : NULL;
	im.hold = atoi(getenv("GROUP_IMPOSTOR_HOLD") ?: "3");
	if (!(im.eps = read_peers(im.world > 0 && im.world < 65536 ? im.world : 1)))
		return 1;
	im.h = (struct ghello){ .magic = htole32(GHELLO_MAGIC),
				.rank = htole32(im.rank),
				.world = htole32(im.world),
				.flags = htole32(im.token ? GHELLO_TOKEN : 0) };
	im.hlen = sizeof(im.h);
	if (rc_auth_nonce(im.h.cn))
		return 1;
	if (getenv("GROUP_IMPOSTOR_SHORT")) {
		uint32_t v2[3] = { htole32(GROUP_MAGIC), im.h.rank, im.h.world };

		memcpy(&im.h, v2, sizeof(v2));
		im.hlen = sizeof(v2);
	}
	if (getenv("GROUP_IMPOSTOR_HALF"))
		rc = half_open(&im);
	else if (getenv("GROUP_IMPOSTOR_REPLAY") && im.token)
		rc = replay(&im);
	else
		rc = once(&im);
	free(im.eps);
	return rc;
}
