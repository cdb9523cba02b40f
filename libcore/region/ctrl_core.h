/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/ctrl.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_CTRL_CORE_H
#define RDMACTL_CTRL_CORE_H

#include <rdmactl/ctrl.h>

int rc_ctrl_encode_hdr(void *buf, size_t cap, uint16_t type, uint32_t len, uint32_t seq);
int rc_ctrl_decode_hdr(const void *buf, size_t len, struct rc_ctrl_hdr *h);
/* Encode a LIST_RESP message (header included). Returns its length or -ENOSPC. */
int rc_ctrl_encode_list(void *buf, size_t cap, uint32_t seq, const struct rc_region_desc *r, int n);
/* Decode a whole LIST_RESP message. Returns the region count or -EBADMSG. */
int rc_ctrl_decode_list(const void *buf, size_t len, struct rc_region_desc *r, int max);

/* Encoders return the message length, or -ENOSPC past *_MAX_EXT extents;
 * decoders 0 or -EBADMSG, filling r->ext (room for max extents). */
int rc_ctrl_encode_pull(void *buf, size_t cap, uint32_t seq, const struct rc_pull_req *r);
int rc_ctrl_decode_pull(const void *buf, size_t len, struct rc_pull_req *r, uint32_t max);
int rc_ctrl_encode_hash(void *buf, size_t cap, uint32_t seq, const struct rc_hash_req *r);
int rc_ctrl_decode_hash(const void *buf, size_t len, struct rc_hash_req *r, uint32_t max);
int rc_ctrl_encode_mig_resp(void *buf, size_t cap, uint32_t seq, const struct rc_mig_resp *r);
int rc_ctrl_decode_mig_resp(const void *buf, size_t len, struct rc_mig_resp *r);
int rc_ctrl_encode_mig_cmd(void *buf, size_t cap, uint32_t seq, const struct rc_mig_cmd *c);
int rc_ctrl_decode_mig_cmd(const void *buf, size_t len, struct rc_mig_cmd *c);
/* A DIRTY_LIST: r->flags RC_MIG_LAST when nothing more is recorded. */
int rc_ctrl_encode_dirty(void *buf, size_t cap, uint32_t seq, const struct rc_hash_req *r);
int rc_ctrl_decode_dirty(const void *buf, size_t len, struct rc_hash_req *r, uint32_t max);

#endif
