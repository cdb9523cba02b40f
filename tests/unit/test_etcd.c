// SPDX-License-Identifier: MIT
/* The etcd client's parts that need no etcd: etcd:// addresses, the keys
 * and the region record `register --publish` puts, and a dead server. */
#include <errno.h>
#include <string.h>

#include <rdmactl/etcd.h>

#include "check.h"

int main(void)
{
	char server[RC_HOST_MAX + 8], path[256], buf[RC_ETCD_VAL_MAX];
	struct rc_etcd_region r = { .host = "198.18.0.1", .port = "7471", .region = "kv",
				    .length = 33554432, .access = "rw" }, back;
	struct rc_etcd_kv kv;
	struct rc_etcd *e;
	struct rc_err err;

	/* base64 as the gateway sends it: strict, bounded, no NUL inside */
	CHECK(rc_etcd_b64_decode("cmRtYWN0bA==", buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "rdmactl");
	CHECK(rc_etcd_b64_decode("", buf, sizeof(buf)) == 0 && !buf[0]);
	CHECK(rc_etcd_b64_decode("cmRtYWN0bA==", buf, 8) == 0);
	CHECK(rc_etcd_b64_decode("cmRtYWN0bA==", buf, 7) == -EINVAL);
	CHECK(rc_etcd_b64_decode("cmRtYWN0bA==", buf, 0) == -EINVAL);
	CHECK(rc_etcd_b64_decode("cm*t", buf, sizeof(buf)) == -EINVAL);
	CHECK(rc_etcd_b64_decode("YQBi", buf, sizeof(buf)) == -EINVAL); /* "a\0b" */
	/* padding: only at the end, only as much as the data leaves, whole quads */
	CHECK(rc_etcd_b64_decode("YQ==", buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "a");
	CHECK(rc_etcd_b64_decode("YWI=", buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "ab");
	CHECK(rc_etcd_b64_decode("YQ==YWI=", buf, sizeof(buf)) == -EINVAL); /* data after padding */
	CHECK(rc_etcd_b64_decode("YQ=x", buf, sizeof(buf)) == -EINVAL);
	CHECK(rc_etcd_b64_decode("YQ", buf, sizeof(buf)) == -EINVAL);       /* unpadded */
	CHECK(rc_etcd_b64_decode("YWI==", buf, sizeof(buf)) == -EINVAL);    /* one = too many */
	CHECK(rc_etcd_b64_decode("YWJj===", buf, sizeof(buf)) == -EINVAL);
	CHECK(rc_etcd_b64_decode("Y===", buf, sizeof(buf)) == -EINVAL);
	CHECK(rc_etcd_b64_decode("YR==", buf, sizeof(buf)) == -EINVAL);     /* bits left over */
	CHECK(rc_etcd_b64_decode("====", buf, sizeof(buf)) == -EINVAL);
	CHECK(rc_etcd_url_parse("etcd://10.0.0.5:2379/ns/kv", server, sizeof(server), path,
				sizeof(path), &err) == 0);
	CHECK_STR(server, "10.0.0.5:2379");
	CHECK_STR(path, "ns/kv");
	CHECK(rc_etcd_url_parse("etcd://[fe80::1]:2379/ns", server, sizeof(server), path,
				sizeof(path), &err) == 0);
	CHECK_STR(server, "[fe80::1]:2379");
	CHECK_STR(path, "ns");
	/* No port, no path, another scheme, a port that is not one. */
	CHECK(rc_etcd_url_parse("etcd://10.0.0.5/ns", server, sizeof(server), path, sizeof(path),
				&err) == -EINVAL);
	CHECK(strstr(err.msg, "is not HOST:PORT") != NULL);
	CHECK(rc_etcd_url_parse("etcd://10.0.0.5:2379", server, sizeof(server), path, sizeof(path),
				&err) == -EINVAL);
	CHECK(rc_etcd_url_parse("etcd://10.0.0.5:2379/", server, sizeof(server), path, sizeof(path),
				&err) == -EINVAL);
	CHECK(rc_etcd_url_parse("http://10.0.0.5:2379/ns", server, sizeof(server), path,
				sizeof(path), &err) == -EINVAL);
	CHECK(rc_etcd_url_parse("etcd://h:99999/ns", server, sizeof(server), path, sizeof(path),
				&err) == -EINVAL);

	CHECK(rc_etcd_ns_valid("prod-kv.1_a"));
	CHECK(!rc_etcd_ns_valid(""));
	CHECK(!rc_etcd_ns_valid("a/b"));
	rc_etcd_region_key("ns", "kv", buf, sizeof(buf));
	CHECK_STR(buf, "rdmactl/ns/region/kv");
	rc_etcd_server_key("ns", "fe80::1", "7471", buf, sizeof(buf));
	CHECK_STR(buf, "rdmactl/ns/server/[fe80::1]:7471");

	CHECK(rc_etcd_region_format(&r, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "{\"access\":\"rw\",\"host\":\"198.18.0.1\",\"length\":33554432,\"port\":\"7471\",\"region\":\"kv\"}");
	CHECK(rc_etcd_region_parse(buf, &back) == 0);
	CHECK(!memcmp(&r, &back, sizeof(r)));
	CHECK(rc_etcd_region_format(&r, buf, 20) == -ENOSPC);
	CHECK(rc_etcd_region_parse("{\"host\":\"h\",\"port\":\"1\"}", &back) == -EINVAL);
	CHECK(rc_etcd_region_parse("not json", &back) == -EINVAL);

	/* Nothing listens on port 1: the error names the etcd, within the timeout. */
	CHECK(rc_etcd_open("127.0.0.1:1", 1000, &e, &err) == 0);
	CHECK(rc_etcd_get(e, "k", &kv, &err) == -ECONNREFUSED);
	CHECK(strstr(err.msg, "cannot reach etcd at 127.0.0.1:1") != NULL);
	CHECK(rc_etcd_lease(e, 5, &err) == -ECONNREFUSED);
	rc_etcd_close(e);
	CHECK_DONE();
}
