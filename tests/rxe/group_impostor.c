// SPDX-License-Identifier: MIT
/*
 * A host that claims to be a rank of an rdmactl group (alltoall,
 * multicast): it connects to a rank's listener with the group's connect
 * request, and prints whether the rank accepted it.
 *
 *   group_impostor HOST PORT RANK WORLD TO [TOKEN]
 *
 * The request says "rank RANK of WORLD"; with TOKEN it carries a proof of
 * TOKEN made for rank TO (the wire layout of libcore/group/group_int.h: the
 * group magic, rank, world, a 16-byte nonce (the wall clock's seconds, then
 * random bytes), 24 bytes of HMAC-SHA256 under the token of "rdmactl group
 * join v2", NUL, magic, rank, world, TO, the try and the nonce, then the
 * try, each number 32 bits little-endian). The try is GROUP_IMPOSTOR_TRY
 * (default 1). Without TOKEN the proof is zeros; GROUP_IMPOSTOR_SHORT=1
 * sends only the first 12 bytes (an rdmactl without group tokens).
 * GROUP_IMPOSTOR_AGE=S dates the nonce S seconds back; GROUP_IMPOSTOR_TWICE=1
 * sends the same request again once the first was answered (a replay).
 * GROUP_IMPOSTOR_HALF=1 sends the request without a queue pair and never
 * answers the rank's accept (no RTU): a connection the rank accepted that
 * never comes up, held for GROUP_IMPOSTOR_HOLD seconds; it prints
 * "half open" once the rank answered.
 * Once accepted it stays connected for GROUP_IMPOSTOR_HOLD seconds
 * (default 0).
 *
 * Prints "accepted" (exit 0) or "refused: REASON" (exit 1) for each
 * request, the status the last one's; 2: usage.
 */
#include <endian.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdmactl/conn.h>
#include <rdmactl/parse.h>
#include <rdmactl/parse_core.h>
#include <rdmactl/conn_core.h>

#define GROUP_MAGIC 0x72646d67u

struct hello {
	uint32_t magic, rank, world;
	uint8_t nonce[16];
	uint8_t proof[24];
	uint32_t attempt;
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

static int half_open(const char *host, const char *port, const struct hello *h)
{
	struct rdma_event_channel *ech = rdma_create_event_channel();
	struct rdma_conn_param p = { .private_data = h,
				     .private_data_len = sizeof(*h),
				     .responder_resources = 1,
				     .initiator_depth = 1,
				     .retry_count = 7,
				     .rnr_retry_count = 7,
				     .qp_num = 0x1234 };
	struct rdma_cm_id *id = NULL;
	struct addrinfo *ai = NULL;
	int t = -1;

	if (ech && !rdma_create_id(ech, &id, NULL, RDMA_PS_TCP) &&
	    !getaddrinfo(host, port, NULL, &ai) && !rdma_resolve_addr(id, NULL, ai->ai_addr, 2000) &&
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
	if (t == RDMA_CM_EVENT_CONNECT_RESPONSE && getenv("GROUP_IMPOSTOR_HOLD"))
		sleep((unsigned)atoi(getenv("GROUP_IMPOSTOR_HOLD")));
	if (id)
		rdma_destroy_id(id);
	if (ech)
		rdma_destroy_event_channel(ech);
	return t == RDMA_CM_EVENT_CONNECT_RESPONSE ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct hello h = { 0 };
	struct rc_conn_opts co = { .timeout_ms = 5000 };
	struct rc_conn *c = NULL;
	struct rc_err e;
	uint32_t to, t;
	int tries = getenv("GROUP_IMPOSTOR_TWICE") ? 2 : 1;

	if (argc < 6 || argc > 7) {
		fprintf(stderr, "usage: group_impostor HOST PORT RANK WORLD TO [TOKEN]\n");
		return 2;
	}
	h.magic = htole32(GROUP_MAGIC);
	h.rank = htole32((uint32_t)atoi(argv[3]));
	h.world = htole32((uint32_t)atoi(argv[4]));
	to = (uint32_t)atoi(argv[5]);
	t = htole32((uint32_t)(time(NULL) - atoi(getenv("GROUP_IMPOSTOR_AGE") ?: "0")));
	memcpy(h.nonce, &t, sizeof(t));
	if (rc_random_bytes(h.nonce + sizeof(t), sizeof(h.nonce) - sizeof(t)))
		return 1;
	h.attempt = htole32((uint32_t)atoi(getenv("GROUP_IMPOSTOR_TRY") ?: "1"));
	if (argc == 7) {
		uint32_t w[5] = { h.magic, h.rank, h.world, htole32(to), h.attempt };
		unsigned char msg[sizeof(w) + sizeof(h.nonce)];

		memcpy(msg, w, sizeof(w));
		memcpy(msg + sizeof(w), h.nonce, sizeof(h.nonce));
		rc_token_proof(argv[6], "rdmactl group join v2", msg, sizeof(msg), h.proof,
			       sizeof(h.proof));
	}
	if (getenv("GROUP_IMPOSTOR_HALF"))
		return half_open(argv[1], argv[2], &h);
	co.private_data = &h;
	co.private_len = getenv("GROUP_IMPOSTOR_SHORT") ? 12 : sizeof(h);
	for (int i = 0; i < tries; i++) {
		if (rc_connect(argv[1], argv[2], &co, &c, &e)) {
			printf("refused: %s\n", e.msg);
			fflush(stdout);
			if (i + 1 == tries)
				return 1;
			continue;
		}
		printf("accepted\n");
		fflush(stdout);
		if (getenv("GROUP_IMPOSTOR_HOLD"))
			sleep((unsigned)atoi(getenv("GROUP_IMPOSTOR_HOLD")));
		rc_conn_close(c);
	}
	return 0;
}
