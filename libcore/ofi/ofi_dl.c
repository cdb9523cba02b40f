// SPDX-License-Identifier: MIT
/* libfabric opened at run time (libcore/ofi/ofi_dl.h). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "ofi_core.h"
#include "ofi_dl.h"

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#define LIBFABRIC "libfabric.so.1"

static struct {
	int (*getinfo)(uint32_t, const char *, const char *, uint64_t, const struct fi_info *,
		       struct fi_info **);
	void (*freeinfo)(struct fi_info *);
	struct fi_info *(*dupinfo)(const struct fi_info *);
	int (*fabric)(struct fi_fabric_attr *, struct fid_fabric **, void *);
	const char *(*strerror)(int);
	uint32_t (*version)(void);
	char why[256]; /* why it could not be opened ("" when it was) */
	pthread_once_t once;
} dl = { .once = PTHREAD_ONCE_INIT };

static void *sym(void *lib, const char *name)
{
	void *p = dlsym(lib, name);

	if (!p && !dl.why[0])
		snprintf(dl.why, sizeof(dl.why), "%s has no %s: %s", LIBFABRIC, name, dlerror());
	return p;
}

static void load(void)
{
	void *lib;

	/* read by libfabric when it starts; a value of the user's stays */
	setenv("FI_UNIVERSE_SIZE", RC_OFI_PEERS_TEXT, 0);
	lib = dlopen(LIBFABRIC, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(dl.why, sizeof(dl.why), "cannot open %s (install libfabric1): %s",
			 LIBFABRIC, dlerror());
		return;
	}
	*(void **)&dl.getinfo = sym(lib, "fi_getinfo");
	*(void **)&dl.freeinfo = sym(lib, "fi_freeinfo");
	*(void **)&dl.dupinfo = sym(lib, "fi_dupinfo");
	*(void **)&dl.fabric = sym(lib, "fi_fabric");
	*(void **)&dl.strerror = sym(lib, "fi_strerror");
	*(void **)&dl.version = sym(lib, "fi_version");
	if (dl.why[0]) /* one missing: none is used */
		dl.getinfo = NULL, dl.freeinfo = NULL, dl.dupinfo = NULL, dl.fabric = NULL,
		dl.strerror = NULL, dl.version = NULL;
}

/* 0 once libfabric is open, -FI_ENOSYS when it cannot be */
static int opened(void)
{
	pthread_once(&dl.once, load);
	return dl.getinfo ? 0 : -FI_ENOSYS;
}

int fi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
	       const struct fi_info *hints, struct fi_info **info)
{
	*info = NULL;
	return opened() ? -FI_ENOSYS : dl.getinfo(version, node, service, flags, hints, info);
}

void fi_freeinfo(struct fi_info *info)
{
	if (info && !opened())
		dl.freeinfo(info);
}

struct fi_info *fi_dupinfo(const struct fi_info *info)
{
	return opened() ? NULL : dl.dupinfo(info);
}

int fi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	return opened() ? -FI_ENOSYS : dl.fabric(attr, fabric, context);
}

const char *fi_strerror(int errnum)
{
	return opened() ? dl.why : dl.strerror(errnum);
}

uint32_t fi_version(void)
{
	return opened() ? 0 : dl.version();
}
