/* SPDX-License-Identifier: MIT */
/*
 * ofi: the libfabric transport's core. One reliable datagram endpoint
 * (FI_EP_RDM: what EFA's SRD offers, and what tcp, verbs and shm offer
 * through ofi_rxm), its address vector and one completion queue with
 * immediate data (FI_CQ_FORMAT_DATA); memory registered as the provider's
 * FI_MR_* mode bits ask; RMA write (with immediate data), read, 64-bit
 * atomics where the provider has them, and messages.
 *
 * A provider is named as rdmactl's --fabric names it, less "ofi:": "tcp"
 * (tcp;ofi_rxm), "verbs" (verbs;ofi_rxm), "efa", "shm", or a libfabric
 * provider string as fi_info prints it ("verbs;ofi_rxm"). Nothing here
 * falls back to another provider: what was asked for is opened, or the
 * error names what the provider lacks.
 *
 * One thread drives an endpoint at a time (FI_THREAD_DOMAIN). A post that
 * finds the provider's queues full (-FI_EAGAIN) reads completions to make
 * progress and tries again, within the endpoint's timeout; the completions
 * it read wait for rc_ofi_poll.
 */
#ifndef RDMACTL_OFI_CORE_H
#define RDMACTL_OFI_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmactl/err.h>

#define RC_OFI_NAME_MAX 64 /* an endpoint's address (fi_getname), at most */
#define RC_OFI_BACKLOG 256 /* completions read while posting, kept */
/* The peers one endpoint talks to, at most: its address vector's size and
 * libfabric's FI_UNIVERSE_SIZE unless the environment sets it (ofi_dl.c). rxm
 * sizes each endpoint's completion queue for its universe (the default 256
 * asks rxe for 65536 entries, above its 32767: "Unable to create verbs CQ"). */
#define RC_OFI_PEERS 64
#define RC_OFI_PEERS_TEXT "64"

struct fi_info;
struct fid_fabric;
struct fid_domain;
struct fid_ep;
struct fid_av;
struct fid_cq;
struct fid_mr;

/* The hints rc_ofi_open gives fi_getinfo for prov (as rc_ofi_opts names it):
 * an RDM endpoint with messages, RMA read and write (and 64-bit atomics),
 * under the memory modes rdmactl handles. fi_freeinfo frees them; NULL:
 * out of memory. */
struct fi_info *rc_ofi_hints(const char *prov, bool want_atomic);

struct rc_ofi_opts {
	const char *prov;    /* "tcp", "verbs", "efa", "shm", or "a;b" as fi_info names it */
	const char *node;    /* the address to bind (NULL: the provider's choice) */
	const char *service; /* the port to bind ("0" or NULL: any) */
	int cq_depth;        /* 0: 1024 */
	int timeout_ms;      /* a post that waits for room gives up after it (0: 5000) */
	bool want_atomic;    /* the endpoint must offer 64-bit atomics */
	/* the completion queue with a file descriptor to sleep on (FI_WAIT_FD)
	 * where the provider has one: rc_ofi_wait */
	bool wait_fd;
};

/* One completion, as the engine reads it. */
struct rc_ofi_wc {
	void *ctx;      /* the post's context (NULL for a write's target data) */
	uint64_t flags; /* FI_SEND, FI_RECV, FI_WRITE, FI_READ, FI_ATOMIC, FI_REMOTE_CQ_DATA ... */
	size_t len;     /* bytes received */
	uint64_t data;  /* immediate data, with FI_REMOTE_CQ_DATA */
	int err;        /* 0, or the positive errno of a failed operation */
	char why[96];   /* a failed operation: the provider's words */
};

struct rc_ofi {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_av *av;
	struct fid_cq *cq;
	uint64_t mr_mode; /* the FI_MR_* bits the provider asks for */
	size_t key_size;  /* bytes of a memory key (8 at most here) */
	bool atomic;      /* 64-bit atomics offered */
	bool cq_data;     /* immediate data carried (FI_REMOTE_CQ_DATA) */
	size_t max_msg;   /* the largest message or RMA transfer */
	size_t inject;    /* the largest inject */
	int wait_fd;      /* the CQ's (FI_GETWAIT), or -1: none */
	int timeout_ms;
	unsigned char name[RC_OFI_NAME_MAX];
	size_t namelen;
	char prov_name[64]; /* as libfabric names it: "tcp;ofi_rxm" */
	char domain_name[64];
	char fabric_name[64];
	struct rc_ofi_wc backlog[RC_OFI_BACKLOG];
	int nbacklog;
};

/* A registration: desc for local buffers where FI_MR_LOCAL asks for one,
 * key and the address a peer gives to reach byte 0 (the buffer's virtual
 * address with FI_MR_VIRT_ADDR, else 0: offsets). */
struct rc_ofi_mr {
	struct fid_mr *mr;
	void *desc;
	uint64_t key;
	uint64_t base;
	void *buf;
	size_t len;
};

