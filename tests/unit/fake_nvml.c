// SPDX-License-Identifier: MIT
/*
 * A fake NVML for the tests: the few calls rdmactl makes, answered from a
 * text file that $RDMACTL_FAKE_NVML names, so that NVML indices, names,
 * UUIDs and NVLink counts are tested without a GPU. Point rdmactl at it
 * with RDMACTL_NVML_LIB=.../libfakenvml.so. The file, one fact a line:
 *   gpu BUSID INDEX UUID NAME...
 *   link BUSID LINK REMOTE_BUSID gpu|switch   (an active NVLink)
 * Bus ids are NVML's (00000000:3B:00.0); lookups compare them as numbers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GPUS 64
#define MAX_LINKS 18

enum {
	OK = 0,
	ERR_INVALID = 2,
	ERR_NOT_SUPPORTED = 3,
	ERR_NOT_FOUND = 6,
	ERR_UNINIT = 1,
	ERR_LIB = 12
};

struct pci_info { /* nvmlPciInfo_t */
	char bus_id_legacy[16];
	unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
};

struct fgpu {
	unsigned long bdf[4];
	char bus_id[32], uuid[96], name[96];
	unsigned int index;
	int nlinks;
	struct {
		int up;
		int is_switch;
		char remote[32];
	} link[MAX_LINKS];
};

static struct fgpu gpus[MAX_GPUS];
static int ngpus, inited;

/* The entry points NVML exports, declared here for -Wmissing-prototypes. */
int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetCount_v2(unsigned int *n);
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev);
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, void **dev);
int nvmlDeviceGetName(void *dev, char *buf, unsigned int len);
int nvmlDeviceGetUUID(void *dev, char *buf, unsigned int len);
int nvmlDeviceGetIndex(void *dev, unsigned int *index);
int nvmlDeviceGetNvLinkState(void *dev, unsigned int link, int *active);
int nvmlDeviceGetNvLinkRemotePciInfo_v2(void *dev, unsigned int link, struct pci_info *pci);
int nvmlDeviceGetNvLinkRemoteDeviceType(void *dev, unsigned int link, int *type);

static int parse_bdf(const char *s, unsigned long v[4])
{
	return sscanf(s, "%lx:%lx:%lx.%lx", &v[0], &v[1], &v[2], &v[3]) == 4 ? 0 : -1;
}

static struct fgpu *find(const char *bus_id)
{
	unsigned long v[4];

	if (parse_bdf(bus_id, v))
		return NULL;
	for (int i = 0; i < ngpus; i++)
		if (!memcmp(v, gpus[i].bdf, sizeof(v)))
			return &gpus[i];
	return NULL;
}

int nvmlInit_v2(void)
{
	const char *path = getenv("RDMACTL_FAKE_NVML");
	char line[512];
	FILE *fp;

	ngpus = 0;
	if (!path || !(fp = fopen(path, "r")))
		return ERR_LIB;
	while (fgets(line, sizeof(line), fp)) {
		char a[32], b[32], kind[16];
		unsigned int n;
		int off = 0;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "gpu %31s %u %*s %n", a, &n, &off) == 2 && off && ngpus < MAX_GPUS) {
			struct fgpu *g = &gpus[ngpus];

			memset(g, 0, sizeof(*g));
			if (parse_bdf(a, g->bdf))
				continue;
			snprintf(g->bus_id, sizeof(g->bus_id), "%s", a);
			sscanf(line, "gpu %*s %*u %95s", g->uuid);
			snprintf(g->name, sizeof(g->name), "%s", line + off);
			g->index = n;
			ngpus++;
		} else if (sscanf(line, "link %31s %u %31s %15s", a, &n, b, kind) == 4 &&
			   n < MAX_LINKS) {
			struct fgpu *g = find(a);

			if (!g)
				continue;
			g->link[n].up = 1;
			g->link[n].is_switch = !strcmp(kind, "switch");
			snprintf(g->link[n].remote, sizeof(g->link[n].remote), "%s", b);
			if ((int)n + 1 > g->nlinks)
				g->nlinks = (int)n + 1;
		}
	}
	fclose(fp);
	inited = 1;
	return OK;
}

int nvmlShutdown(void)
{
	inited = 0;
	return OK;
}

int nvmlDeviceGetCount_v2(unsigned int *n)
{
	if (!inited)
		return ERR_UNINIT;
	*n = (unsigned int)ngpus;
	return OK;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev)
{
	for (int k = 0; inited && k < ngpus; k++)
		if (gpus[k].index == i) {
			*dev = &gpus[k];
			return OK;
		}
	return inited ? ERR_INVALID : ERR_UNINIT;
}

int nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, void **dev)
{
	struct fgpu *g = inited ? find(bus_id) : NULL;

	if (!g)
		return inited ? ERR_NOT_FOUND : ERR_UNINIT;
	*dev = g;
	return OK;
}

int nvmlDeviceGetName(void *dev, char *buf, unsigned int len)
{
	snprintf(buf, len, "%s", ((struct fgpu *)dev)->name);
	return OK;
}

int nvmlDeviceGetUUID(void *dev, char *buf, unsigned int len)
{
	snprintf(buf, len, "%s", ((struct fgpu *)dev)->uuid);
	return OK;
}

int nvmlDeviceGetIndex(void *dev, unsigned int *index)
{
	*index = ((struct fgpu *)dev)->index;
	return OK;
}

int nvmlDeviceGetNvLinkState(void *dev, unsigned int link, int *active)
{
	struct fgpu *g = dev;

	if (!g->nlinks)
		return ERR_NOT_SUPPORTED;
	if (link >= MAX_LINKS)
		return ERR_INVALID;
	*active = g->link[link].up;
	return OK;
}

int nvmlDeviceGetNvLinkRemotePciInfo_v2(void *dev, unsigned int link, struct pci_info *pci)
{
	struct fgpu *g = dev;

	if (link >= MAX_LINKS || !g->link[link].up)
		return ERR_INVALID;
	memset(pci, 0, sizeof(*pci));
	snprintf(pci->bus_id, sizeof(pci->bus_id), "%s", g->link[link].remote);
	return OK;
}

int nvmlDeviceGetNvLinkRemoteDeviceType(void *dev, unsigned int link, int *type)
{
	struct fgpu *g = dev;

	if (link >= MAX_LINKS || !g->link[link].up)
		return ERR_INVALID;
	*type = g->link[link].is_switch ? 2 : 0;
	return OK;
}
