/* SPDX-License-Identifier: MIT */
/*
 * librdmacore's whole public API in one include: connections and memory
 * (verbs), served regions and their clients, kv transfer, groups and their
 * collectives (alltoall, multicast), live migration, the fabric sweep, the
 * topology probe, and the base (errors, parsing, sha256, etcd). Build with
 * `pkg-config --cflags --libs rdmacore`.
 */
#ifndef RDMACTL_RDMACTL_H
#define RDMACTL_RDMACTL_H

#include <rdmactl/a2a.h>
#include <rdmactl/client.h>
#include <rdmactl/config.h>
#include <rdmactl/conn.h>
#include <rdmactl/ctrl.h>
#include <rdmactl/dev.h>
#include <rdmactl/err.h>
#include <rdmactl/etcd.h>
#include <rdmactl/export.h>
#include <rdmactl/fabric.h>
#include <rdmactl/group.h>
#include <rdmactl/kv.h>
#include <rdmactl/mcast.h>
#include <rdmactl/mem.h>
#include <rdmactl/migrate.h>
#include <rdmactl/ops.h>
#include <rdmactl/parse.h>
#include <rdmactl/server.h>
#include <rdmactl/sha256.h>
#include <rdmactl/sweep.h>
#include <rdmactl/preflight.h>
#include <rdmactl/topo.h>
#include <rdmactl/version.h>

#endif
