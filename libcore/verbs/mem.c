// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include <rdmactl/mem.h>
#include <rdmactl/parse.h>

#include "gpu.h"

#define HUGEPAGE_SIZE (2UL << 20)

static const char *const kind_names[] = { "host", "hugepage", "file", "cuda" };
static const char *const access_names[] = { "ro", "rw", "atomic" };

const char *rc_mem_kind_name(enum rc_mem_kind k)
{
	return (unsigned)k < 4 ? kind_names[k] : "?";
}

int rc_mem_kind_parse(const char *s, enum rc_mem_kind *k)
{
	for (int i = 0; i < 4; i++)
		if (!strcmp(s, kind_names[i])) {
			*k = (enum rc_mem_kind)i;
			return 0;
		}
	return -EINVAL;
}

const char *rc_access_name(enum rc_access a)
{
	return (unsigned)a < 3 ? access_names[a] : "?";
}

int rc_access_parse(const char *s, enum rc_access *a)
{
	for (int i = 0; i < 3; i++)
		if (!strcmp(s, access_names[i])) {
			*a = (enum rc_access)i;
			return 0;
		}
	return -EINVAL;
}

int rc_access_ibv(enum rc_access a)
{
	switch (a) {
	case RC_ACCESS_RO:
		return IBV_ACCESS_REMOTE_READ;
	case RC_ACCESS_RW:
		return IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
		       IBV_ACCESS_LOCAL_WRITE;
	case RC_ACCESS_ATOMIC:
		return IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	}
	return 0;
}

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

static int map_file(struct rc_mem *m, size_t len, const char *path, bool writable,
		    struct rc_err *err)
{
	struct stat st;
	int fd = open(path, writable ? O_RDWR | O_CREAT : O_RDONLY | O_CLOEXEC, 0644);

	if (fd < 0)
		return rc_err_set(err, errno, "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return rc_err_set(err, EINVAL, "'%s' is not a regular file", path);
	}
	if (len == 0)
		len = (size_t)st.st_size;
	if (len == 0) {
		close(fd);
		return rc_err_set(err, EINVAL, "'%s' is empty: give --size to grow it", path);
	}
	if ((off_t)len > st.st_size) {
		if (!writable) {
			close(fd);
			return rc_err_set(err, EINVAL,
					  "'%s' holds %lld bytes, fewer than the %zu asked for",
					  path, (long long)st.st_size, len);
		}
		if (ftruncate(fd, (off_t)len) < 0) {
			int e = errno;

			close(fd);
			return rc_err_set(err, e, "cannot grow '%s' to %zu bytes: %s", path, len,
					  strerror(e));
		}
	}
	m->map_len = round_up(len, (size_t)sysconf(_SC_PAGESIZE));
	m->buf = mmap(NULL, m->map_len, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED,
		      fd, 0);
	if (m->buf == MAP_FAILED) {
		int e = errno;

		close(fd);
		m->buf = NULL;
		return rc_err_set(err, e, "cannot map '%s': %s", path, strerror(e));
	}
	m->fd = fd;
	m->len = len;
	return 0;
}

int rc_mem_alloc(struct rc_mem *m, enum rc_mem_kind kind, size_t len, const char *path,
		 bool writable, struct rc_err *err)
{
	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->fd = -1;
	m->dmabuf_fd = -1;
	m->writable = writable;

	if (kind == RC_MEM_FILE)
		return map_file(m, len, path, writable, err);
	if (len == 0)
		return rc_err_set(err, EINVAL, "a region needs a size greater than 0");
	if (kind == RC_MEM_CUDA)
		return rc_gpu_alloc(m, len, err);

	int flags = MAP_PRIVATE | MAP_ANONYMOUS;

	m->map_len = round_up(len, (size_t)sysconf(_SC_PAGESIZE));
	if (kind == RC_MEM_HUGEPAGE) {
		flags |= MAP_HUGETLB;
		m->map_len = round_up(len, HUGEPAGE_SIZE);
	}
	m->buf = mmap(NULL, m->map_len, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (m->buf == MAP_FAILED) {
		int e = errno;

		m->buf = NULL;
		if (kind == RC_MEM_HUGEPAGE)
			return rc_err_set(err, e,
					  "cannot allocate %zu bytes of 2 MiB hugepages: %s "
					  "(are hugepages configured? see /proc/sys/vm/nr_hugepages)",
					  m->map_len, strerror(e));
		return rc_err_set(err, e, "cannot allocate %zu bytes: %s", len, strerror(e));
	}
	m->len = len;
	return 0;
}

int rc_mem_sync(struct rc_mem *m, struct rc_err *err)
{
	if (m->kind != RC_MEM_FILE || !m->buf || !m->writable)
		return 0;
	if (msync(m->buf, m->map_len, MS_SYNC) < 0)
		return rc_err_set(err, errno, "msync failed: %s", strerror(errno));
	if (fsync(m->fd) < 0)
		return rc_err_set(err, errno, "fsync failed: %s", strerror(errno));
	return 0;
}

int rc_mem_free(struct rc_mem *m)
{
	int rc = 0;

	if (m->kind == RC_MEM_CUDA) {
		rc = rc_gpu_free(m);
	} else if (m->buf && munmap(m->buf, m->map_len) < 0) {
		rc = -errno;
	}
	if (m->fd >= 0 && close(m->fd) < 0 && !rc)
		rc = -errno;
	m->buf = NULL;
	m->fd = -1;
	return rc;
}

/* xorshift64*: fast, repeatable, and seekable per 8-byte word. */
static uint64_t mix(uint64_t seed, uint64_t word)
{
	uint64_t x = seed ^ (word * 0x9E3779B97F4A7C15ULL);

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	return x * 0x2545F4914F6CDD1DULL;
}

bool rc_pattern_valid(const char *p)
{
	uint64_t seed;

	if (!strcmp(p, "zero") || !strcmp(p, "seq"))
		return true;
	return !strncmp(p, "random:", 7) && !rc_parse_u64(p + 7, &seed);
}

int rc_pattern_fill(const char *p, uint64_t offset, void *buf, size_t len)
{
	unsigned char *b = buf;
	uint64_t seed;

	if (!strcmp(p, "zero")) {
		memset(buf, 0, len);
	} else if (!strcmp(p, "seq")) {
		for (size_t i = 0; i < len; i++)
			b[i] = (unsigned char)(offset + i);
	} else if (!strncmp(p, "random:", 7) && !rc_parse_u64(p + 7, &seed)) {
		uint64_t w = mix(seed, offset / 8);

		for (size_t i = 0; i < len; i++) {
			uint64_t pos = offset + i;

			if (pos % 8 == 0)
				w = mix(seed, pos / 8);
			b[i] = (unsigned char)(w >> (8 * (pos % 8)));
		}
	} else {
		return -EINVAL;
	}
	return 0;
}
