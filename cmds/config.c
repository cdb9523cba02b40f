// SPDX-License-Identifier: MIT
/* What rdmactl tells libcore and what it maps back: the library's
 * configuration (rdmactl/config.h) from rdmactl's environment, the one place
 * that reads it for libcore; and a library error's parameter named as the
 * option that gives it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/config.h>

#include "cmds.h"

static const char *fabric_env;

const char *cmds_config_fabric(void)
{
	return fabric_env;
}

/* A parameter's field (len bytes) as its option: kv_heads is --kv-heads
 * (rc_config's name_param). */
static void option_of(const char *name, size_t len, char *out, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < len + 2 && o + 1 < cap; i++)
		out[o++] = i < 2 ? '-' : name[i - 2] == '_' ? '-' : name[i - 2];
	out[o] = '\0';
}

void cmds_config_load(void)
{
	const char *max_cqe = getenv("RDMACTL_TEST_MAX_CQE");
	const char *replay_max = getenv("RDMACTL_TEST_OFI_REPLAY_MAX");
	struct rc_config c = {
		.curl_lib = getenv("RDMACTL_CURL_LIB"),
		.cuda_lib = getenv("RDMACTL_CUDA_LIB"),
		.nvml_lib = getenv("RDMACTL_NVML_LIB"),
		.tmpdir = getenv("TMPDIR"),
		.etcd_ca = getenv("RDMACTL_ETCD_CA"),
		.etcd_cert = getenv("RDMACTL_ETCD_CERT"),
		.etcd_key = getenv("RDMACTL_ETCD_KEY"),
		.etcd_tls = getenv("RDMACTL_ETCD_TLS"),
		.etcd_user = getenv("RDMACTL_ETCD_USER"),
		.etcd_password_file = getenv("RDMACTL_ETCD_PASSWORD_FILE"),
		.etcd_password = getenv("RDMACTL_ETCD_PASSWORD"),
		.test_max_cqe = max_cqe ? strtol(max_cqe, NULL, 10) : 0,
		.fabric = getenv("RDMACTL_FABRIC"),
		.test_topo_verify_corrupt = getenv("RDMACTL_TEST_TOPO_VERIFY_CORRUPT") != NULL,
		.test_ofi_hello = getenv("RDMACTL_TEST_OFI_HELLO"),
		.test_ofi_replay_max = replay_max ? strtol(replay_max, NULL, 10) : 0,
		.name_param = option_of,
	};

	fabric_env = c.fabric;
	rc_config_set(&c);
}

const char *cmds_err_text(const struct rc_err *e, char *buf, size_t len)
{
	return rc_err_text(e, option_of, buf, len);
}
