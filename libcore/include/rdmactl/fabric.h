/* SPDX-License-Identifier: MIT */
/*
 * The fabric a command runs on (--fabric, $RDMACTL_FABRIC): verbs (RC queue
 * pairs through rdma_cm, the default), ofi:PROVIDER (libfabric's reliable
 * datagram endpoint of that provider: ofi:tcp is tcp;ofi_rxm, ofi:verbs is
 * verbs;ofi_rxm, ofi:efa) or auto (verbs where an RDMA device exists; never
 * a software provider by itself).
 *
 * Over libfabric a region server (rc_fsrv) and its client (rc_fcli) speak a
 * control plane of datagrams. No connection exists, so the server allocates
 * nothing for a peer (no address vector entry, no key, no region list)
 * until the peer proved the token in its first message, HELLO:
 *   - at start the listener makes a random nonce, published with its
 *     address in its descriptor (register's region line) beside
 *     token_check, the server's proof over that nonce and address, which a
 *     client checks before it sends anything;
 *   - HELLO carries the client's nonce, its endpoint address and its proof
 *     over both nonces, its address and its role (rc_auth, plane
 *     "ofi-region"); the server bounds its length, checks the proof,
 *     refuses a client nonce it has seen (a replay cache of
 *     RC_FSRV_REPLAY_MAX; full, the listener's nonce is rotated and said
 *     so: earlier proofs are then worthless), and only then puts the
 *     client's address into its address vector;
 *   - WELCOME answers with the regions and the server's proof over the
 *     client's nonce and those bytes, which the client checks before it
 *     uses any of them. The token never crosses the wire.
 * A server without a token serves without proofs, as the verbs one does.
 */
#ifndef RDMACTL_FABRIC_H
#define RDMACTL_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <rdmactl/err.h>
#include <rdmactl/export.h>
#include <rdmactl/ops.h>

#define RC_FABRIC_CHOICES "verbs, auto, ofi:tcp, ofi:verbs, ofi:efa or ofi:PROVIDER"
#define RC_FSRV_REGIONS 8       /* regions a server over libfabric serves, at most */
#define RC_FSRV_REPLAY_MAX 4096 /* client nonces remembered before the nonce rotates */
#define RC_FABRIC_HEX 160       /* room for an endpoint address in hex */

enum rc_fabric_kind { RC_FABRIC_VERBS, RC_FABRIC_OFI, RC_FABRIC_AUTO };

struct rc_fabric {
	enum rc_fabric_kind kind;
	char prov[48]; /* ofi: the provider as given after "ofi:" */
};

/* "verbs", "auto", "ofi:PROV" into f: 0, or -EINVAL (RC_FABRIC_CHOICES). */
RC_EXPORT int rc_fabric_parse(const char *s, struct rc_fabric *f);
/* libfabric's provider string of ofi:PROV ("tcp" -> "tcp;ofi_rxm"). */
RC_EXPORT const char *rc_fabric_prov(const struct rc_fabric *f);

/* What an endpoint runs on, and how a peer reaches it. */
struct rc_fabric_info {
	char provider[64]; /* "tcp;ofi_rxm" */
	char domain[64];
	char fabric[64];
	char address[RC_FABRIC_HEX]; /* the endpoint's address (fi_getname), hex */
	char nonce[2 * 16 + 1];      /* a server's listener nonce, hex */
	char token_check[2 * 16 +
			 1]; /* a server's proof over nonce and address, hex ("" without a token) */
};

/* One region as a client sees it over libfabric. */
struct rc_fregion {
	char name[32];
	uint64_t length;
	uint64_t key;
	uint64_t base; /* what a peer adds the offset to (0: offsets) */
	int access;    /* RC_ACCESS_* of rdmactl/mem.h's words: 1 read, 2 write, 4 atomic */
};

struct rc_fsrv;
struct rc_fsrv_opts {
	const char *prov;  /* ofi:PROV's PROV */
	const char *addr;  /* the address to listen on */
	const char *port;  /* its port */
	const char *token; /* NULL: an open server */
	int max_clients;   /* address vector entries at once (0: 64; the oldest goes) */
};
/* What the server saw: "admitted", "left", "rejected" (reason says why),
 * "imm" (a write's immediate data, in imm),
 * "rotated" (the listener nonce; reason says the new one). */
struct rc_fsrv_event {
	const char *kind;
	const char *peer;   /* the client's address in hex, or "" */
	const char *reason; /* NULL, or why */
	uint32_t imm;       /* "imm": a client's write brought this immediate data */
};
typedef void (*rc_fsrv_cb)(void *arg, const struct rc_fsrv_event *ev);

RC_EXPORT int rc_fsrv_create(const struct rc_fsrv_opts *o, struct rc_fsrv **out, struct rc_err *err);
/* A region of len bytes of zeroed host memory; access: 1 read, 2 write, 4 atomic. */
RC_EXPORT int rc_fsrv_add(struct rc_fsrv *s, const char *name, uint64_t len, int access,
			  struct rc_err *err);
RC_EXPORT int rc_fsrv_nregions(const struct rc_fsrv *s);
RC_EXPORT const struct rc_fregion *rc_fsrv_region(const struct rc_fsrv *s, int i);
RC_EXPORT const struct rc_fabric_info *rc_fsrv_info(const struct rc_fsrv *s);
/* Receives posted: call once the regions are added. */
RC_EXPORT int rc_fsrv_start(struct rc_fsrv *s, struct rc_err *err);
/* One pass of the loop: progress, and each control message that came,
 * waiting at most timeout_ms for one. Never waits on one client. */
