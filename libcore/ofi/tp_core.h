/* SPDX-License-Identifier: MIT */
/* The libfabric transport behind the engine's seam (verbs/pipe_core.h): an
 * endpoint is one peer of an open RDM endpoint (struct rc_ofi), so that the
 * one pipelining engine (rc_pipe, rc_stream_run) drives libfabric as it
 * drives verbs. Inside the ofi layer only. */
#ifndef RDMACTL_TP_CORE_H
#define RDMACTL_TP_CORE_H

#include <rdmactl/ofi_core.h>
#include <rdmactl/pipe_core.h>

#define RC_OFI_TP_MRS 8 /* registrations an endpoint names by lkey (1..this) */

/* A work request in flight: libfabric completes each one, in any order;
 * the engine is told of them in the order they were posted. */
struct rc_ofi_tp_slot {
	uint64_t user;
	uint64_t *old; /* an atomic's: where its old value goes (or NULL) */
	enum rc_op op;
	bool busy, done;
};

struct rc_ofi_tp {
	struct rc_ofi *o;
	uint64_t peer; /* its address-vector entry */
	char name[80];
	int depth; /* work requests in flight at most (the seam's sq_depth) */
	int timeout_ms;
	struct rc_ofi_tp_slot *ring; /* depth of them, by post number */
	uint64_t posted, reported;
	uint64_t *words; /* three a slot: an atomic's old value, operand, compare */
	struct rc_ofi_mr words_mr;
	const struct rc_ofi_mr *mrs[RC_OFI_TP_MRS];
	/* A completion of the endpoint's rc_ofi that is not the engine's (a
	 * message, a peer's write with immediate data), or NULL: passed over. */
	void (*other)(void *arg, const struct rc_ofi_wc *wc);
	void *other_arg;
};

/* The endpoint for peer of o: depth in flight, a wait of timeout_ms at
 * most (the seam's "the endpoint's own"), name in messages. */
int rc_ofi_tp_init(struct rc_ofi_tp *t, struct rc_ofi *o, uint64_t peer, const char *name,
		   int depth, int timeout_ms, struct rc_err *err);
void rc_ofi_tp_fini(struct rc_ofi_tp *t);
/* The lkey a work request names mr by (registered by the caller, and kept
 * until rc_ofi_tp_fini), or 0: no room. */
uint32_t rc_ofi_tp_key(struct rc_ofi_tp *t, const struct rc_ofi_mr *mr);
/* Wait at most timeout_ms for what is in flight (a failed run's, which
 * completes into its buffers): true once nothing is. */
bool rc_ofi_tp_quiesce(struct rc_ofi_tp *t, int timeout_ms);

extern const struct rc_transport rc_ofi_transport;

#endif