/* Access of a registration: what the peer may do to it. */
enum {
	RC_OFI_LOCAL = 0,
	RC_OFI_REMOTE_READ = 1,
	RC_OFI_REMOTE_WRITE = 2,
	RC_OFI_REMOTE_ATOMIC = 4
};

/* The libfabric provider string of a name ("tcp" -> "tcp;ofi_rxm"). */
const char *rc_ofi_prov_string(const char *prov);
/* The other way: the name --fabric ofi:NAME gives prov ("tcp;ofi_rxm":
 * "tcp"), else prov itself. */
const char *rc_ofi_short_name(const char *prov);

/* Open the provider's RDM endpoint, bound to node:service, with its AV
 * and CQ. On failure err names the provider and what it lacks (no such
 * provider, no RDM endpoint with RMA, no atomics). */
int rc_ofi_open(struct rc_ofi *o, const struct rc_ofi_opts *opts, struct rc_err *err);
void rc_ofi_close(struct rc_ofi *o);

/* Sleep until the completion queue may hold something, at most timeout_ms:
 * 1 woken (or something there already), 0 the time passed, -1 no file
 * descriptor to sleep on (opened without wait_fd, or the provider has
 * none): the caller naps instead. */
int rc_ofi_wait(struct rc_ofi *o, int timeout_ms);

/* Register len bytes at buf for access (RC_OFI_*), as the mode bits ask. */
int rc_ofi_reg(struct rc_ofi *o, void *buf, size_t len, int access, struct rc_ofi_mr *mr,
	       struct rc_err *err);
void rc_ofi_dereg(struct rc_ofi_mr *mr);

/* The address prov's endpoint bound to host:port has (as fi_getinfo gives
 * it for that node and service), into name (RC_OFI_NAME_MAX bytes) and
 * *len: 0, or -EHOSTUNREACH naming the provider and the address. */
int rc_ofi_resolve(const char *prov, const char *host, const char *port, unsigned char *name,
		   size_t *len, struct rc_err *err);
/* The same for a provider whose endpoints are named by their IP address
 * and port, as o's is (tcp, verbs): the sockaddr of host:port in o's
 * family, without asking the provider (fi_getinfo for verbs;ofi_rxm wants
 * a device); -EAFNOSUPPORT for a provider that names them otherwise. */
int rc_ofi_sockaddr(const struct rc_ofi *o, const char *host, const char *port, unsigned char *name,
		    size_t *len, struct rc_err *err);
/* A peer's address (its name, namelen bytes) into the AV. */
int rc_ofi_av_insert(struct rc_ofi *o, const void *name, size_t namelen, uint64_t *peer,
		     struct rc_err *err);
int rc_ofi_av_remove(struct rc_ofi *o, uint64_t peer);

/* Posts: 0, or -errno with err saying why. ctx comes back in the
 * completion. raddr: the peer's base plus the offset. */
int rc_ofi_write(struct rc_ofi *o, uint64_t peer, const void *buf, size_t len,
		 const struct rc_ofi_mr *lmr, uint64_t raddr, uint64_t key, const uint64_t *imm,
		 void *ctx, struct rc_err *err);
int rc_ofi_read(struct rc_ofi *o, uint64_t peer, void *buf, size_t len, const struct rc_ofi_mr *lmr,
		uint64_t raddr, uint64_t key, void *ctx, struct rc_err *err);
int rc_ofi_send(struct rc_ofi *o, uint64_t peer, const void *buf, size_t len,
		const struct rc_ofi_mr *lmr, void *ctx, struct rc_err *err);
/* A receive from any peer (FI_DIRECTED_RECV is not asked for). */
int rc_ofi_recv(struct rc_ofi *o, void *buf, size_t len, const struct rc_ofi_mr *lmr, void *ctx,
		struct rc_err *err);
/* 64-bit fetch-and-add (cmp NULL) or compare-and-swap (*cmp) of the word at
 * raddr. old: three words of omr's buffer: the old value lands in old[0],
 * old[1] and old[2] carry the operand and the compare value to the NIC. */
int rc_ofi_atomic(struct rc_ofi *o, uint64_t peer, uint64_t operand, const uint64_t *cmp,
		  uint64_t *old, const struct rc_ofi_mr *omr, uint64_t raddr, uint64_t key,
		  void *ctx, struct rc_err *err);

/* Whether a completion, for a reader of the queue that is not the engine,
 * is a peer's write that carried immediate data (no receive of ours was
 * used), not a message received (which may carry data: fi_senddata). */
bool rc_ofi_wc_imm(const struct rc_ofi_wc *wc);
/* The endpoint's own port, as bound (0: its address is not an IP one). */
int rc_ofi_port(const struct rc_ofi *o);

/* Up to max completions, waiting at most timeout_ms for the first (0: do
 * not wait). Returns how many, or -errno (the CQ itself failed). */
int rc_ofi_poll(struct rc_ofi *o, struct rc_ofi_wc *wc, int max, int timeout_ms, struct rc_err *err);

#endif
