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

/* Tokens in x's rail staging from node m (all of one phase). */
static uint64_t rail_size(const struct a2a *a, int x, int ph, int m)
{
	int L = a->L, src = m * L + x % L, n = x / L;
	uint64_t t = 0;

	for (int j = 0; j < L; j++)
		t += cnt(a, ph, src, n * L + j);
	return t;
}

uint64_t a2a_rail_tokens(const struct a2a *a, int x)
{
	uint64_t t = 0;

	for (int ph = 0; ph < 2; ph++)
		for (int m = 0; m < a->W / a->L; m++)
			if (m != x / a->L)
				t += 2 * rail_size(a, x, ph, m);
	return t;
}

static uint64_t rail_off(const struct a2a *a, int x, int ph, int p, int m)
{
	uint64_t off = 0;

	for (int f = 0; f <= ph * 2 + p; f++)
		for (int q = 0; q < a->W / a->L; q++) {
			if (f == ph * 2 + p && q == m)
				return off;
			if (q != x / a->L)
				off += rail_size(a, x, f / 2, q);
		}
	return off;
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

static uint8_t *final_buf(const struct a2a *a, int j, int ph, int p)
{
	return a->shm + a->shm_off[j * 4 + (ph == PH_DISPATCH ? 0 : 2) + p];
}

static uint64_t final_off(const struct a2a *a, int ph, int d, int src)
{
	return ph == PH_DISPATCH ? a2a_recv_off(a, d, src) : a2a_send_off(a, d, src);
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

int a2a_hier_setup(struct a2a *a, struct rc_err *err)
{
	int L = a->L, n = a->me / L, l = a->me % L, fd = -1, rc;
	char name[96];
	size_t off = CNT_BYTES;

	a->shm_off = calloc((size_t)L * 4, sizeof(size_t));
	if (!a->shm_off)
		return rc_err_set(err, ENOMEM, "out of memory");
	for (int j = 0; j < L; j++) {
		int d = n * L + j;
		uint64_t rt = 0, st = 0;

		for (int s = 0; s < a->W; s++) {
			rt += a->o->counts[s * a->W + d];
			st += a->o->counts[d * a->W + s];
		}
		a->shm_off[j * 4 + 0] = off;
		a->shm_off[j * 4 + 1] = off += rt * a->tb;
		a->shm_off[j * 4 + 2] = off += rt * a->tb;
		a->shm_off[j * 4 + 3] = off += st * a->tb;
		off += st * a->tb;
	}
	a->shm_len = off;
	snprintf(name, sizeof(name), "/rdmactl-a2a-%016llx-%d-n%d",
		 (unsigned long long)fnv(a->o->job), a->W, n);
	/* The node's first rank makes a fresh segment; the others open it
	 * after a barrier; then the name goes, so that nothing stays behind. */
	if (l == 0) {
		shm_unlink(name);
		fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)a->shm_len)) {
			rc = rc_err_set(err, errno, "cannot make shared memory %s of %zu bytes: %s",
					name, a->shm_len, strerror(errno));
			rc_group_abort(a->g, err->msg);
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
	if (fd >= 0)
		close(fd);
	if (rc) {
		rc_group_abort(a->g, err->msg);
		return rc;
	}
	rc = rc_group_barrier(a->g, err);
	if (l == 0)
		shm_unlink(name);
	if (rc)
		return rc;
	for (int p = 0; p < 2; p++) {
		a->drecv[p] = final_buf(a, l, PH_DISPATCH, p);
		a->crecv[p] = final_buf(a, l, PH_COMBINE, p);
	}
	return 0;
}

void a2a_hier_teardown(struct a2a *a)
{
	if (a->shm)
		munmap(a->shm, a->shm_len);
	free(a->shm_off);
}

/* A block into rank d's receive buffer in shared memory; from is in the
 * token buffers (GPU memory: copied out of the GPU, staged by the CPU). */
static int land(struct a2a *a, int ph, int p, int d, int src, const uint8_t *from,
		struct rc_err *err)
{
	int j = d % a->L, rc;

	rc = a2a_copy_out(a, final_buf(a, j, ph, p) + final_off(a, ph, d, src) * a->tb, from,
			  cnt(a, ph, src, d) * a->tb, err);
	if (rc)
		return rc;
	/* the block that completes d's phase wakes it */
	if ((atomic_fetch_add(counter(a, j, ph), 1) + 1) % (uint64_t)a->W == 0) {
		atomic_fetch_add(done_word(a, j, ph), 1);
		syscall(SYS_futex, done_word(a, j, ph), FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
	return 0;
}

/* Until every block of this rank's phase landed (want in all): asleep on
 * the phase's futex, woken by the rank that lands the last block, a slice
 * at a time to see the deadline. Ranks that spin here would take the CPU
 * from those still copying, where ranks outnumber cores. */
static int node_wait(struct a2a *a, int ph, uint64_t want, struct rc_err *err)
{
	int l = a->me % a->L;
	_Atomic uint64_t *c = counter(a, l, ph);
	_Atomic uint32_t *w = done_word(a, l, ph);
	double deadline = rc_now() + a->o->timeout_ms / 1000.0;

	for (;;) {
		uint32_t seen = atomic_load(w);
		double left = deadline - rc_now();
		struct timespec ts = { 0 };

		if (atomic_load(c) >= want)
			return 0;
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

static int hier_phase(struct a2a *a, uint32_t iter, int ph, struct rc_err *err)
{
	int W = a->W, L = a->L, N = W / L, n = a->me / L, l = a->me % L, p = iter & 1;
	int ch = ph == PH_DISPATCH ? CH_DISPATCH : CH_COMBINE, *rails = a->wait_peers, nr = 0, rc;
	uint64_t *target = a->wait_target, want = ((uint64_t)iter + 1) * (uint64_t)W;

	/* rails first, so that the wire works while memory is copied */
	for (int k = 1; k < N; k++) {
		int m = (n + k) % N, peer = m * L + l;
		uint64_t t = 0;

		for (int j = 0; j < L; j++)
			t += cnt(a, ph, a->me, m * L + j);
		rc = rc_group_write_imm(a->g, peer, a2a_wire(a, src_ptr(a, ph, m * L)), t * a->tb,
					a->mr->lkey,
					a->remote[peer].stage + rail_off(a, peer, ph, p, n) * a->tb,
					a->remote[peer].rkey, ch, iter, err);
		if (rc)
			return rc;
		rails[nr] = peer;
		target[nr++] = (uint64_t)iter + 1;
	}
	for (int j = 0; j < L; j++)
		if ((rc = land(a, ph, p, n * L + j, a->me, src_ptr(a, ph, n * L + j), err)))
			return rc;
	if (nr && (rc = rc_group_wait_imm(a->g, rails, nr, ch, target, err)))
		return rc;
	/* scatter what the rails brought */
	for (int k = 1; k < N; k++) {
		int m = (n + k) % N, src = m * L + l;
		const uint8_t *b = a->stage + rail_off(a, a->me, ph, p, m) * a->tb;

		for (int j = 0; j < L; j++) {
			if ((rc = land(a, ph, p, n * L + j, src, b, err)))
				return rc;
			b += cnt(a, ph, src, n * L + j) * a->tb;
		}
	}
	if ((rc = node_wait(a, ph, want, err)))
		return rc;
	return 0;
}

int a2a_hier_iter(struct a2a *a, uint32_t iter, struct rc_err *err)
{
	int rc = hier_phase(a, iter, PH_DISPATCH, err);

	return rc ? rc : hier_phase(a, iter, PH_COMBINE, err);
}
