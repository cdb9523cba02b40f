// SPDX-License-Identifier: MIT
/*
 * The round-robin "circle" schedule: with M = world rounded up to even,
 * position M - 1 stays, the others turn; in round r rank r meets M - 1 and
 * every other rank i meets (2r - i) mod (M - 1). A rank that meets the
 * position past the world (odd worlds) sits the round out.
 */
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
