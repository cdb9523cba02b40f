// SPDX-License-Identifier: MIT
/* The etcd client's parts that need no etcd: etcd:// addresses, the keys
 * and the region record `register --publish` puts, and a dead server. */
#include <errno.h>
#include <string.h>

#include <rdmactl/etcd.h>
#include <rdmactl/etcd_core.h>

#include "check.h"

/* Keys a watch handed on, one a line, into the buffer at arg. */
static int collect(void *arg, const char *key, const char *value)
{
	char *out = arg;

	snprintf(out + strlen(out), 256 - strlen(out), "%s=%s\n", key, value);
	return 0;
}

/* A watch's stream as the gateway sends it: a message a line; puts under the
 * prefix handed on, deletes passed over, a line not finished not read, a key
 * outside the prefix, a canceled watch and a line that is not JSON refused. */
static void watch_stream(void)
{
	static const char pfx[] = "rdmactl/job/rank/";
	/* rdmactl/job/rank/00001 = "198.18.0.1:7001 2 h", rdmactl/other = "x" */
	static const char put[] =
		"{\"result\":{\"events\":[{\"kv\":{\"key\":\"cmRtYWN0bC9qb2IvcmFuay8wMDAwMQ==\",\"value\":\"MTk4LjE4LjAuMTo3MDAxIDIgaA==\"}}]}}\n";
	static const char del[] =
		"{\"result\":{\"events\":[{\"type\":\"DELETE\",\"kv\":{\"key\":\"cmRtYWN0bC9qb2IvcmFuay8wMDAwMQ==\"}}]}}\n";
	static const char out_of[] =
		"{\"result\":{\"events\":[{\"kv\":{\"key\":\"cmRtYWN0bC9vdGhlcg==\",\"value\":\"eA==\"}}]}}\n";
	static const char cancel[] =
		"{\"result\":{\"canceled\":true,\"cancel_reason\":\"compacted\"}}\n";
	char got[256] = "", text[1024];
	struct rc_err err;

	snprintf(text, sizeof(text), "{\"result\":{\"created\":true}}\n%s%s", put, del);
	CHECK(rc_etcd_watch_parse(text, strlen(text), pfx, collect, got, &err) == 0);
	CHECK_STR(got, "rdmactl/job/rank/00001=198.18.0.1:7001 2 h\n");
	got[0] = '\0';
	CHECK(rc_etcd_watch_parse(put, strlen(put) - 1, pfx, collect, got, &err) == 0);
	CHECK_STR(got, ""); /* no newline yet: not a whole message */
	CHECK(rc_etcd_watch_parse(out_of, strlen(out_of), pfx, collect, got, &err) == -EPROTO);
	CHECK(strstr(err.msg, "with key 'rdmactl/other'") != NULL);
	CHECK(rc_etcd_watch_parse(cancel, strlen(cancel), pfx, collect, got, &err) == -EPROTO);
	CHECK(strstr(err.msg, "canceled the watch of rdmactl/job/rank/: compacted") != NULL);
	CHECK(rc_etcd_watch_parse("not json\n", 9, pfx, collect, got, &err) == -EPROTO);
	CHECK(rc_etcd_watch_parse("{\"error\":{\"message\":\"auth\"}}\n", 29, pfx, collect, got,
				  &err) == -EPROTO);
	CHECK(strstr(err.msg, "ended the watch of rdmactl/job/rank/: auth") != NULL);
	CHECK_STR(got, "");
}

/* A record's MAC (rdmactl-register(8), SECURITY): a known answer from
 * `openssl dgst -sha256 -hmac`, read back through the JSON, and refused for
 * another key, lease, token or content, or none. */
