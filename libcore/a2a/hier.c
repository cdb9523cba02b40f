// SPDX-License-Identifier: MIT
/*
 * Hierarchical: ranks grouped into nodes of L (rank = node * L + local).
 * Blocks for the own node go through shared memory straight into the
 * destination's receive buffer; blocks for another node travel in one
 * bundle per node over the rail (to the rank of the same local index
 * there), which then scatters them through shared memory. Each rank's
 * receive buffers live in its node's shared segment, with a counter per
 * rank and phase of the blocks that landed (every source, empty or not,
 * counts once per iteration); the block that completes a phase wakes its
 * rank, asleep on a futex beside the counter.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rdmactl/ops.h>
#include <rdmactl/group_core.h>

#include "a2a_int.h"

#define CNT_STRIDE 8 /* counters a cache line apart */
#define CNT_BYTES 4096
#define SLICE_S 0.1 /* a sleep on the node's futex, at most */

static uint64_t cnt(const struct a2a *a, int ph, int o, int d)
{
	return ph == PH_DISPATCH ? a->o->counts[o * a->W + d] : a->o->counts[d * a->W + o];
}

/* Offsets of the receive buffers of node m's ranks in its segment, into
 * off[d * 4 ...] for each of its ranks d (drecv0, drecv1, crecv0, crecv1):
 * the segment's bytes. Every rank lays out every node: the rails write
 * straight into the receive buffers of the ranks of another node. */
static size_t shm_layout(const struct a2a *a, int m, size_t *off)
{
	size_t at = CNT_BYTES;

	for (int d = m * a->L; d < (m + 1) * a->L; d++) {
		uint64_t rt = a->recvs[d], st = a->sends[d];

		if (off) {
			off[d * 4 + 0] = at;
			off[d * 4 + 1] = at + rt * a->tb;
			off[d * 4 + 2] = at + 2 * rt * a->tb;
			off[d * 4 + 3] = at + (2 * rt + st) * a->tb;
		}
		at += 2 * (rt + st) * a->tb;
	}
	return at;
}

size_t a2a_hier_shm_bytes(const struct a2a *a, int x)
{
	return shm_layout(a, x / a->L, NULL);
}

static _Atomic uint64_t *counter(const struct a2a *a, int j, int ph)
{
	return (_Atomic uint64_t *)a->shm + (j * 2 + ph) * CNT_STRIDE;
}

/* Beside each counter, the phases it completed: the word a rank sleeps on
 * (a futex in the shared segment) until its last block landed. */
static _Atomic uint32_t *done_word(const struct a2a *a, int j, int ph)
{
	return (_Atomic uint32_t *)(counter(a, j, ph) + 1);
}

/* Where src's block for rank d lands: bytes into d's node's segment. */
static size_t final_at(const struct a2a *a, int ph, int p, int d, int src)
{
	uint64_t t = ph == PH_DISPATCH ? a2a_recv_off(a, d, src) : a2a_send_off(a, d, src);

	return a->shm_off[d * 4 + (ph == PH_DISPATCH ? 0 : 2) + p] + t * a->tb;
}

static uint8_t *src_ptr(const struct a2a *a, int ph, int d)
{
	return ph == PH_DISPATCH ? a->dsend + a->soff[d] * a->tb : a->csend + a->roff[d] * a->tb;
}

