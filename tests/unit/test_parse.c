// SPDX-License-Identifier: MIT
/* Sizes, integers, targets, names and tokens. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <rdmactl/parse.h>
#include <rdmactl/parse_core.h>

#include "check.h"

static void sizes(void)
{
	uint64_t v = 0;

	CHECK(rc_parse_size("4096", &v) == 0);
	CHECK_EQ_U64(v, 4096);
	CHECK(rc_parse_size("4K", &v) == 0);
	CHECK_EQ_U64(v, 4096);
	CHECK(rc_parse_size("4k", &v) == 0);
	CHECK_EQ_U64(v, 4096);
	CHECK(rc_parse_size("1M", &v) == 0);
	CHECK_EQ_U64(v, 1 << 20);
	CHECK(rc_parse_size("64KiB", &v) == 0);
	CHECK_EQ_U64(v, 65536);
	CHECK(rc_parse_size("1G", &v) == 0);
	CHECK_EQ_U64(v, 1ULL << 30);
	CHECK(rc_parse_size("2T", &v) == 0);
	CHECK_EQ_U64(v, 2ULL << 40);
	CHECK(rc_parse_size("0", &v) == 0);
	CHECK_EQ_U64(v, 0);
	CHECK(rc_parse_size("", &v) == -EINVAL);
	CHECK(rc_parse_size("K", &v) == -EINVAL);
	CHECK(rc_parse_size("-1", &v) == -EINVAL);
	CHECK(rc_parse_size("1.5M", &v) == -EINVAL);
	CHECK(rc_parse_size("1X", &v) == -EINVAL);
	CHECK(rc_parse_size("1MM", &v) == -EINVAL);
	CHECK(rc_parse_size(" 1M", &v) == -EINVAL);
	CHECK(rc_parse_size("1M ", &v) == -EINVAL);
	CHECK(rc_parse_size("18446744073709551615", &v) == 0);
	CHECK_EQ_U64(v, UINT64_MAX);
	CHECK(rc_parse_size("18446744073709551616", &v) == -ERANGE);
	CHECK(rc_parse_size("16777216T", &v) == -ERANGE);
	CHECK(rc_parse_size("16777215T", &v) == 0);
}

static void integers(void)
{
	uint64_t u;
	int64_t i;

	CHECK(rc_parse_u64("0x10", &u) == 0);
	CHECK_EQ_U64(u, 16);
	CHECK(rc_parse_u64("0x", &u) == -EINVAL);
	CHECK(rc_parse_u64("12a", &u) == -EINVAL);
	CHECK(rc_parse_u64("0xffffffffffffffff", &u) == 0);
	CHECK_EQ_U64(u, UINT64_MAX);
	CHECK(rc_parse_u64("0x1ffffffffffffffff", &u) == -ERANGE);
	CHECK(rc_parse_i64("-1", &i) == 0);
	CHECK(i == -1);
	CHECK(rc_parse_i64("-9223372036854775808", &i) == 0);
	CHECK(i == INT64_MIN);
	CHECK(rc_parse_i64("-9223372036854775809", &i) == -ERANGE);
	CHECK(rc_parse_i64("--1", &i) == -EINVAL);
}

static void targets(void)
{
	struct rc_target t;

	CHECK(rc_parse_target("198.18.0.1:7000/kv", &t) == 0);
	CHECK_STR(t.host, "198.18.0.1");
	CHECK_STR(t.port, "7000");
	CHECK_STR(t.region, "kv");
	CHECK(rc_parse_target("host/kv0", &t) == 0);
	CHECK_STR(t.host, "host");
	CHECK_STR(t.port, RC_DEFAULT_PORT);
	CHECK_STR(t.region, "kv0");
	CHECK(rc_parse_target("host:1", &t) == 0);
	CHECK_STR(t.region, "");
	CHECK(rc_parse_target("[fe80::1]:7471/a.b-c_d", &t) == 0);
	CHECK_STR(t.host, "fe80::1");
	CHECK_STR(t.port, "7471");
	CHECK_STR(t.region, "a.b-c_d");
	CHECK(rc_parse_target("[::1]/r", &t) == 0);
	CHECK_STR(t.host, "::1");
	CHECK(rc_parse_target("", &t) == -EINVAL);
	CHECK(rc_parse_target(":7471/r", &t) == -EINVAL);
	CHECK(rc_parse_target("h:/r", &t) == -EINVAL);
	CHECK(rc_parse_target("h:0/r", &t) == -EINVAL);
	CHECK(rc_parse_target("h:65536/r", &t) == -EINVAL);
	CHECK(rc_parse_target("h:x/r", &t) == -EINVAL);
	CHECK(rc_parse_target("h:1/", &t) == -EINVAL);
	CHECK(rc_parse_target("h:1/a/b", &t) == -EINVAL);
	CHECK(rc_parse_target("h:1/a b", &t) == -EINVAL);
	CHECK(rc_parse_target("[::1:7471/r", &t) == -EINVAL);
	CHECK(rc_parse_target("h:1/0123456789012345678901234567890", &t) == 0);
	CHECK(rc_parse_target("h:1/01234567890123456789012345678901", &t) == -EINVAL);
}

static void names_tokens(void)
{
	CHECK(rc_region_name_valid("kv-cache.0_1"));
	CHECK(!rc_region_name_valid(""));
	CHECK(!rc_region_name_valid("a/b"));
	CHECK(rc_token_valid("s3cret"));
	CHECK(!rc_token_valid(""));
	CHECK(!rc_token_valid("has space"));
	CHECK(rc_token_valid("12345678901234567890123456789012345678901234567890123456"));
	CHECK(!rc_token_valid("123456789012345678901234567890123456789012345678901234567"));
}

/* want zero-padded as the server keeps it; got as a peer's private data. */
static bool teq(const char *want, const void *got, size_t len)
{
	char w[RC_TOKEN_MAX + 1] = { 0 };

	memcpy(w, want, strlen(want));
	return rc_token_equal(w, got, len);
}

