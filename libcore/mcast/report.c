// SPDX-License-Identifier: MIT
/*
 * Multicast reports: each receiver's figures travel to the root in one
 * control message over its direct connection (past any relay that died),
 * and the root judges each: whole, and hashed as the root hashed (its
 * digest, XXH64 or SHA-256).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcast_int.h"
#include <rdmactl/group_core.h>

#define REPORT_MAGIC 0x6d637270u /* "mcrp" */
#define DIGEST_MAGIC 0x6d636467u /* "mcdg" */

struct wire_report {
	uint32_t magic;
	int32_t complete;
	int32_t nblocks;
	int32_t lost;
	uint64_t bytes;
	double first_ms;
	double last_ms;
	uint8_t digest[RC_MCAST_DIGEST_MAX]; /* its digest, as the root's options say */
	float block_ms[RC_MCAST_BLOCKS_MAX];
	char device[32];
	char why[RC_MCAST_WHY_MAX];
};
_Static_assert(sizeof(struct wire_report) <= RC_GROUP_MSG_MAX, "a report fits a message");

/* What the root sends every receiver after the reports: the size and digest
 * of what it sent, for each receiver to judge its own copy. */
struct wire_digest {
	uint32_t magic;
	uint32_t pad;
	uint64_t size;
	uint8_t digest[RC_MCAST_DIGEST_MAX];
};

/* The digest as the messages name it. */
static const char *digest_title(enum rc_mcast_digest d)
{
	return d == RC_MCAST_DIGEST_XXH64 ? "XXH64" : "SHA-256";
}

const char *rc_mcast_digest_name(enum rc_mcast_digest d)
{
	switch (d) {
	case RC_MCAST_DIGEST_SHA256:
		return "sha256";
	case RC_MCAST_DIGEST_XXH64:
		return "xxh64";
	}
	return "?";
}

int rc_mcast_digest_len(enum rc_mcast_digest d)
{
	switch (d) {
	case RC_MCAST_DIGEST_SHA256:
		return RC_SHA256_LEN;
	case RC_MCAST_DIGEST_XXH64:
		return RC_XXH64_LEN;
	}
	return -1;
}