static uint64_t fnv(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* Every rank of the node registers the whole segment: the rails from
 * another node write into any of its ranks' receive buffers. */
static int shm_register(struct a2a *a, struct rc_err *err)
{
	a->shm_mr = ibv_reg_mr(rc_group_pd(a->g), a->shm, a->shm_len,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!a->shm_mr)
		return rc_err_set(err, errno ? errno : EIO,
				  "cannot register the node's shared memory (%zu bytes): %s",
				  a->shm_len, strerror(errno));
	a->mine.shm = (uintptr_t)a->shm;
	a->mine.shm_rkey = a->shm_mr->rkey;
	return 0;
}

int a2a_hier_setup(struct a2a *a, struct rc_err *err)
{
	int L = a->L, n = a->me / L, l = a->me % L, fd = -1, rc;
	char name[96];

	a->shm_off = calloc((size_t)a->W * 4, sizeof(size_t));
	if (!a->shm_off || a2a_line_sums(a))
		return rc_err_set(err, ENOMEM, "out of memory");
	for (int m = 0; m < a->W / L; m++) {
		size_t len = shm_layout(a, m, a->shm_off);

		if (m == n)
			a->shm_len = len;
	}
	/* a rank on several rails: a segment a slice (each rail's own group) */
	snprintf(name, sizeof(name), "/rdmactl-a2a-%016llx-%d-n%d-s%d",
		 (unsigned long long)fnv(a->o->job), a->W, n, a->slice);
	/* The node's first rank makes a fresh segment; the others open it
	 * after a barrier; then the name goes, so that nothing stays behind. */
	if (l == 0) {
		shm_unlink(name);
		fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)a->shm_len)) {
			rc = rc_err_set(err, errno, "cannot make shared memory %s of %zu bytes: %s",
					name, a->shm_len, strerror(errno));
			rc_group_abort_err(a->g, err, NULL);
			if (fd >= 0)
				close(fd);
			return rc;
		}
	}
	rc = rc_group_barrier(a->g, err);
	if (!rc && l != 0) {
		fd = shm_open(name, O_RDWR, 0600);
		if (fd < 0)
			rc = rc_err_set(err, errno, "cannot open the node's shared memory %s: %s",
					name, strerror(errno));
	}
	if (!rc) {
		a->shm = mmap(NULL, a->shm_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (a->shm == MAP_FAILED) {
			a->shm = NULL;
			rc = rc_err_set(err, errno, "cannot map shared memory %s: %s", name,
					strerror(errno));
		}
	}
	if (!rc)
		rc = shm_register(a, err);
	if (fd >= 0)
		close(fd);
	if (rc) {
		rc_group_abort_err(a->g, err, NULL);
		return rc;
	}
	rc = rc_group_barrier(a->g, err);
	if (l == 0)
		shm_unlink(name);
	if (rc)
		return rc;
	for (int p = 0; p < 2; p++) {
		a->drecv[p] = a->shm + a->shm_off[a->me * 4 + p];
		a->crecv[p] = a->shm + a->shm_off[a->me * 4 + 2 + p];
	}
	return 0;
}

void a2a_hier_teardown(struct a2a *a)
{
	if (a->shm_mr)
		ibv_dereg_mr(a->shm_mr);
	if (a->shm)
		munmap(a->shm, a->shm_len);
	free(a->shm_off);
}

/* One more block landed in local rank j's receive buffer of phase ph; the
 * block that completes the phase wakes j. */
