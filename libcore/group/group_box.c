// SPDX-License-Identifier: MIT
/*
 * The group's mailbox: a control message that came, checked and taken
 * (FIN, ABORT) or kept in its sender's box, whichever transport brought it
 * (group_io.c over verbs, group_fab.c over libfabric).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/group_core.h>

#include "group_int.h"

int rc_group_msg_check(const void *buf, size_t byte_len, struct rc_err *err)
{
	const struct gmsg *m = buf;
	size_t hdr = offsetof(struct gmsg, data);

	if (byte_len < hdr || byte_len > sizeof(*m))
		return rc_err_set(err, EPROTO,
				  "a control message of %zu bytes (%zu to %zu expected)", byte_len,
				  hdr, sizeof(*m));
	if (m->len != byte_len - hdr)
		return rc_err_set(err, EPROTO, "a control message says %u bytes but %zu came",
				  m->len, byte_len - hdr);
	return 0;
}

int group_box_push(struct gpeer *p, int j, const struct gmsg *m, struct rc_err *err)
{
	if (p->box_n == p->box_cap) {
		int cap = p->box_cap ? 2 * p->box_cap : 4;
		struct gmsg *b;

		if (p->box_cap >= GROUP_BOX_MAX)
			return rc_err_set(err, EPROTO,
					  "rank %d is out of step: %d of its control messages wait "
					  "unread here",
					  j, p->box_n);
		if (!(b = malloc((size_t)cap * sizeof(*b))))
			return rc_err_set(err, ENOMEM, "out of memory");
		/* the ring unrolled, from its head */
		for (int i = 0; i < p->box_n; i++)
			b[i] = p->box[(p->box_head + i) % p->box_cap];
		free(p->box);
		p->box = b;
		p->box_cap = cap;
		p->box_head = 0;
	}
	p->box[(p->box_head + p->box_n) % p->box_cap] = *m;
	p->box_n++;
	return 0;
}

int group_on_msg(struct rc_group *g, int j, const struct gmsg *m, size_t len, struct rc_err *err)
{
	struct gpeer *p = &g->peers[j];
	struct rc_err e;

	if (rc_group_msg_check(m, len, &e))
		return rc_err_set(err, EPROTO, "rank %d: %s", j, e.msg);
	if (m->magic == FIN_MAGIC) {
		p->fin = true;
		return 0;
	}
	if (m->magic == ABORT_MAGIC) {
		if (!g->aborted)
			snprintf(g->abort_msg, sizeof(g->abort_msg), "rank %d gave up: %.*s", j,
				 (int)(m->len < RC_GROUP_MSG_MAX ? m->len : RC_GROUP_MSG_MAX),
				 (const char *)m->data);
		/* printed as it came: no terminal escape in it */
		for (char *c = g->abort_msg; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		g->aborted = true;
		return 0;
	}
	return group_box_push(p, j, m, err);
}
