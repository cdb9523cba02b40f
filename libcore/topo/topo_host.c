// SPDX-License-Identifier: MIT
/*
 * Host facts that live beside the device files: rdma_cm's default RoCE
 * mode and ToS per port (configfs, below the root at kernel/config), the
 * rdma_ucm module that user-space rdma_cm needs, and rdma-core's version
 * (the file name of the libibverbs this process loaded, or the capture's
 * rdma_core fact). rc_topo_load calls it after the devices.
 */
#define _GNU_SOURCE /* dladdr */
#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "topo_int.h"

static void load_cm_port(const struct rc_topo *t, const char *dev, struct rc_topo_port *p)
{
	char rel[256], buf[32];
	long tos;

	p->roce_mode[0] = '\0';
	p->roce_tos = -1;
	if (tp_fmt(rel, sizeof(rel), "kernel/config/rdma_cm/%s/ports/%d/default_roce_mode", dev,
		   p->num))
		return;
	if (!tp_read(t, rel, buf, sizeof(buf)))
		tp_copy(p->roce_mode, sizeof(p->roce_mode), buf);
	if (!tp_fmt(rel, sizeof(rel), "kernel/config/rdma_cm/%s/ports/%d/default_roce_tos", dev,
		    p->num) &&
	    !tp_read_int(t, rel, &tos) && tos >= 0 && tos <= 255)
		p->roce_tos = (int)tos;
}

/* "libibverbs.so.1.14.44.0" -> "44.0": rdma-core names the library by
 * its ABI and then its own release. */
static void version_of_lib(const char *path, char *out, size_t len)
{
	const char *base = strrchr(path, '/'), *so;
	int dots = 0;

	base = base ? base + 1 : path;
	if (!(so = strstr(base, ".so.")))
		return;
	for (const char *s = so + 4; *s; s++) {
		if (*s == '.' && ++dots == 2) {
			if (isdigit((unsigned char)s[1]))
				tp_copy(out, len, s + 1);
			return;
		}
		if (*s != '.' && !isdigit((unsigned char)*s))
			return;
	}
}

static void live_rdma_core(char *out, size_t len)
{
	Dl_info info;
	char *real;

	if (!dladdr((void *)ibv_get_device_list, &info) || !info.dli_fname)
		return;
	if ((real = realpath(info.dli_fname, NULL))) {
		version_of_lib(real, out, len);
		free(real);
	}
}

static void captured_fact(void *arg, const char *key, const char *val)
{
	struct rc_topo_facts *f = arg;

	if (!strcmp(key, "rdma_core"))
		tp_copy(f->rdma_core, sizeof(f->rdma_core), val);
	else if (!strcmp(key, "rdma_ucm") && (!strcmp(val, "0") || !strcmp(val, "1")))
		f->rdma_ucm = val[0] == '1';
}

void tp_load_host(struct rc_topo *t)
{
	struct rc_topo_facts *f = &t->facts;

	for (int d = 0; d < t->ndevs; d++)
		for (int p = 0; p < t->devs[d].nports; p++)
			load_cm_port(t, t->devs[d].name, &t->devs[d].ports[p]);
	/* a module built in shows under module/ only with parameters: the
	 * device node it makes says it too */
	if (tp_is_dir(t, "module/rdma_ucm"))
		f->rdma_ucm = 1;
	else if (t->live)
		f->rdma_ucm = access("/dev/infiniband/rdma_cm", F_OK) ? 0 : 1;
	else
		f->rdma_ucm = tp_is_dir(t, "module") ? 0 : -1;
	if (t->live)
		live_rdma_core(f->rdma_core, sizeof(f->rdma_core));
	else /* the capture's word over its folders */
		tp_facts_each(t, NULL, captured_fact, f);
}
