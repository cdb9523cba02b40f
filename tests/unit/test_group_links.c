// SPDX-License-Identifier: MIT
/* Why a pair of a partial group could not connect (rc_link_classify): the
 * errors rc_connect and the group's connect give, each in its class, and
 * a wrapped message classed by the try it wraps; the wrong answer (an error
 * of one class taken for another) is checked for every class. */
#include <errno.h>

#include <rdmactl/group.h>
#include <rdmactl/conn_core.h>
#include <rdmactl/group_core.h>

#include "check.h"

struct example {
	int code;
	const char *msg;
	enum rc_link want;
};

static const struct example examples[] = {
	/* refused: a reject with the peer's reason, nobody listening */
	{ ECONNREFUSED,
	  "connection to 198.18.1.4:26403 rejected: rdmactl: not authorised (this group needs a token)",
	  RC_LINK_REFUSED },
	{ ECONNREFUSED, "connection to 198.18.1.4:26403 refused: nothing listens on that port",
	  RC_LINK_REFUSED },
	{ ETIMEDOUT,
	  "rank 3 (198.18.1.4:26403) never answered within 4000 ms: connection to 198.18.1.4:26403 rejected (reason 28)",
	  RC_LINK_REFUSED },
	/* gid: no RDMA device (no GID) behind the address */
	{ EHOSTUNREACH,
	  "cannot resolve 198.18.1.9:1 to a local RDMA device (status -19: No such device)",
	  RC_LINK_GID },
	{ EADDRNOTAVAIL, "no usable GID for 198.18.1.3 on rxe0 port 1", RC_LINK_GID },
	/* route: resolution, no route, another device */
	{ EHOSTUNREACH, "no route to 198.18.1.4:26403 (status -113)", RC_LINK_ROUTE },
	{ ETIMEDOUT, "resolving 198.18.9.9:26403: no answer within 4000 ms", RC_LINK_ROUTE },
	{ EINVAL,
	  "198.18.1.4:26403 is reached through device rxe_b, not rxe_a (bind a local address of rxe_a)",
	  RC_LINK_ROUTE },
	{ EHOSTUNREACH, "198.18.1.4:26403 is unreachable (status -113)", RC_LINK_ROUTE },
	/* timeout: no answer to the connect request */
	{ ETIMEDOUT, "connecting to 198.18.1.4:26403: no answer within 3900 ms", RC_LINK_TIMEOUT },
	{ EHOSTUNREACH, "198.18.1.4:26403 is unreachable (status -110)", RC_LINK_TIMEOUT },
	{ ETIMEDOUT, "rank 1 never connected to rank 3 within 4000 ms", RC_LINK_TIMEOUT },
	{ ETIMEDOUT, "", RC_LINK_TIMEOUT },
	/* anything else */
	{ ENOMEM, "out of memory", RC_LINK_OTHER },
	{ EPROTO, "connecting to 198.18.1.4:26403: unexpected event RDMA_CM_EVENT_DEVICE_REMOVAL",
	  RC_LINK_OTHER },
};

int main(void)
{
	int n = (int)(sizeof(examples) / sizeof(examples[0]));
	int seen[RC_LINK_OTHER + 1] = { 0 };

	for (int i = 0; i < n; i++) {
		enum rc_link got = rc_link_classify(examples[i].code, examples[i].msg);

		if (got != examples[i].want)
			fprintf(stderr, "'%s' (%d) is %s, expected %s\n", examples[i].msg,
				examples[i].code, rc_link_name(got), rc_link_name(examples[i].want));
		CHECK(got == examples[i].want);
		seen[got]++;
	}
	/* every class is reached, and none is taken for another: each class's
	 * examples are all classed so, so a class that swallowed another's
	 * would show more than it has */
	for (int k = RC_LINK_ROUTE; k <= RC_LINK_OTHER; k++) {
		int want = 0;

		for (int i = 0; i < n; i++)
			want += (int)examples[i].want == k;
		CHECK(want > 0);
		CHECK(seen[k] == want);
	}
	CHECK(seen[RC_LINK_UP] == 0);
	CHECK_STR(rc_link_name(RC_LINK_UP), "up");
	CHECK_STR(rc_link_name(RC_LINK_ROUTE), "route");
	CHECK_STR(rc_link_name(RC_LINK_GID), "gid");
	CHECK_STR(rc_link_name(RC_LINK_TIMEOUT), "timeout");
	CHECK_STR(rc_link_name(RC_LINK_REFUSED), "refused");
	CHECK_STR(rc_link_name(RC_LINK_OTHER), "other");
	CHECK_STR(rc_link_name((enum rc_link)42), "other");
	CHECK(rc_link_classify(0, NULL) == RC_LINK_OTHER);
	CHECK_DONE();
}
