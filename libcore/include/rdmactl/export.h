/* SPDX-License-Identifier: MIT */
/* librdmacore is built with hidden visibility: what the public API offers is
 * marked RC_EXPORT, everything else stays inside the library. */
#ifndef RDMACTL_EXPORT_H
#define RDMACTL_EXPORT_H

#define RC_EXPORT __attribute__((visibility("default")))

#endif
