// SPDX-License-Identifier: MIT
/* The library's configuration (rdmactl/config.h) from rdmactl's
 * environment: the one place that reads it for libcore. */
#include <stdlib.h>

#include <rdmactl/config.h>

#include "cmds.h"

void cmds_config_load(void)
{
	const char *max_cqe = getenv("RDMACTL_TEST_MAX_CQE");
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
		.test_topo_verify_corrupt = getenv("RDMACTL_TEST_TOPO_VERIFY_CORRUPT") != NULL,
	};

	rc_config_set(&c);
}
