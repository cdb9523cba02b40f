// SPDX-License-Identifier: MIT
/*
 * What an etcd endpoint sends back, decoded: base64 keys and values, a
 * range answer's JSON and a watch's stream of messages (every key handed on
 * must be under the prefix, a string within RC_ETCD_KEY_MAX), and a
 * published region record (with its rails, if any). The first
 * byte picks the decoder, the rest is the input.
 */
#include <string.h>

#include <rdmactl/etcd.h>
#include <rdmactl/etcd_core.h>

#include "fuzz.h"

static const char prefix[] = "rdmactl/job/rank/";

static int each(void *arg, const char *key, const char *value)
{
	size_t *n = arg;

	FUZZ_CHECK(strlen(key) < RC_ETCD_KEY_MAX && !strncmp(key, prefix, strlen(prefix)));
	FUZZ_CHECK(strlen(value) < RC_ETCD_VAL_MAX);
	return ++*n > 1000;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, buf[64];
	struct rc_etcd_region r;
	struct rc_err e;
	size_t n = 0;

	if (size < 1)
		return 0;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (data[0] % 4) {
	case 0:
		/* decoded within the room given, NUL-terminated, no NUL inside */
		memset(buf, 0x5a, sizeof(buf));
		if (rc_etcd_b64_decode(s, buf, sizeof(buf)) == 0)
			FUZZ_CHECK(memchr(buf, '\0', sizeof(buf)) != NULL &&
				   strlen(buf) <= (strlen(s) * 3) / 4);
		break;
	case 1:
		rc_etcd_range_parse((const char *)data + 1, size - 1, prefix, each, &n, &e);
		break;
	case 2:
		/* a watch's stream: lines of messages, events under the prefix only */
		rc_etcd_watch_parse((const char *)data + 1, size - 1, prefix, each, &n, &e);
		break;
	default:
		if (rc_etcd_region_parse(s, &r) == 0) {
			FUZZ_CHECK(r.host[0] && r.port[0] && r.region[0] &&
				   memchr(r.access, '\0', sizeof(r.access)));
			/* no rails, or 2 to RC_RAILS_MAX, each with a host and a port */
			FUZZ_CHECK(r.nrails == 0 || (r.nrails >= 2 && r.nrails <= RC_RAILS_MAX));
			for (int i = 0; i < r.nrails; i++)
				FUZZ_CHECK(r.rails[i].host[0] && r.rails[i].port[0]);
		}
		break;
	}
	free(s);
	return 0;
}
