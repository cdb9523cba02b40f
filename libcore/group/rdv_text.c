// SPDX-License-Identifier: MIT
/* The rendezvous' text: an endpoint as one line ("ADDR:PORT HOSTNAME
 * WORLD") and back, and the ranks still missing, named briefly. Used by
 * the peers file (rdv.c), etcd (rdv_etcd.c) and the group's errors; it
 * calls neither, so the rendezvous files depend one way. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rdv_int.h"
#include <rdmactl/group_core.h>

void ranks_missing(const bool *have, int world, char *buf, size_t len)
{
	size_t off = 0;
	int shown = 0, left = 0;

	buf[0] = '\0';
	for (int i = 0; i < world; i++)
		left += !have[i];
	/* runs as "a-b": a world of thousands names its missing ranks briefly */
	for (int i = 0; i < world && left > 0;) {
		int j = i;
		char run[32];

		if (have[i]) {
			i++;
			continue;
		}
		while (j + 1 < world && !have[j + 1])
			j++;
		if (j == i)
			snprintf(run, sizeof(run), "%s%d", shown ? ", " : "", i);
		else
			snprintf(run, sizeof(run), "%s%d-%d", shown ? ", " : "", i, j);
		/* room for this run and for ", and N more" after it */
		if (off + strlen(run) + 24 >= len) {
			snprintf(buf + off, len - off, "%sand %d more", shown ? ", " : "", left);
			return;
		}
		off += (size_t)snprintf(buf + off, len - off, "%s", run);
		shown++;
		left -= j - i + 1;
		i = j + 1;
	}
}

void endpoint_format(const struct rc_endpoint *ep, int world, char *buf, size_t len)
{
	snprintf(buf, len, strchr(ep->host, ':') ? "[%s]:%s %s %d" : "%s:%s %s %d", ep->host,
		 ep->port, ep->hostname[0] ? ep->hostname : "-", world);
}

int endpoint_scan(const char *s, struct rc_endpoint *ep, int *world)
{
	char addr[RC_HOST_MAX + 16], host[64];
	int w = -1, n;

	n = sscanf(s, "%271s %63s %d", addr, host, &w);
	if (n < 1 || rc_endpoint_parse(addr, ep))
		return -EINVAL;
	if (n >= 2 && strcmp(host, "-"))
		snprintf(ep->hostname, sizeof(ep->hostname), "%s", host);
	if (world)
		*world = n >= 3 ? w : -1;
	return 0;
}
