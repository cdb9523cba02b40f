/* SPDX-License-Identifier: MIT */
/* The inside face of rdmactl/ctrl.h: what the layers above and the tests
 * use, not installed and not exported (libcore/README.md). */
#ifndef RDMACTL_CTRL_CORE_H
#define RDMACTL_CTRL_CORE_H

#include <rdmactl/ctrl.h>
#include <rdmactl/auth_core.h>

#define RC_CTRL_MAGIC 0x434d4452u /* "RDMC" */
#define RC_CTRL_VERSION 1
#define RC_CTRL_HDR_LEN 16

enum rc_ctrl_type {
	RC_CTRL_LIST_REQ = 1,  /* no payload */
	RC_CTRL_LIST_RESP = 2, /* u32 count, then count region records */
	RC_CTRL_PULL_REQ = 3,  /* migration: pull extents from a peer (struct rc_pull_req) */
	RC_CTRL_HASH_REQ = 4,  /* migration: sha256 of extents (struct rc_hash_req) */
	RC_CTRL_MIG_RESP = 5,  /* the answer to either, or to a MIG_CMD (struct rc_mig_resp) */
	RC_CTRL_MIG_CMD = 6, /* live migration: a step, or a client's notice (struct rc_mig_cmd) */
	RC_CTRL_DIRTY_LIST = 7, /* the answer to RC_MIG_TAKE (struct rc_hash_req layout) */
	RC_CTRL_AUTH = 8,       /* protocol 2: the client's proof, its first message */
	RC_CTRL_AUTH_RESP = 9,  /* the answer: i32 status, 0 when the connection is served */
};

struct rc_ctrl_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t len; /* payload bytes after the header */
	uint32_t seq;
};

/* Migration requests (rdmactl migrate, rdmactl-migrate(8)). A long list goes
 * in several requests: RC_MIG_FIRST on the first, RC_MIG_LAST on the last;
 * a server keeps its pull connection and its hash state in between. */
#define RC_MIG_FIRST 1u
#define RC_MIG_LAST 2u
#define RC_HASH_DST 4u /* hash each extent at dst rather than src */
/* Not the bytes: the digest of one range of whole RC_MIG_BLOCK blocks, from
 * each block's sha256 (the sha256 of those in order, or the block's own when
 * it is one). At the source (fenced or cut over, its copy frozen) of its
 * memory; with RC_HASH_DST of the blocks as the destination pulled them
 * (rdmactl-migrate(8), VERIFICATION). One request, FIRST and LAST. */
#define RC_HASH_BLOCKS 16u
#define RC_MIG_TOKEN_LEN 64
#define RC_MIG_MSG_LEN 256

/* To the destination: connect to host:port (with token), and READ each
 * extent of src_region there into dst_region here. */
struct rc_pull_req {
	uint32_t flags;
	char host[RC_HOST_MAX];
	char port[8];
	char src_region[RC_NAME_MAX];
	char dst_region[RC_NAME_MAX];
	char token[RC_MIG_TOKEN_LEN]; /* "" when none */
	uint32_t rkey;                /* with RC_PULL_RKEY: the source's rkey now */
	uint32_t n;
	struct rc_extent *ext; /* n extents: src, dst, len */
};
#define RC_PULL_RKEY 8u /* read with rkey, not the one the source listed */
/* Keep each block as it lands (copied aside, digested when asked), for
 * RC_HASH_BLOCKS | RC_HASH_DST (on the FIRST request: start a new list; a
 * pull without it on FIRST keeps none). */
#define RC_PULL_DIGEST 32u
#define RC_PULL_FIXED_LEN (16 + RC_HOST_MAX + 8 + 2 * RC_NAME_MAX + RC_MIG_TOKEN_LEN)
#define RC_PULL_MAX_EXT ((RC_CTRL_MSG_MAX - RC_CTRL_HDR_LEN - RC_PULL_FIXED_LEN) / 24)

/* To either side: the sha256 of the bytes of region at each extent (its src,
 * or its dst with RC_HASH_DST), in order, over every request FIRST to LAST. */
struct rc_hash_req {
	uint32_t flags;
	char region[RC_NAME_MAX];
	uint32_t n;
	struct rc_extent *ext;
};
#define RC_HASH_FIXED_LEN (8 + RC_NAME_MAX)
#define RC_HASH_MAX_EXT ((RC_CTRL_MSG_MAX - RC_CTRL_HDR_LEN - RC_HASH_FIXED_LEN) / 24)

struct rc_mig_resp {
	int32_t status;           /* 0 or -errno */
	uint64_t bytes;           /* pulled, or hashed */
	unsigned char digest[32]; /* a HASH_REQ with RC_MIG_LAST: the sha256 */
	char msg[RC_MIG_MSG_LEN]; /* why, when status < 0 */
};

