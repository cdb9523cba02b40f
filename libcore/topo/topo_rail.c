// SPDX-License-Identifier: MIT
/*
 * The rail plan: which NIC each GPU sends through. A greedy pass in GPU
 * order can pile GPUs onto the first of two equally close NICs while the
 * other stays idle; here the plan is an optimal assignment instead:
 * the smallest sum of path costs, then, among the plans with that sum, the
 * smallest load on the busiest NIC.
 *
 * A NIC that may carry up to C GPUs is C columns of an assignment problem
 * (GPUs are the rows), solved exactly by the Hungarian method. The least
 * sum for a cap C only falls as C grows, and C = the number of GPUs is no
 * cap at all, so a binary search finds the smallest cap that still reaches
 * the unconstrained least sum.
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "topo_int.h"
#include <rdmactl/topo_core.h>

/* Cost of a NIC a GPU cannot use, above any sum of real costs. */
#define UNUSABLE (1LL << 40)

/* Hungarian method, rows n <= columns m, a[i * m + j]; fills row_col[i].
 * Returns the total cost, or -1 when out of memory. */
static long long hungarian(int n, int m, const long long *a, int *row_col)
{
	long long *u = calloc((size_t)n + 1, sizeof(*u)), *v = calloc((size_t)m + 1, sizeof(*v));
	long long *minv = calloc((size_t)m + 1, sizeof(*minv)), total = 0;
	int *p = calloc((size_t)m + 1, sizeof(*p)), *way = calloc((size_t)m + 1, sizeof(*way));
	char *used = calloc((size_t)m + 1, 1);

	if (!u || !v || !minv || !p || !way || !used) {
		total = -1;
		goto out;
	}
	for (int i = 1; i <= n; i++) {
		int j0 = 0;

		p[0] = i;
		for (int j = 0; j <= m; j++) {
			minv[j] = LLONG_MAX;
			used[j] = 0;
		}
		do {
			int i0 = p[j0], j1 = 0;
			long long delta = LLONG_MAX;

			used[j0] = 1;
			for (int j = 1; j <= m; j++) {
				long long cur;

				if (used[j])
					continue;
				cur = a[(size_t)(i0 - 1) * (size_t)m + (size_t)(j - 1)] - u[i0] -
				      v[j];
				if (cur < minv[j]) {
					minv[j] = cur;
					way[j] = j0;
				}
				if (minv[j] < delta) {
					delta = minv[j];
					j1 = j;
				}
			}
			for (int j = 0; j <= m; j++) {
				if (used[j]) {
					u[p[j]] += delta;
					v[j] -= delta;
				} else {
					minv[j] -= delta;
				}
			}
			j0 = j1;
		} while (p[j0] != 0);
		do {
			int j1 = way[j0];

			p[j0] = p[j1];
			j0 = j1;
		} while (j0);
	}
	for (int j = 1; j <= m; j++)
		if (p[j]) {
			row_col[p[j] - 1] = j - 1;
			total += a[(size_t)(p[j] - 1) * (size_t)m + (size_t)(j - 1)];
		}
out:
	free(u);
	free(v);
	free(minv);
	free(p);
	free(way);
	free(used);
	return total;
}

/* The least sum with every NIC capped at cap GPUs; assign[] gets the NICs. */
static long long solve_capped(int nrows, const int *rows, int nnics, const int *cost, int cap,
			      int *assign)
{
	int m = nnics * cap, *row_col = malloc(sizeof(int) * (size_t)nrows);
	long long *a = malloc(sizeof(*a) * (size_t)nrows * (size_t)m), total;

	if (!a || !row_col) {
		free(a);
		free(row_col);
		return -1;
	}
	for (int i = 0; i < nrows; i++)
		for (int n = 0; n < nnics; n++) {
			int c = cost[rows[i] * nnics + n];

			for (int k = 0; k < cap; k++)
				a[(size_t)i * (size_t)m + (size_t)(n * cap + k)] =
					c < 0 ? UNUSABLE : c;
		}
	total = hungarian(nrows, m, a, row_col);
	for (int i = 0; total >= 0 && i < nrows; i++)
		assign[rows[i]] = row_col[i] / cap;
	free(a);
	free(row_col);
	return total;
}