static void record_macs(void)
{
	struct rc_etcd_region r = { .host = "198.18.0.1",
				    .port = "7471",
				    .region = "kv",
				    .length = 33554432,
				    .access = "rw" },
			      back;
	const char *key = "rdmactl/ns/region/kv";
	char buf[RC_ETCD_VAL_MAX];

	CHECK(rc_etcd_region_sign(&r, key, "7587", "d4t4-s3cret") == 0);
	CHECK_STR(r.mac, "16e9ca7577ac579a11fb71bef07b62fc080c2a3c14436d68f207037fd0af76ea");
	CHECK(rc_etcd_region_format(&r, buf, sizeof(buf)) == 0);
	CHECK(strstr(buf, "\"mac\":\"16e9ca75") != NULL);
	CHECK(rc_etcd_region_parse(buf, &back) == 0);
	CHECK(!memcmp(&r, &back, sizeof(r)));
	CHECK(rc_etcd_region_verify(&back, key, "7587", "d4t4-s3cret"));
	CHECK(!rc_etcd_region_verify(&back, "rdmactl/other/region/kv", "7587", "d4t4-s3cret"));
	CHECK(!rc_etcd_region_verify(&back, key, "7588", "d4t4-s3cret"));
	CHECK(!rc_etcd_region_verify(&back, key, "0", "d4t4-s3cret"));
	CHECK(!rc_etcd_region_verify(&back, key, "7587", "d4t4-s3cretX"));
	CHECK(!rc_etcd_region_verify(&back, key, "7587", NULL));
	snprintf(back.host, sizeof(back.host), "198.18.0.9");
	CHECK(!rc_etcd_region_verify(&back, key, "7587", "d4t4-s3cret"));
	back = r;
	back.mac[0] = 0;
	CHECK(!rc_etcd_region_verify(&back, key, "7587", "d4t4-s3cret"));
	/* No token: no MAC, and none in the JSON. */
	CHECK(rc_etcd_region_sign(&r, key, "7587", NULL) == 0 && !r.mac[0]);
	CHECK(rc_etcd_region_format(&r, buf, sizeof(buf)) == 0 && !strstr(buf, "mac"));
	/* No lease is "0", however it is said. */
	CHECK(rc_etcd_region_sign(&r, key, "", "t") == 0);
	CHECK(rc_etcd_region_verify(&r, key, "0", "t") && rc_etcd_region_verify(&r, key, NULL, "t"));
}

/* A range's answer: keys under the prefix handed on; one that shares all
 * but the prefix's last byte (rdmactl/job/rank_00001 against the prefix
 * rdmactl/job/rank/, which would read as rank 1) is refused, not read. */
static void range_answer(void)
{
	static const char pfx[] = "rdmactl/job/rank/";
	/* rdmactl/job/rank/00000 = "198.18.0.1:7000 2 h" */
	static const char in[] =
		"{\"kvs\":[{\"key\":\"cmRtYWN0bC9qb2IvcmFuay8wMDAwMA==\",\"value\":\"MTk4LjE4LjAuMTo3MDAwIDIgaA==\"}]}";
	/* rdmactl/job/rank_00001 = "198.18.0.1:7000 2 h" */
	static const char near[] =
		"{\"kvs\":[{\"key\":\"cmRtYWN0bC9qb2IvcmFua18wMDAwMQ==\",\"value\":\"MTk4LjE4LjAuMTo3MDAwIDIgaA==\"}]}";
	char got[256] = "";
	struct rc_err err;

	CHECK(rc_etcd_range_parse(in, strlen(in), pfx, collect, got, &err) == 0);
	CHECK_STR(got, "rdmactl/job/rank/00000=198.18.0.1:7000 2 h\n");
	got[0] = '\0';
	CHECK(rc_etcd_range_parse(near, strlen(near), pfx, collect, got, &err) == -EPROTO);
	CHECK(strstr(err.msg, "answered a range of rdmactl/job/rank/ with key "
			      "'rdmactl/job/rank_00001'") != NULL);
	CHECK_STR(got, "");
}

