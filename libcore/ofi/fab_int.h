/* SPDX-License-Identifier: MIT */
/* Between the libfabric region server and client (fab_srv.c, fab_cli.c):
 * the control plane's messages and their proofs (fab_wire.c). Every
 * message is fixed in layout, little-endian, and checked for its exact
 * length before a field of it is read (rdmactl/fabric.h says why). */
#ifndef RDMACTL_FAB_INT_H
#define RDMACTL_FAB_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmactl/auth_core.h>
#include <rdmactl/fabric.h>
#include <rdmactl/ofi_core.h>

#define FAB_MAGIC 0x31464352u /* "RCF1" */
#define FAB_HEAD 40           /* magic, type, role/count, addrlen, pad, nonce, proof */
#define FAB_REGION 64         /* one region in a WELCOME */
#define FAB_MSG_MAX (FAB_HEAD + RC_FSRV_REGIONS * FAB_REGION)
#define FAB_ROLE_DATA 1

enum { FAB_HELLO = 1, FAB_WELCOME = 2, FAB_BYE = 3 };

/* A message's head: what every one of them starts with. */
struct fab_head {
	uint32_t magic;
	uint8_t type;
	uint8_t count;   /* HELLO, BYE: the role; WELCOME: how many regions */
	uint8_t addrlen; /* HELLO: bytes of the client's address after the head */
	uint8_t pad;
	unsigned char nonce[RC_AUTH_NONCE]; /* the client's */
	unsigned char proof[RC_AUTH_MAC];
};

/* The head of buf (len bytes) into h: 0, or -EPROTO (too short, not ours). */
int fab_head_get(const void *buf, size_t len, struct fab_head *h);
void fab_head_put(void *buf, const struct fab_head *h);
/* The proofs: HELLO's (the client's over both nonces, role and address),
 * WELCOME's (the server's over both nonces and the region bytes), BYE's
 * (the client's over both nonces), and the descriptor's token check (the
 * server's over its nonce and address). */
void fab_proof_hello(const char *token, const unsigned char ln[RC_AUTH_NONCE],
		     const unsigned char cn[RC_AUTH_NONCE], int role, const void *addr,
		     size_t addrlen, unsigned char out[RC_AUTH_MAC]);
void fab_proof_welcome(const char *token, const unsigned char ln[RC_AUTH_NONCE],
		       const unsigned char cn[RC_AUTH_NONCE], const void *body, size_t len,
		       unsigned char out[RC_AUTH_MAC]);
void fab_proof_bye(const char *token, const unsigned char ln[RC_AUTH_NONCE],
		   const unsigned char cn[RC_AUTH_NONCE], unsigned char out[RC_AUTH_MAC]);
void fab_token_check(const char *token, const unsigned char ln[RC_AUTH_NONCE], const void *addr,
		     size_t addrlen, unsigned char out[RC_AUTH_MAC]);
/* Constant-time comparison of two proofs. */
bool fab_proof_eq(const unsigned char a[RC_AUTH_MAC], const unsigned char b[RC_AUTH_MAC]);
/* A region into and out of its FAB_REGION bytes. */
void fab_region_put(void *buf, const struct rc_fregion *r);
int fab_region_get(const void *buf, struct rc_fregion *r);
/* Hex of n bytes into out (2n + 1), and back: bytes, or -EINVAL. */
void fab_hex(const void *p, size_t n, char *out);
int fab_unhex(const char *s, void *p, size_t max);
/* Rejections told one by one, at most FAB_REJ_PER_S in a second; the rest
 * counted, and told as one number once their second is over: a peer that
 * floods the listener with messages that fail cannot flood the log. */
#define FAB_REJ_PER_S 20
struct fab_rej {
	double start; /* the second's start */
	int listed;   /* told in it */
	uint64_t hidden;
};
/* A rejection at now: true to tell it, false counted. */
bool fab_rej_list(struct fab_rej *r, double now);
/* What was counted in a second that is over at now, and a new second (0:
 * nothing counted, or the second is not over). */
uint64_t fab_rej_flush(struct fab_rej *r, double now);

/* The info of an open endpoint. */
void fab_info_of(const struct rc_ofi *o, struct rc_fabric_info *fi);

/* A client of a region server (fab_cli.c; its benchmark: fab_bench.c). */
#define FAB_CHUNK (1u << 20) /* a transfer's pieces */
#define FAB_DEPTH 8          /* a transfer's pieces in flight */
#define FAB_ID_SEND 1001
#define FAB_ID_RECV 1002
#define FAB_ID_ATOMIC 1003
#define FAB_ID_IMM 1004

struct rc_fcli {
	struct rc_ofi o;
	struct rc_fabric_info info;
	const char *token;
	unsigned char ln[RC_AUTH_NONCE], cn[RC_AUTH_NONCE];
	uint64_t peer;
	bool admitted;
	struct rc_fregion region;
	_Alignas(64) unsigned char ctl[2 * 1024];
	struct rc_ofi_mr ctl_mr;
	unsigned char *stage;
	struct rc_ofi_mr stage_mr;
	int timeout_ms;
};

/* Monotonic time in seconds. */
double fab_now(void);

/* s run by the one engine (rc_stream_run) over the libfabric transport to
 * c's peer (tp_ofi.c): s's buffer named by mr, its remote start off in the
 * region, every operation completing; depth and timeout_ms are s's. */
struct rc_stream;
struct rc_stream_result;
int fab_stream(struct rc_fcli *c, struct rc_stream *s, const struct rc_ofi_mr *mr, uint64_t off,
	       struct rc_stream_result *res, struct rc_err *err);

#endif