/* Live migration steps (orchestrator to the source) and a client's notices
 * (client to its server, no answer). See rdmactl-migrate(8). */
enum rc_mig_step {
	RC_MIG_TRACK = 1, /* start recording the region's written blocks */
	RC_MIG_TAKE,      /* the blocks written since the last TAKE (a DIRTY_LIST) */
	RC_MIG_FENCE,     /* revoke remote writes; the answer's bytes: the read-only rkey */
	RC_MIG_UNFENCE,   /* abort: serve the region again, stop recording */
	RC_MIG_CUTOVER,   /* the region now lives at arg, "HOST:PORT" */
	RC_MIG_DROP,      /* the destination confirmed: release the region's memory */
	RC_MIG_WHERE,     /* client: where is the region? 0 and arg: moved there;
			     * 0 and "": here; -EAGAIN: fenced, ask again */
	RC_MIG_INTENT,    /* client notice: about to write or run atomics on [off, off+len) */
	RC_MIG_DONE,      /* client notice: that write or atomic has completed */
};

struct rc_mig_cmd {
	uint32_t step; /* enum rc_mig_step */
	uint32_t move; /* the move id TRACK answered: every later step carries it */
	char region[RC_NAME_MAX];
	uint64_t off;
	uint64_t len;
	char arg[RC_MIG_MSG_LEN];
};

/*
 * Protocol 2's handshake (rdmactl-register(8), SECURITY; base/auth_core.h).
 * The connect request carries a HELLO: the protocol, the role asked (data,
 * or admin for migration) and the client's fresh nonce, never a token;
 * protocol 1 sent the token itself and is refused by name. The accept
 * carries a CHALLENGE: the server's fresh nonce and its proof of the
 * role's token; the client checks it before it sends anything. Its first
 * message is AUTH (its own proof); the server answers AUTH_RESP and
 * handles nothing of that connection before. Both proofs bind the plane
 * ("region" or "admin") and the port the server listens on.
 */
#define RC_CTRL_PROTO 2            /* the connect request's protocol */
#define RC_HELLO_MAGIC 0x51434ad7u /* first byte 0xd7: never a printable token */
#define RC_HELLO_LEN 24
#define RC_CHALLENGE_LEN 40
#define RC_HELLO_TOKEN 1u      /* hello flags: the client holds a token for its role */
#define RC_CHALLENGE_PROVES 1u /* challenge flags: the server proved a token */

enum rc_ctrl_role {
	RC_ROLE_DATA = 1,  /* reads, writes, atomics, LIST */
	RC_ROLE_ADMIN = 2, /* migration steps too: proves the admin token */
};

struct rc_ctrl_hello {
	uint16_t version;
	uint8_t role;
	uint8_t flags;
	unsigned char cn[RC_AUTH_NONCE];
};

struct rc_ctrl_challenge {
	uint8_t flags;
	unsigned char sn[RC_AUTH_NONCE];
	unsigned char proof[RC_AUTH_MAC];
};

/* Encoders return the length or -ENOSPC. decode_hello: 0; -EPROTO for a
 * hello of another protocol (h->version says which); -EBADMSG for what is
 * no hello at all (protocol 1's raw token, or bytes). */
int rc_ctrl_encode_hello(void *buf, size_t cap, const struct rc_ctrl_hello *h);
int rc_ctrl_decode_hello(const void *buf, size_t len, struct rc_ctrl_hello *h);
int rc_ctrl_encode_challenge(void *buf, size_t cap, const struct rc_ctrl_challenge *c);
int rc_ctrl_decode_challenge(const void *buf, size_t len, struct rc_ctrl_challenge *c);
/* AUTH: the client's proof; AUTH_RESP: 0 (the connection is served). */
int rc_ctrl_encode_auth(void *buf, size_t cap, uint32_t seq, const unsigned char proof[RC_AUTH_MAC]);
int rc_ctrl_decode_auth(const void *buf, size_t len, unsigned char proof[RC_AUTH_MAC]);
int rc_ctrl_encode_auth_resp(void *buf, size_t cap, uint32_t seq, int32_t status);
int rc_ctrl_decode_auth_resp(const void *buf, size_t len, int32_t *status);
/* a's plane (the role's) and context (the server's listening port), its
 * nonces cleared. */
void rc_ctrl_auth_init(struct rc_auth *a, enum rc_ctrl_role role, uint16_t port);
/* The token of a PULL request, masked (or unmasked: the same call) in the
 * encoded message msg with a pad derived from the connection's session
 * under token; nothing to do without a token. -EBADMSG: no PULL. */
int rc_ctrl_seal_pull(void *msg, size_t len, const char *token, const struct rc_auth *a);

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
