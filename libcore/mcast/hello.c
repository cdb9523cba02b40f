// SPDX-License-Identifier: MIT
/* The multicast's hello: the root's options, chunk and blob size go to
 * every rank it is connected to, and each checks that the hellos it got
 * were given the root's options, naming the first that was not, before a
 * write lands in a ring of another size; a rank given no --chunk takes the
 * root's. Then every rank's ring address and key, in a second exchange:
 * the ring is registered once its chunk is known. */
#include <errno.h>
#include <stdlib.h>

#include "mcast_int.h"

/* The first parameter a rank's hello disagrees with the root's on (its field's
 * name), or NULL. */
static const char *hello_differs(const struct hello *root, const struct hello *h)
{
	return h->algo != root->algo                 ? "algo"
	       : h->fanout != root->fanout           ? "fanout"
	       : h->root != root->root               ? "root"
	       : h->chunk && h->chunk != root->chunk ? "chunk"
	       : h->ring != root->ring               ? "ring"
	       : h->digest != root->digest           ? "digest"
						     : NULL;
}

/* This rank's hello (mine: the exchange leaves all[me] alone) and those of
 * the ranks it has a connection to, against the root's: the first that is no
 * hello, or that was given other options, fails this rank, naming that one
 * (the caller puts this rank's number first). */
static int hellos_agree(const struct mc *m, struct hello *all, const struct hello *mine,
			struct rc_err *err)
{
	int root = m->o->shape.root;

	all[m->me] = *mine;
	if (all[root].magic == HELLO_MAGIC_1)
		return rc_err_set(err, EPROTO, "the root runs an older rdmactl's multicast");
	if (all[root].magic != HELLO_MAGIC)
		return rc_err_set(err, EPROTO, "the root said no multicast hello");
	for (int i = 0; i < m->o->shape.world; i++) {
		const char *what;

		if (i != m->me && !rc_group_conn(m->g, i))
			continue; /* no connection, no hello */
		if (all[i].magic == HELLO_MAGIC_1)
			return rc_err_set(err, EPROTO, "rank %d runs an older rdmactl's multicast",
					  i);
		if (all[i].magic != HELLO_MAGIC)
			return rc_err_set(err, EPROTO, "rank %d said no multicast hello", i);
		if (!(what = hello_differs(&all[root], &all[i])))
			continue;
		if (i == m->me)
			return rc_err_param(err, what, EINVAL, "%s differs from the root's", what);
		return rc_err_param(err, what, EINVAL, "rank %d's %s differs from the root's", i,
				    what);
	}
	return 0;
}

/* The root's options, chunk and blob size, over every connection. */
int mcast_say_hello(struct mc *m, struct rc_err *err)
{
	const struct rc_mcast_opts *o = m->o;
	int W = o->shape.world, root = o->shape.root, rc;
	uint64_t max_ring = o->max_ring ? o->max_ring : RC_MCAST_MAX_RING_DEFAULT;
	struct hello mine = { HELLO_MAGIC,
			      (uint32_t)o->shape.algo,
			      (uint32_t)o->shape.fanout,
			      (uint32_t)root,
			      m->chunk,
			      (uint32_t)o->ring,
			      o->size,
			      0,
			      0,
			      (uint32_t)o->digest };
	struct hello *all = calloc((size_t)W, sizeof(*all)), *r;

	if (!all)
		return rc_err_set(err, ENOMEM, "out of memory");
	if ((rc = rc_group_exchange(m->g, &mine, sizeof(mine), all, err)))
		goto out;
	r = &all[root];
	/* Each rank checks the hellos it got, so that the root (connected to
	 * every rank) stops the group here, naming the rank that differs, before
	 * a write lands in a ring of another size. */
	if ((rc = hellos_agree(m, all, &mine, err)))
		goto out;
	if (m->me != root) {
		m->size = r->size;
		m->chunk = r->chunk;
	}
	if (!m->chunk || m->chunk > RC_MCAST_CHUNK_LIMIT)
		rc = rc_err_set(err, EPROTO, "the root's hello gave chunks of %u bytes (1 to %u)",
				m->chunk, RC_MCAST_CHUNK_LIMIT);
	else if ((uint64_t)m->R * m->chunk > RC_MCAST_RING_LIMIT)
		rc = rc_err_set(err, EPROTO,
				"rings of %d chunks of the root's %u bytes are over 64G", m->R,
				m->chunk);
	else if (m->me != root && (uint64_t)m->R * m->chunk > max_ring)
		rc = rc_err_opt(err, E2BIG,
				"the root asks for a ring of %d chunks of %u bytes (%llu bytes), "
				"more than this rank's {max_ring} of %llu: refused",
				m->R, m->chunk, (unsigned long long)m->R * m->chunk,
				(unsigned long long)max_ring);
out:
	free(all);
	return rc;
}

/* Rank r's ring from the second exchange, or an error naming it. */
static int ring_of(const struct ring_hello *all, int r, uint64_t *addr, uint32_t *rkey,
		   struct rc_err *err)
{
	if (all[r].magic != HELLO_MAGIC)
		return rc_err_set(err, EPROTO, "rank %d said no ring", r);
	*addr = all[r].addr;
	*rkey = all[r].rkey;
	return 0;
}

/* Everyone's ring, over every connection: the parent's and the children's
 * are kept. */
int mcast_say_ring(struct mc *m, struct rc_err *err)
{
	struct ring_hello mine = { m->ring_addr, m->mr->rkey, HELLO_MAGIC };
	struct ring_hello *all = calloc((size_t)m->o->shape.world, sizeof(*all));
	int rc;

	if (!all)
		return rc_err_set(err, ENOMEM, "out of memory");
	rc = rc_group_exchange(m->g, &mine, sizeof(mine), all, err);
	if (!rc && m->parent >= 0)
		rc = ring_of(all, m->parent, &m->paddr, &m->prkey, err);
	for (int i = 0; !rc && i < m->nkids; i++)
		rc = ring_of(all, m->kids[i].rank, &m->kids[i].addr, &m->kids[i].rkey, err);
	free(all);
	return rc;
}