int main(void)
{
	char server[RC_HOST_MAX + 8], path[256], buf[RC_ETCD_VAL_MAX];
	struct rc_etcd_region r = { .host = "198.18.0.1",
				    .port = "7471",
				    .region = "kv",
				    .length = 33554432,
				    .access = "rw" },
			      back;
	struct rc_etcd_kv kv;
	struct rc_etcd *e;
	struct rc_err err;

	watch_stream();
	record_macs();
	range_answer();
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
	CHECK(rc_etcd_b64_decode("YQ", buf, sizeof(buf)) == -EINVAL);    /* unpadded */
	CHECK(rc_etcd_b64_decode("YWI==", buf, sizeof(buf)) == -EINVAL); /* one = too many */
	CHECK(rc_etcd_b64_decode("YWJj===", buf, sizeof(buf)) == -EINVAL);
	CHECK(rc_etcd_b64_decode("Y===", buf, sizeof(buf)) == -EINVAL);
	CHECK(rc_etcd_b64_decode("YR==", buf, sizeof(buf)) == -EINVAL); /* bits left over */
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
	CHECK_STR(buf,
		  "{\"access\":\"rw\",\"host\":\"198.18.0.1\",\"length\":33554432,\"port\":\"7471\",\"region\":\"kv\"}");
	CHECK(rc_etcd_region_parse(buf, &back) == 0);
	CHECK(!memcmp(&r, &back, sizeof(r)));
	CHECK(rc_etcd_region_format(&r, buf, 20) == -ENOSPC);
	CHECK(rc_etcd_region_parse("{\"host\":\"h\",\"port\":\"1\"}", &back) == -EINVAL);
	CHECK(rc_etcd_region_parse("not json", &back) == -EINVAL);
	CHECK(back.host[0] == '\0' && back.nrails == 0);

	/* Several rails: listed in the record, read back; a list of one, of a
	 * non-object or without a port is no record. */
	r.nrails = 2;
	r.rails[0] = (struct rc_etcd_rail){ .host = "198.18.0.1", .port = "7471" };
	r.rails[1] = (struct rc_etcd_rail){ .host = "198.18.2.1", .port = "7472" };
	CHECK(rc_etcd_region_format(&r, buf, sizeof(buf)) == 0);
	CHECK(strstr(buf, "\"rails\":[{\"host\":\"198.18.0.1\",\"port\":\"7471\"},"
			  "{\"host\":\"198.18.2.1\",\"port\":\"7472\"}]") != NULL);
	CHECK(rc_etcd_region_parse(buf, &back) == 0);
	CHECK(!memcmp(&r, &back, sizeof(r)));
	CHECK(rc_etcd_region_parse("{\"host\":\"h\",\"port\":\"1\",\"region\":\"kv\",\"length\":1,"
				   "\"rails\":[{\"host\":\"h\",\"port\":\"1\"}]}",
				   &back) == -EINVAL);
	CHECK(back.nrails == 0);
	CHECK(rc_etcd_region_parse("{\"host\":\"h\",\"port\":\"1\",\"region\":\"kv\",\"length\":1,"
				   "\"rails\":[{\"host\":\"h\",\"port\":\"1\"},7]}",
				   &back) == -EINVAL);
	CHECK(rc_etcd_region_parse("{\"host\":\"h\",\"port\":\"1\",\"region\":\"kv\",\"length\":1,"
				   "\"rails\":[{\"host\":\"h\",\"port\":\"1\"},{\"host\":\"g\"}]}",
				   &back) == -EINVAL);
	CHECK(rc_etcd_region_parse("{\"host\":\"h\",\"port\":\"1\",\"region\":\"kv\",\"length\":1,"
				   "\"rails\":{}}",
				   &back) == -EINVAL);
	r.nrails = 0;

	/* Nothing listens on port 1: the error names the etcd, within the timeout. */
	CHECK(rc_etcd_open("127.0.0.1:1", 1000, &e, &err) == 0);
	CHECK(rc_etcd_get(e, "k", &kv, &err) == -ECONNREFUSED);
	CHECK(strstr(err.msg, "cannot reach etcd at 127.0.0.1:1") != NULL);
	CHECK(rc_etcd_lease(e, 5, &err) == -ECONNREFUSED);
	rc_etcd_close(e);
	CHECK_DONE();
}