int rc_topo_assign(int ngpus, int nnics, const int *cost, int *assign)
{
	int *rows, nrows = 0, lo, hi, best_cap;
	long long least;

	if (ngpus < 0 || nnics < 0 || (ngpus && (!cost || !assign)))
		return -EINVAL;
	for (int g = 0; g < ngpus; g++)
		assign[g] = -1;
	if (!ngpus || !nnics)
		return 0;
	rows = malloc(sizeof(int) * (size_t)ngpus);
	if (!rows)
		return -ENOMEM;
	for (int g = 0; g < ngpus; g++)
		for (int n = 0; n < nnics; n++)
			if (cost[g * nnics + n] >= 0) {
				rows[nrows++] = g;
				break;
			}
	if (!nrows) {
		free(rows);
		return 0;
	}
	least = solve_capped(nrows, rows, nnics, cost, nrows, assign);
	lo = (nrows + nnics - 1) / nnics;
	hi = nrows;
	best_cap = nrows;
	while (least >= 0 && lo < hi) {
		int mid = lo + (hi - lo) / 2;
		long long s = solve_capped(nrows, rows, nnics, cost, mid, assign);

		if (s < 0) {
			least = -1;
		} else if (s == least) {
			best_cap = hi = mid;
		} else {
			lo = mid + 1;
		}
	}
	if (least >= 0)
		least = solve_capped(nrows, rows, nnics, cost, best_cap, assign);
	free(rows);
	return least < 0 ? -ENOMEM : 0;
}

static int numa_of(const struct rc_topo_pci *p)
{
	return p->numa_node;
}

void tp_plan_rails(struct rc_topo *t)
{
	int load[RC_TOPO_MAX_DEVS] = { 0 }, assign[RC_TOPO_MAX_GPUS], *cost;
	bool up[RC_TOPO_MAX_DEVS] = { false }, any_up = false;
	int usable = 0, placed = 0;

	for (int d = 0; d < t->ndevs; d++) {
		for (int p = 0; p < t->devs[d].nports; p++)
			if (!strcmp(t->devs[d].ports[p].state, "ACTIVE"))
				up[d] = true;
		any_up |= up[d] && t->devs[d].has_pci;
	}
	for (int d = 0; d < t->ndevs; d++)
		usable += t->devs[d].has_pci && (up[d] || !any_up);
	/* A NIC whose ports are all down carries nothing: it costs more than
	 * any path, so it is only chosen where nothing else can be. */
	cost = calloc((size_t)(t->ngpus * t->ndevs) + 1, sizeof(int));
	for (int g = 0; g < t->ngpus; g++) {
		struct rc_topo_rail *r = &t->rails[g];

		r->gpu = g;
		r->dev = r->best_dev = -1;
		r->path = r->best_path = RC_PATH_NA;
		for (int d = 0; cost && d < t->ndevs; d++) {
			enum rc_topo_path p = t->matrix[g][d];
			int c = p == RC_PATH_NA ? -1 : (int)p + (up[d] ? 0 : 10);

			cost[g * t->ndevs + d] = c;
			if (c >= 0 && (r->best_dev < 0 || c < cost[g * t->ndevs + r->best_dev]))
				r->best_dev = d;
		}
		if (r->best_dev >= 0)
			r->best_path = t->matrix[g][r->best_dev];
	}
	/* Out of memory: each GPU its best NIC, still a plan. */
	if (!cost || rc_topo_assign(t->ngpus, t->ndevs, cost, assign))
		for (int g = 0; g < t->ngpus; g++)
			assign[g] = t->rails[g].best_dev;
	free(cost);
	for (int g = 0; g < t->ngpus; g++) {
		t->rails[g].dev = assign[g];
		if (assign[g] >= 0) {
			t->rails[g].path = t->matrix[g][assign[g]];
			load[assign[g]]++;
			placed++;
		}
	}
	for (int g = 0; g < t->ngpus; g++) {
		struct rc_topo_rail *r = &t->rails[g];
		int gn, dn;

		if (r->dev < 0)
			continue;
		r->shared = load[r->dev];
		r->shared_by_design = r->shared > 1 && placed > usable;
		gn = numa_of(&t->gpus[g].pci);
		dn = numa_of(&t->devs[r->dev].pci);
		r->cross_socket = r->path == RC_PATH_SYS || (gn >= 0 && dn >= 0 && gn != dn);
	}
}