static void landed(struct a2a *a, int j, int ph)
{
	if ((atomic_fetch_add(counter(a, j, ph), 1) + 1) % (uint64_t)a->W == 0) {
		atomic_fetch_add(done_word(a, j, ph), 1);
		syscall(SYS_futex, done_word(a, j, ph), FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
}

/* A block of this rank into rank d's receive buffer in shared memory; from
 * is in the token buffers (GPU memory: copied out of the GPU by the CPU). */
static int land(struct a2a *a, int ph, int p, int d, const uint8_t *from, struct rc_err *err)
{
	int rc = a2a_copy_out(a, a->shm + final_at(a, ph, p, d, a->me), from,
			      cnt(a, ph, a->me, d) * a->tb, err);

	if (!rc)
		landed(a, d % a->L, ph);
	return rc;
}

/* A rank of the node that left (its connection went), or a group told to
 * stop, ends the wait before its deadline, naming the cause. */
static int node_alive(struct a2a *a, struct rc_err *err)
{
	int n = a->me / a->L, rc = rc_group_poll(a->g, 0, err);

	for (int d = n * a->L; !rc && d < (n + 1) * a->L; d++)
		if (d != a->me && !rc_group_peer_alive(a->g, d))
			rc = rc_group_peer_error(a->g, d,
						 "its blocks were awaited in shared memory", err);
	return rc;
}

/* Until every block of this rank's phase landed (want in all): asleep on
 * the phase's futex, woken by the rank that lands the last block, a slice
 * at a time to see the deadline and the node's ranks. Ranks that spin
 * here would take the CPU from those still copying, where ranks outnumber
 * cores. */
static int node_wait(struct a2a *a, int ph, uint64_t want, struct rc_err *err)
{
	int l = a->me % a->L;
	_Atomic uint64_t *c = counter(a, l, ph);
	_Atomic uint32_t *w = done_word(a, l, ph);
	double deadline = rc_now() + a->o->timeout_ms / 1000.0;
	int rc;

	for (;;) {
		uint32_t seen = atomic_load(w);
		double left = deadline - rc_now();
		struct timespec ts = { 0 };

		if (atomic_load(c) >= want)
			return 0;
		if ((rc = node_alive(a, err)))
			return rc;
		if (left <= 0)
			return rc_err_set(
				err, ETIMEDOUT,
				"%s: %llu of %llu blocks landed in shared memory within %d ms (a rank of node %d stopped?)",
				ph == PH_DISPATCH ? "dispatch" : "combine",
				(unsigned long long)(atomic_load(c) - want + (uint64_t)a->W),
				(unsigned long long)a->W, a->o->timeout_ms, a->me / a->L);
		ts.tv_nsec = left < SLICE_S ? (long)(left * 1e9) + 1 : (long)(SLICE_S * 1e9);
		/* woken, changed already, interrupted or timed out: look again;
		 * a futex refused (seccomp) leaves a yielding poll */
		if (syscall(SYS_futex, w, FUTEX_WAIT, seen, &ts, NULL, 0) < 0 && errno != EAGAIN &&
		    errno != EINTR && errno != ETIMEDOUT)
			sched_yield();
	}
}

/* This rank's blocks for node m, each written straight into its
 * destination's receive buffer in m's segment through the rank of the same
 * local index there (the rail): the last write of the phase carries the
 * immediate data, after the others on the same connection. */
static int rail_out(struct a2a *a, uint32_t iter, int ph, int m, struct rc_err *err)
{
	int L = a->L, peer = m * L + a->me % L, ch = ph == PH_DISPATCH ? CH_DISPATCH : CH_COMBINE;

	for (int j = 0; j < L; j++) {
		int d = m * L + j, rc;
		uint64_t len = cnt(a, ph, a->me, d) * a->tb;

		if (!len && j < L - 1)
			continue;
		rc = rc_group_write_imm(a->g, peer, a2a_wire(a, src_ptr(a, ph, d)), len, a->lkey,
					a->remote[peer].shm + final_at(a, ph, iter & 1, d, a->me),
					a->remote[peer].shm_rkey, j == L - 1 ? ch : -1, iter, err);
		if (rc)
			return rc;
	}
	return 0;
}

int a2a_hier_phase(struct a2a *a, uint32_t iter, int ph, struct rc_err *err)
{
	int W = a->W, L = a->L, N = W / L, n = a->me / L, l = a->me % L, p = iter & 1;
	int ch = ph == PH_DISPATCH ? CH_DISPATCH : CH_COMBINE, *rails = a->wait_peers, nr = 0, rc;
	uint64_t *target = a->wait_target, want = ((uint64_t)iter + 1) * (uint64_t)W;

	/* rails first, so that the wire works while memory is copied */
	for (int k = 1; k < N; k++) {
		int m = (n + k) % N;

		if ((rc = rail_out(a, iter, ph, m, err)))
			return rc;
		rails[nr] = m * L + l;
		target[nr++] = (uint64_t)iter + 1;
	}
	for (int j = 0; j < L; j++)
		if ((rc = land(a, ph, p, n * L + j, src_ptr(a, ph, n * L + j), err)))
			return rc;
	if (nr && (rc = rc_group_wait_imm(a->g, rails, nr, ch, target, err)))
		return rc;
	/* what the rails brought landed: one block of each of their sources for
	 * every rank of the node */
	for (int k = 1; k < N; k++)
		for (int j = 0; j < L; j++)
			landed(a, j, ph);
	if ((rc = node_wait(a, ph, want, err)))
		return rc;
	return 0;
}
