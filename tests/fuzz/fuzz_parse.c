// SPDX-License-Identifier: MIT
/*
 * The parsers that read what a user, a batch file or a script typed: sizes,
 * integers, targets, region names, tokens, memory kinds and access modes,
 * kvxfer's dtype and layout names. The first byte picks the parser, the rest
 * is the string. What parses must satisfy the parser's contract.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/kv.h>
#include <rdmactl/mem.h>
#include <rdmactl/parse.h>
#include <rdmactl/mem_core.h>
#include <rdmactl/kv_core.h>

#include "fuzz.h"

static void check_target(const char *s)
{
	struct rc_target t;
	uint64_t port;

	if (rc_parse_target(s, &t) != 0)
		return;
	FUZZ_CHECK(memchr(t.host, '\0', sizeof(t.host)) && t.host[0] != '\0');
	FUZZ_CHECK(memchr(t.port, '\0', sizeof(t.port)));
	FUZZ_CHECK(rc_parse_u64(t.port, &port) == 0 && port >= 1 && port <= 65535);
	FUZZ_CHECK(t.region[0] == '\0' || rc_region_name_valid(t.region));
}

static void check_numbers(const char *s)
{
	char again[32];
	uint64_t u, v;
	int64_t i, j;

	if (rc_parse_u64(s, &u) == 0) {
		snprintf(again, sizeof(again), "%" PRIu64, u);
		FUZZ_CHECK(rc_parse_u64(again, &v) == 0 && u == v);
	}
	if (rc_parse_i64(s, &i) == 0) {
		snprintf(again, sizeof(again), "%" PRId64, i);
		FUZZ_CHECK(rc_parse_i64(again, &j) == 0 && i == j);
	}
	if (rc_parse_size(s, &u) == 0) {
		/* A plain byte count of the same value parses to the same. */
		snprintf(again, sizeof(again), "%" PRIu64, u);
		FUZZ_CHECK(rc_parse_size(again, &v) == 0 && u == v);
		rc_format_size(u, again, sizeof(again));
		FUZZ_CHECK(memchr(again, '\0', sizeof(again)) != NULL);
	}
}

static void check_names(const char *s)
{
	enum rc_mem_kind k;
	enum rc_access a;
	enum kv_dtype d;
	enum kv_layout l;
	enum kv_page_layout pl;

	if (rc_access_parse(s, &a) == 0) {
		FUZZ_CHECK(a <= RC_ACCESS_ATOMIC);
		FUZZ_CHECK(strcmp(rc_access_name(a), s) == 0);
	}
	(void)rc_mem_kind_parse(s, &k);
	if (kv_dtype_parse(s, &d) == 0)
		FUZZ_CHECK(kv_dtype_size(d) >= 1 && kv_dtype_size(d) <= 4);
	if (kv_layout_parse(s, &l) == 0)
		FUZZ_CHECK(kv_layout_name(l) != NULL);
	if (kv_page_layout_parse(s, &pl) == 0)
		FUZZ_CHECK(kv_page_layout_name(pl) != NULL);
	if (rc_token_valid(s))
		FUZZ_CHECK(strlen(s) >= 1 && strlen(s) <= RC_TOKEN_MAX);
	if (rc_region_name_valid(s))
		FUZZ_CHECK(strlen(s) >= 1 && strlen(s) < RC_NAME_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (size < 1)
		return 0;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (data[0] % 3) {
	case 0:
		check_target(s);
		break;
	case 1:
		check_numbers(s);
		break;
	default:
		check_names(s);
		break;
	}
	free(s);
	return 0;
}