RC_EXPORT int rc_fsrv_step(struct rc_fsrv *s, int timeout_ms, rc_fsrv_cb cb, void *arg,
			   struct rc_err *err);
RC_EXPORT void rc_fsrv_close(struct rc_fsrv *s);

struct rc_fcli;
struct rc_fcli_opts {
	const char *prov;
	const char *host, *port; /* the server's listen address */
	const char *region;      /* "" or NULL: the server's only one */
	const char *bind;        /* the local address (NULL: the one routing to host) */
	const char *token;
	/* From the server's descriptor (NULL without one): its endpoint
	 * address, listener nonce and token check, each hex. A token needs
	 * the nonce. */
	const char *srv_address, *srv_nonce, *srv_token_check;
	int timeout_ms;
};
/* Open an endpoint, prove the token, read the regions. -EKEYREJECTED: the
 * descriptor or the server's answer does not prove the token. */
RC_EXPORT int rc_fcli_open(const struct rc_fcli_opts *o, struct rc_fcli **out, struct rc_err *err);
RC_EXPORT const struct rc_fregion *rc_fcli_region(const struct rc_fcli *c);
RC_EXPORT const struct rc_fabric_info *rc_fcli_info(const struct rc_fcli *c);
/* len bytes at off within the region, and its access allowing need (1
 * read, 2 write, 4 atomic): 0, -ERANGE or -EACCES naming the region. */
RC_EXPORT int rc_fcli_check(const struct rc_fcli *c, uint64_t off, uint64_t len, int need,
			    struct rc_err *err);
/* Bytes at off of the region: written from what fill gives, or read into
 * what sink takes, in order. fill/sink return the bytes given/taken or
 * -errno. *done: bytes moved; *seconds: the time it took. */
typedef ssize_t (*rc_fcli_fill)(void *arg, uint64_t off, void *buf, size_t len);
RC_EXPORT int rc_fcli_transfer(struct rc_fcli *c, bool write, uint64_t off, uint64_t len,
			       rc_fcli_fill io, void *arg, uint64_t *done, double *seconds,
			       struct rc_err *err);
/* Fetch-and-add (cas false: a) or compare-and-swap (a expected, b swap). */
RC_EXPORT int rc_fcli_atomic(struct rc_fcli *c, bool cas, uint64_t off, uint64_t a, uint64_t b,
			     uint64_t *old, struct rc_err *err);
/* A benchmark over libfabric, run by the engine that runs one over verbs
 * (rc_stream_run; perftest's way: msg bytes from one local buffer to the
 * same remote offset, iters operations, depth in flight), every operation
 * completing (libfabric's completions, not one signalled in N). op: 1 write,
 * 2 read, 3 fetch-and-add (compare_add the operand), 4 compare-and-swap
 * (compare_add expected, swap the new value). Completions are busy-polled. */
enum { RC_FBENCH_WRITE = 1, RC_FBENCH_READ, RC_FBENCH_FAA, RC_FBENCH_CAS };
struct rc_fcli_bench {
	int op;
	uint64_t off;
	size_t msg;
	uint64_t iters;
	int depth;
	uint64_t compare_add, swap;
	int timeout_ms; /* with no completion for this long, -ETIMEDOUT */
	/* iters entries each, or NULL: each operation's post to completion in
	 * us (depth 1 for latencies), when it was posted and completed (s) */
	double *lat_us, *posted_s, *completed_s;
	enum rc_lat_clock lat_clock; /* what times lat_us, as over verbs */
};
/* res: the operations, bytes and time, and with latencies the clock that
 * timed them and its cost, taken off each (as rc_stream_run gives them). */
RC_EXPORT int rc_fcli_bench(struct rc_fcli *c, const struct rc_fcli_bench *b,
			    struct rc_stream_result *res, struct rc_err *err);
/* Immediate data to the server (its "imm" event), by a write of no bytes at
 * off, once what was written before it has completed. */
RC_EXPORT int rc_fcli_write_imm(struct rc_fcli *c, uint64_t off, uint32_t imm, struct rc_err *err);
/* Says goodbye (the server frees its entry) and closes. */
RC_EXPORT void rc_fcli_close(struct rc_fcli *c);

/* What libfabric offers on this host, one row a provider and domain, as
 * fi_info lists them (probe-topology --fabrics). */
struct rc_fabric_offer {
	char provider[64]; /* "tcp;ofi_rxm", "verbs;ofi_rxm", "efa" */
	char fabric[64];
	char domain[64];                 /* "rxe0", "eth0": a device, or a netdev */
	bool msg, rdm, dgram;            /* the endpoint types it offers */
	bool rma, atomic, cq_data, hmem; /* in one of them at least */
	/* An RDM endpoint with what rdmactl needs (messages, RMA read and
	 * write) under memory modes it handles: --fabric fabric_option opens
	 * it ("" when not usable). */
	bool usable;
	char fabric_option[72];
};

/* Every row into out, cap at most (*left_out: libfabric's entries that did
 * not fit); no provider is no row. Opens libfabric: -ENOSYS when it
 * cannot, the message saying why. */
RC_EXPORT int rc_fabric_offers(struct rc_fabric_offer *out, int cap, int *n, int *left_out,
			       struct rc_err *err);
/* libfabric's version, "1.17" ("" when it cannot be opened), into buf. */
RC_EXPORT const char *rc_fabric_version(char *buf, size_t cap);

#endif
