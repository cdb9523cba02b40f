// SPDX-License-Identifier: MIT
/* Rank 0's buffer down the group's tree in pieces of one control message
 * (rc_group_bcast_tree, libcore/group/group_gather.c, compiled in), over
 * stand-ins for the group's control messages: a queue a tree edge. Every
 * rank of a chain, a star and a binary tree ends with rank 0's bytes, each
 * edge carrying as many pieces as the length needs, none over
 * RC_GROUP_MSG_MAX; the wrong answers: a child that expects another length
 * refuses the piece (-EPROTO), one whose parent never sent waits out its
 * timeout (-ETIMEDOUT), and neither takes a byte past what it was given. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../libcore/group/group_gather.c"

#include "check.h"

#define WMAX 9
#define QMAX 512

struct piece {
	size_t len;
	unsigned char data[RC_GROUP_MSG_MAX];
};

/* queue[from][to]: what from sent to to, in order */
static struct {
	struct piece p[QMAX];
	int head, n;
} queue[WMAX][WMAX];
static size_t longest;
static int rounds;

int group_msg_round(struct rc_group *g, size_t len, double *deadline, struct rc_err *err)
{
	(void)g;
	*deadline = 0;
	rounds++;
	if (len > RC_GROUP_MSG_MAX)
		return rc_err_set(err, EINVAL, "a control message is limited to %d bytes",
				  RC_GROUP_MSG_MAX);
	return 0;
}

int group_send_msg(struct rc_group *g, int j, const void *data, size_t len, double deadline,
		   struct rc_err *err)
{
	int me = g->o.rank;
	struct piece *p;

	(void)deadline;
	if (len > RC_GROUP_MSG_MAX || queue[me][j].n >= QMAX)
		return rc_err_set(err, EMSGSIZE, "piece of %zu bytes, or queue full", len);
	p = &queue[me][j].p[(queue[me][j].head + queue[me][j].n++) % QMAX];
	p->len = len;
	memcpy(p->data, data, len);
	if (len > longest)
		longest = len;
	return 0;
}

/* As group_take_msg: the next from j, of exactly len bytes, or the wait's
 * end (nothing came: the deadline). */
int group_take_msg(struct rc_group *g, int j, void *out, size_t len, double deadline,
		   struct rc_err *err)
{
	int me = g->o.rank;
	struct piece *p;

	(void)deadline;
	if (!queue[j][me].n)
		return rc_err_set(err, ETIMEDOUT, "no word from rank %d", j);
	p = &queue[j][me].p[queue[j][me].head];
	if (p->len != len)
		return rc_err_set(err, EPROTO, "rank %d is out of step (%zu bytes, expected %zu)",
				  j, p->len, len);
	memcpy(out, p->data, len);
	queue[j][me].head = (queue[j][me].head + 1) % QMAX;
	queue[j][me].n--;
	return 0;
}

int group_sends_acked(struct rc_group *g, double deadline, bool skip_dead, struct rc_err *err)
{
	(void)g;
	(void)deadline;
	(void)skip_dead;
	(void)err;
	return 0;
}

static void reset(void)
{
	memset(queue, 0, sizeof(queue));
	longest = 0;
	rounds = 0;
}

/* Each rank in turn, parents before children (parent[i] < i in every
 * shape here): the bytes of rank 0 reach every rank. */
static void spread(const int *parent, int W, size_t len)
{
	struct rc_group g = { .parent = (int *)parent, .depth = 1 };
	unsigned char *buf[WMAX];
	size_t edges = 0;

	reset();
	g.o.world = W;
	for (int r = 0; r < W; r++) {
		struct rc_err e;

		buf[r] = malloc(len + 1);
		for (size_t i = 0; i <= len; i++)
			buf[r][i] = r == 0 ? (unsigned char)(i * 7 + 3) : 0xee;
		g.o.rank = r;
		CHECK_EQ_U64(rc_group_bcast_tree(&g, buf[r], len, &e), 0);
		/* this rank's children got every piece, in order */
		for (int k = 0; k < W; k++)
			if (k != r && parent[k] == r) {
				CHECK_EQ_U64(queue[r][k].n, group_pieces(len));
				edges++;
			}
	}
	for (int r = 1; r < W; r++) {
		CHECK(!memcmp(buf[r], buf[0], len));
		CHECK_EQ_U64(buf[r][len], 0xee); /* nothing past len */
	}
	for (int r = 0; r < W; r++)
		free(buf[r]);
	CHECK_EQ_U64(edges, (size_t)W - 1);
	CHECK(longest <= RC_GROUP_MSG_MAX);
	CHECK_EQ_U64(rounds, W);
}

/* Rank 0 sends len, rank 1 (its child) expects want: refused when they
 * differ by a piece's length, and the buffer is not written past want. */
static void mismatch(size_t len, size_t want, int expect)
{
	static const int parent[2] = { -1, 0 };
	struct rc_group g = { .parent = (int *)parent, .depth = 1 };
	unsigned char *a = calloc(len + 1, 1), *b = malloc(want + 1);
	struct rc_err e;

	reset();
	memset(b, 0xee, want + 1);
	g.o.world = 2;
	CHECK_EQ_U64(rc_group_bcast_tree(&g, a, len, &e), 0);
	g.o.rank = 1;
	CHECK(rc_group_bcast_tree(&g, b, want, &e) == expect);
	CHECK_EQ_U64(b[want], 0xee);
	free(a);
	free(b);
}

int main(void)
{
	static const size_t lens[] = { 0, 1, 8, 959, 960, 961, 1920, 2881, 100000 };
	static const int chain[WMAX] = { -1, 0, 1, 2, 3, 4, 5, 6, 7 };
	static const int star[WMAX] = { -1, 0, 0, 0, 0, 0, 0, 0, 0 };
	static const int binary[WMAX] = { -1, 0, 0, 1, 1, 2, 2, 3, 3 };
	static const int one[1] = { -1 };

	CHECK_EQ_U64(group_pieces(0), 0);
	CHECK_EQ_U64(group_pieces(1), 1);
	CHECK_EQ_U64(group_pieces(RC_GROUP_MSG_MAX), 1);
	CHECK_EQ_U64(group_pieces(RC_GROUP_MSG_MAX + 1), 2);
	CHECK_EQ_U64(group_piece_len(RC_GROUP_MSG_MAX + 1, 0), RC_GROUP_MSG_MAX);
	CHECK_EQ_U64(group_piece_len(RC_GROUP_MSG_MAX + 1, 1), 1);
	CHECK_EQ_U64(group_piece_len(2 * RC_GROUP_MSG_MAX, 1), RC_GROUP_MSG_MAX);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		spread(chain, WMAX, lens[i]);
		spread(star, WMAX, lens[i]);
		spread(binary, WMAX, lens[i]);
		spread(one, 1, lens[i]);
	}
	/* the wrong answers: a last piece of another length, a piece more
	 * (the parent silent for it), a child that expected less */
	mismatch(961, 962, -EPROTO);
	mismatch(960, 961, -ETIMEDOUT);
	mismatch(961, 960, 0); /* what is left over is the next round's to refuse */
	mismatch(1920, 1000, -EPROTO);
	{
		static const int parent[2] = { -1, 0 };
		struct rc_group g = { .parent = (int *)parent, .depth = -1 };
		unsigned char x[8] = { 0 };
		struct rc_err e;

		g.o.world = 2;
		CHECK(rc_group_bcast_tree(&g, x, sizeof(x), &e) == -EPROTO);
	}
	CHECK_DONE();
}