static void token_compare(void)
{
	unsigned char pd[96] = { 0 };
	const char *max = "12345678901234567890123456789012345678901234567890123456";

	/* A token alone, as sent, and zero-padded as the CM delivers it. */
	CHECK(teq("s3cret", "s3cret", 6));
	memcpy(pd, "s3cret", 6);
	CHECK(teq("s3cret", pd, 56));
	CHECK(teq("s3cret", pd, sizeof(pd)));
	/* Differing in the first or the last byte. */
	CHECK(!teq("s3cret", "x3cret", 6));
	CHECK(!teq("s3cret", "s3creT", 6));
	/* A prefix of the token, and the token as a prefix. */
	CHECK(!teq("s3cret", "s3cre", 5));
	{
		const char shortpad[6] = "s3c"; /* "s3c" and zeros, 6 bytes */

		CHECK(!teq("s3cret", shortpad, sizeof(shortpad)));
	}
	CHECK(!teq("s3cret", "s3crets", 7));
	CHECK(!teq("s3c", "s3cret", 6));
	/* A non-zero byte anywhere past the token, within or past 57 bytes. */
	pd[40] = 1;
	CHECK(!teq("s3cret", pd, 56));
	pd[40] = 0;
	pd[90] = 1;
	CHECK(!teq("s3cret", pd, sizeof(pd)));
	CHECK(teq("s3cret", pd, 56));
	pd[90] = 0;
	/* Nothing sent. */
	CHECK(!teq("s3cret", NULL, 0));
	CHECK(!teq("s3cret", pd + 60, 20));
	/* The longest token fills the CM's 56 bytes with no terminator. */
	CHECK(teq(max, max, 56));
	CHECK(!teq(max, max, 55));
	/* No token configured: anything is accepted. */
	CHECK(teq("", "anything", 8));
	CHECK(teq("", NULL, 0));
}

/* The proof of a token: HMAC-SHA256 under the token, so an extended token,
 * a prefix or another label give another proof. */
static void token_proof(void)
{
	unsigned char a[24], b[24], z[24] = { 0 };
	const char msg[] = "rank 1 of 3";

	rc_token_proof("s3cret", "rdmactl-test", msg, sizeof(msg), a, sizeof(a));
	rc_token_proof("s3cret", "rdmactl-test", msg, sizeof(msg), b, sizeof(b));
	CHECK(rc_bytes_equal(a, b, sizeof(a)));
	rc_token_proof("s3cretX", "rdmactl-test", msg, sizeof(msg), b, sizeof(b));
	CHECK(!rc_bytes_equal(a, b, sizeof(a)));
	rc_token_proof("s3cre", "rdmactl-test", msg, sizeof(msg), b, sizeof(b));
	CHECK(!rc_bytes_equal(a, b, sizeof(a)));
	rc_token_proof("s3cret", "rdmactl-tesT", msg, sizeof(msg), b, sizeof(b));
	CHECK(!rc_bytes_equal(a, b, sizeof(a)));
	rc_token_proof("s3cret", "rdmactl-test", msg, sizeof(msg) - 1, b, sizeof(b));
	CHECK(!rc_bytes_equal(a, b, sizeof(a)));
	CHECK(!rc_bytes_equal(a, z, sizeof(a)));
	rc_token_proof(NULL, "rdmactl-test", msg, sizeof(msg), b, sizeof(b));
	CHECK(rc_bytes_equal(b, z, sizeof(b)));
	CHECK(rc_random_bytes(a, sizeof(a)) == 0);
	CHECK(rc_random_bytes(b, sizeof(b)) == 0);
	CHECK(!rc_bytes_equal(a, b, sizeof(a)));
}

static void format(void)
{
	char b[32];

	rc_format_size(512, b, sizeof(b));
	CHECK_STR(b, "512B");
	rc_format_size(65536, b, sizeof(b));
	CHECK_STR(b, "64KiB");
	rc_format_size(3 << 19, b, sizeof(b));
	CHECK_STR(b, "1.5MiB");
}

int main(void)
{
	sizes();
	integers();
	targets();
	names_tokens();
	token_compare();
	token_proof();
	format();
	CHECK_DONE();
}