void rc_mcast_digest_hex(enum rc_mcast_digest d, const uint8_t *digest,
			 char hex[2 * RC_MCAST_DIGEST_MAX + 1])
{
	int n = rc_mcast_digest_len(d);

	hex[0] = 0;
	for (int i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", digest[i]);
}

static void put_report(struct rc_group *g, const struct rc_mcast_recv *s, struct wire_report *w)
{
	memset(w, 0, sizeof(*w));
	w->magic = REPORT_MAGIC;
	w->complete = s->complete;
	w->nblocks = s->nblocks;
	w->lost = s->children_lost;
	w->bytes = s->bytes;
	w->first_ms = s->first_ms;
	w->last_ms = s->last_ms;
	memcpy(w->digest, s->digest, sizeof(w->digest));
	for (int b = 0; b < s->nblocks; b++)
		w->block_ms[b] = (float)s->block_ms[b];
	snprintf(w->why, sizeof(w->why), "%s", s->why);
	snprintf(w->device, sizeof(w->device), "%.31s", rc_group_dev(g));
}

static void take_report(const struct wire_report *w, struct rc_mcast_recv *r)
{
	r->reported = true;
	r->complete = w->complete;
	r->nblocks = w->nblocks < 0                     ? 0
		     : w->nblocks > RC_MCAST_BLOCKS_MAX ? RC_MCAST_BLOCKS_MAX
							: w->nblocks;
	r->children_lost = w->lost;
	r->bytes = w->bytes;
	r->first_ms = w->first_ms;
	r->last_ms = w->last_ms;
	memcpy(r->digest, w->digest, sizeof(r->digest));
	for (int b = 0; b < r->nblocks; b++)
		r->block_ms[b] = w->block_ms[b];
	snprintf(r->why, sizeof(r->why), "%.*s", RC_MCAST_WHY_MAX - 1, w->why);
	snprintf(r->device, sizeof(r->device), "%.31s", w->device);
}

/* The root: its size and digest to every live receiver (one that left is
 * not waited for). */
static int send_digest(struct rc_group *g, int root, const struct rc_mcast_result *res,
		       uint64_t size, struct rc_err *err)
{
	struct wire_digest d = { .magic = DIGEST_MAGIC, .size = size };

	memcpy(d.digest, res->digest, sizeof(d.digest));
	return rc_group_bcast(g, root, &d, sizeof(d), err);
}

/* A receiver: its own copy against the root's digest. A digest that does
 * not come leaves the copy unverified: not ok either. */
static int judge_own(struct rc_group *g, int root, enum rc_mcast_digest dg, struct rc_mcast_recv *s)
{
	struct wire_digest d;
	struct rc_err e;
	char mine[2 * RC_MCAST_DIGEST_MAX + 1], theirs[2 * RC_MCAST_DIGEST_MAX + 1];

	s->ok = false;
	if (rc_group_bcast(g, root, &d, sizeof(d), &e)) {
		if (!s->why[0])
			snprintf(s->why, sizeof(s->why), "the root's digest did not come: %.*s",
				 RC_MCAST_WHY_MAX - 40, e.msg);
		return 0;
	}
	if (d.magic != DIGEST_MAGIC) {
		if (!s->why[0])
			snprintf(s->why, sizeof(s->why),
				 "rank %d sent something else than its digest", root);
		return 0;
	}
	s->ok = s->complete && s->bytes == d.size && !memcmp(s->digest, d.digest, sizeof(d.digest));
	if (s->ok || !s->complete || s->why[0])
		return 0;
	rc_mcast_digest_hex(dg, s->digest, mine);
	rc_mcast_digest_hex(dg, d.digest, theirs);
	if (s->bytes != d.size)
		snprintf(s->why, sizeof(s->why), "%llu bytes came, the root sent %llu",
			 (unsigned long long)s->bytes, (unsigned long long)d.size);
	else
		snprintf(s->why, sizeof(s->why), "its %s %.16s... differs from the root's %.16s...",
			 digest_title(dg), mine, theirs);
	return 0;
}

int mcast_reports(struct rc_group *g, const struct rc_mcast_opts *o, struct rc_mcast_result *res,
		  uint64_t size, struct rc_err *err)
{
	int W = o->shape.world, root = o->shape.root, me = rc_group_rank(g), rc;
	struct wire_report mine, *all = NULL;
	bool *got = calloc((size_t)W, sizeof(bool));

	put_report(g, &res->self, &mine);
	if (!got || (me == root && !(all = calloc((size_t)W, sizeof(*all))))) {
		free(got);
		return rc_err_set(err, ENOMEM, "out of memory");
	}
	rc = rc_group_gather(g, root, &mine, sizeof(mine), all, got, err);
	if (rc || me != root) {
		free(all);
		free(got);
		return rc ? rc : judge_own(g, root, o->digest, &res->self);
	}
	res->ok_count = 0;
	res->seconds = 0;
	for (int j = 0; j < W; j++) {
		struct rc_mcast_recv *r = &res->recv[j];

		memset(r, 0, sizeof(*r));
		r->rank = j;
		if (j == root)
			continue;
		if (!got[j]) {
			snprintf(r->why, sizeof(r->why), "no report: %.*s", RC_MCAST_WHY_MAX - 16,
				 (const char *)&all[j]);
			continue;
		}
		if (all[j].magic != REPORT_MAGIC) {
			snprintf(r->why, sizeof(r->why), "no report: rank %d sent something else",
				 j);
			continue;
		}
		take_report(&all[j], r);
		r->ok = r->complete && r->bytes == size &&
			!memcmp(r->digest, res->digest, sizeof(r->digest));
		if (r->complete && !r->ok && !r->why[0] && r->bytes != size)
			snprintf(r->why, sizeof(r->why), "a different size than the root's");
		else if (r->complete && !r->ok && !r->why[0])
			snprintf(r->why, sizeof(r->why), "its %s differs from the root's",
				 digest_title(o->digest));
		if (r->ok) {
			res->ok_count++;
			if (r->last_ms / 1000.0 > res->seconds)
				res->seconds = r->last_ms / 1000.0;
		}
	}
	free(all);
	free(got);
	return send_digest(g, root, res, size, err);
}
