// SPDX-License-Identifier: MIT
/*
 * A port's error and retransmission counters: the files of
 * /sys/class/infiniband/DEV/ports/PORT/counters (the IB port counters) and
 * hw_counters (the driver's: mlx5's out_of_sequence, rxe's rcvd_seq_err...)
 * whose names speak of errors, retries or congestion, and the link rate.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/topo.h>
#include <rdmactl/topo_core.h>
#include <rdmactl/dev_core.h>
#include <rdmactl/sweep_core.h>

#include "sweep_int.h"

static const char *const interesting[] = { "err",     "retr",     "retry",   "seq", "dup",
					   "discard", "drop",     "timeout", "nak", "rnr",
					   "downed",  "recovery", "cnp",     "ecn", NULL };

static bool wanted(const char *name)
{
	for (int k = 0; interesting[k]; k++)
		if (strstr(name, interesting[k]))
			return true;
	return false;
}

static void read_dir(const char *base, const char *sub, struct ctr_snap *s)
{
	char dir[512], path[800];
	struct dirent *d;
	DIR *dp;

	snprintf(dir, sizeof(dir), "%s/%s", base, sub);
	if (!(dp = opendir(dir)))
		return;
	while ((d = readdir(dp)) && s->n < CTR_SNAP_MAX) {
		uint64_t v;

		if (d->d_name[0] == '.' || !wanted(d->d_name) || strlen(d->d_name) > 27)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		if (!rc_sysfs_u64(path, &v))
			continue;
		snprintf(s->name[s->n], sizeof(s->name[0]), "%.11s/%.27s", sub, d->d_name);
		s->val[s->n++] = v;
	}
	closedir(dp);
}

void ctr_read(const char *sysfs, const char *dev, int port, struct ctr_snap *s)
{
	char base[300];

	s->n = 0;
	if (!dev || !dev[0] || port < 1)
		return;
	snprintf(base, sizeof(base), "%s/class/infiniband/%.64s/ports/%d", sysfs ? sysfs : "/sys",
		 dev, port);
	read_dir(base, "counters", s);
	read_dir(base, "hw_counters", s);
}

int ctr_moved(const struct ctr_snap *a, const struct ctr_snap *b, struct rc_sweep_ctr *out, int n,
	      int max)
{
	for (int i = 0; i < b->n; i++) {
		uint64_t d = 0;
		int k;

		for (int x = 0; x < a->n; x++)
			if (!strcmp(a->name[x], b->name[i]))
				d = b->val[i] > a->val[x] ? b->val[i] - a->val[x] : 0;
		if (!d)
			continue;
		for (k = 0; k < n && strcmp(out[k].name, b->name[i]); k++)
			;
		if (k < n) {
			out[k].delta += d;
			continue;
		}
		if (n < max) {
			snprintf(out[n].name, sizeof(out[n].name), "%s", b->name[i]);
			out[n++].delta = d;
			continue;
		}
		/* full: replace the smallest move if this one is larger */
		int least = 0;

		for (k = 1; k < n; k++)
			if (out[k].delta < out[least].delta)
				least = k;
		if (out[least].delta < d) {
			snprintf(out[least].name, sizeof(out[least].name), "%s", b->name[i]);
			out[least].delta = d;
		}
	}
	return n;
}

double rc_sweep_link_rate(const char *sysfs, const char *dev, int port)
{
	char path[400], line[128], width[16], speed[32];
	double gbps = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/class/infiniband/%.64s/ports/%d/rate",
		 sysfs ? sysfs : "/sys", dev, port);
	if (!(f = fopen(path, "r")))
		return 0;
	if (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (rc_topo_parse_rate(line, &gbps, width, sizeof(width), speed, sizeof(speed)))
			gbps = 0;
	}
	fclose(f);
	return gbps;
}
