// SPDX-License-Identifier: MIT
/*
 * The round-robin "circle" schedule: with M = world rounded up to even,
 * position M - 1 stays, the others turn; in round r rank r meets M - 1 and
 * every other rank i meets (2r - i) mod (M - 1). A rank that meets the
 * position past the world (odd worlds) sits the round out.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <rdmactl/sweep.h>
#include <rdmactl/sweep_core.h>

int rc_sweep_rounds(int world)
{
	if (world < 2 || world > RC_GROUP_MAX)
		return 0;
	return world % 2 ? world : world - 1;
}

int rc_sweep_partner(int world, int round, int rank)
{
	int rounds = rc_sweep_rounds(world), m = rounds + 1, p;

	if (!rounds || round < 0 || round >= rounds || rank < 0 || rank >= world)
		return -1;
	if (rank == m - 1)
		p = round;
	else if (rank == round)
		p = m - 1;
	else
		p = ((2 * round - rank) % (m - 1) + (m - 1)) % (m - 1);
	return p < world ? p : -1;
}

/* Turns past the 64 a port's mask holds: each such pair a turn of its own. */
#define TURN_BITS 64

int rc_sweep_turns(int world, int round, const int *port, int nports, int *turn)
{
	uint64_t *busy = calloc(nports > 0 ? (size_t)nports : 1, sizeof(*busy));
	int turns = 1, past = TURN_BITS;

	if (!busy)
		return -ENOMEM;
	for (int i = 0; i < world; i++)
		turn[i] = -1;
	for (int i = 0; i < world; i++) {
		int p = rc_sweep_partner(world, round, i), t = 0;
		uint64_t used;

		if (p < i)
			continue; /* a bye, or the pair was seen from its lower rank */
		used = busy[port[i]] | busy[port[p]];
		while (t < TURN_BITS && (used >> t & 1))
			t++;
		if (t == TURN_BITS)
			t = past++;
		else
			busy[port[i]] |= busy[port[p]] |= 1ULL << t;
		turn[i] = turn[p] = t;
		turns = t + 1 > turns ? t + 1 : turns;
	}
	free(busy);
	return turns;
}

int rc_sweep_port_ids(int world, const uint64_t *key, int *port)
{
	int n = 0;

	/* first come, first numbered: the same on every rank for the same keys */
	for (int i = 0; i < world; i++) {
		int j = 0;

		while (j < i && key[j] != key[i])
			j++;
		port[i] = j < i ? port[j] : n++;
	}
	return n;
}
