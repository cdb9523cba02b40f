/* SPDX-License-Identifier: MIT */
#ifndef RDMACTL_CONFIG_H
#define RDMACTL_CONFIG_H

#include <stdbool.h>

#include <rdmactl/err.h>
#include <rdmactl/export.h>

/* What a program tells the library about its surroundings, passed in once
 * (rc_config_set) before the calls that use it: librdmacore reads no
 * environment. rdmactl fills it from its environment (cmds/config.c, the
 * variable of each field named beside it; rdmactl(8), ENVIRONMENT). A
 * field left NULL, 0 or false is the default. The strings are the caller's
 * and must outlive the library's use of them (the environment's do). */
struct rc_config {
	const char *curl_lib; /* libcurl, opened for etcd (libcurl.so.4): RDMACTL_CURL_LIB */
	const char *cuda_lib; /* the CUDA driver (libcuda.so.1): RDMACTL_CUDA_LIB */
	const char *nvml_lib; /* NVML, read by the topology: RDMACTL_NVML_LIB */
	const char *tmpdir;   /* where a capture is unpacked (/tmp): TMPDIR */
	/* How to reach etcd: TLS with a CA, a client certificate and key, or
	 * with the system's CAs (tls "1"); a user with its password, or a
	 * file whose first line is it. */
	const char *etcd_ca;            /* RDMACTL_ETCD_CA */
	const char *etcd_cert;          /* RDMACTL_ETCD_CERT */
	const char *etcd_key;           /* RDMACTL_ETCD_KEY */
	const char *etcd_tls;           /* "0" or "1": RDMACTL_ETCD_TLS */
	const char *etcd_user;          /* RDMACTL_ETCD_USER */
	const char *etcd_password_file; /* RDMACTL_ETCD_PASSWORD_FILE */
	const char *etcd_password;      /* RDMACTL_ETCD_PASSWORD */
	/* The fabric a command runs on where it names none (--fabric):
	 * RDMACTL_FABRIC ("verbs", "auto", "ofi:PROVIDER"). */
	const char *fabric;
	/* How the program names a parameter (rdmactl/err.h) in a text libcore
	 * makes for a peer or a report. NULL: by its field. */
	rc_param_namer name_param;
	/* Test hooks. */
	long test_max_cqe;             /* a group's CQs as if a device allowed no more
					* CQEs than this (> 0): RDMACTL_TEST_MAX_CQE */
	bool test_topo_verify_corrupt; /* --verify's check made to fail:
					* RDMACTL_TEST_TOPO_VERIFY_CORRUPT */
	const char *test_ofi_hello;    /* the libfabric client's HELLO: save:FILE (kept),
				     * replay:FILE (sent instead) or spoil (a
				     * wrong proof): RDMACTL_TEST_OFI_HELLO */
	long test_ofi_replay_max;      /* a server over libfabric rotates its nonce after
				   * this many clients (1 to 4095), not 4096:
				   * RDMACTL_TEST_OFI_REPLAY_MAX */
};

/* The configuration from now on (a copy of *c; NULL: the defaults). Not
 * thread-safe: call it before the library's other calls. */
RC_EXPORT void rc_config_set(const struct rc_config *c);

#endif