/* --rails auto: a process's rails, read off the plan (rdmactl(8), RAILS). */

static bool nic_up(const struct rc_topo_dev *d)
{
	for (int p = 0; p < d->nports; p++)
		if (!strcmp(d->ports[p].state, "ACTIVE"))
			return true;
	return false;
}

/* Whether something on node `node` is on node want: the same node, any
 * node wanted, or a node not known on a host of one node. */
static bool on_node(const struct rc_topo *t, int node, int want)
{
	return want < 0 || node == want || (node < 0 && t->nnuma <= 1);
}

static void add_dev(int *devs, int cap, int *n, int d)
{
	for (int i = 0; i < *n && i < cap; i++)
		if (devs[i] == d)
			return;
	if (*n < cap)
		devs[*n] = d;
	(*n)++;
}

static int gpu_rail(const struct rc_topo *t, int gpu, int *devs, int cap, int *n, struct rc_err *err)
{
	int g = -1;

	for (int i = 0; i < t->ngpus; i++)
		if ((t->gpus[i].nvml_index >= 0 ? t->gpus[i].nvml_index : i) == gpu)
			g = i;
	if (g < 0)
		return rc_err_set(err, ENODEV,
				  "no GPU %d here (%d GPU%s, numbered in PCI bus order as "
				  "probe-topology numbers them)",
				  gpu, t->ngpus, t->ngpus == 1 ? "" : "s");
	if (t->rails[g].dev < 0)
		return rc_err_set(err, ENODEV,
				  "GPU %d (%s) has no NIC with a PCI path: the rail plan gives it "
				  "none (rdmactl probe-topology shows the paths)",
				  gpu, t->gpus[g].pci.addr);
	add_dev(devs, cap, n, t->rails[g].dev);
	return 0;
}

int rc_topo_rails_of(const struct rc_topo *t, int gpu, int numa, int *devs, int cap, int *n,
		     struct rc_err *err)
{
	*n = 0;
	if (!t->ndevs)
		return rc_err_set(err, ENODEV,
				  "no RDMA device under %s/class/infiniband: load the NIC's RDMA "
				  "driver (mlx5_ib, efa, irdma...); to test without hardware: rdma "
				  "link add rxe0 type rxe netdev IF",
				  t->root);
	if (gpu >= 0)
		return gpu_rail(t, gpu, devs, cap, n, err);
	for (int g = 0; g < t->ngpus; g++)
		if (t->rails[g].dev >= 0 && on_node(t, t->gpus[g].pci.numa_node, numa))
			add_dev(devs, cap, n, t->rails[g].dev);
	if (*n)
		return 0;
	/* A node without GPUs (or a host without): its NICs that are up. */
	for (int d = 0; d < t->ndevs; d++)
		if (nic_up(&t->devs[d]) &&
		    on_node(t, t->devs[d].has_pci ? t->devs[d].pci.numa_node : -1, numa))
			add_dev(devs, cap, n, d);
	if (*n)
		return 0;
	if (numa < 0)
		return rc_err_set(err, ENODEV,
				  "none of the %d RDMA device%s has an active port: bring a link "
				  "up (rdmactl probe-topology shows each port's state)",
				  t->ndevs, t->ndevs == 1 ? "" : "s");
	return rc_err_set(err, ENODEV,
			  "no RDMA device with an active port on NUMA node %d: give the node's "
			  "devices with -d DEV1,DEV2, or run the process on a node that has some "
			  "(rdmactl probe-topology shows each NIC's node)",
			  numa);
}

/* Whether the cpulist "0-3,8,10-11" holds cpu. */
static bool cpulist_has(const char *s, int cpu)
{
	while (*s) {
		char *end;
		long lo = strtol(s, &end, 10), hi = lo;

		if (end == s)
			return false;
		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		if (cpu >= lo && cpu <= hi)
			return true;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return false;
	}
	return false;
}

int rc_topo_my_node(const struct rc_topo *t)
{
	cpu_set_t set;
	int node = -1;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		int here = -1;

		if (!CPU_ISSET(cpu, &set))
			continue;
		for (int i = 0; i < t->nnuma && here < 0; i++)
			if (cpulist_has(t->numa[i].cpulist, cpu))
				here = t->numa[i].node;
		if (here < 0 || (node >= 0 && here != node))
			return -1;
		node = here;
	}
	return node;
}
