// SPDX-License-Identifier: MIT
/*
 * Memory to register: host, hugepage, file-backed, GPU. GPU memory is
 * registered by the first of three paths that works, and the region says
 * which one ran: dma-buf (ibv_reg_dmabuf_mr: the NIC reads and writes the
 * GPU itself, no nvidia-peermem), peer memory (ibv_reg_mr of the device
 * pointer, through nvidia-peermem), or a pinned host bounce buffer (the
 * NIC reaches a host copy; no GPUDirect at all).
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include <rdmactl/mem.h>
#include <rdmactl/parse.h>
#include <rdmactl/mem_core.h>

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
		return IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	case RC_ACCESS_ATOMIC:
		return IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE |
		       IBV_ACCESS_REMOTE_ATOMIC;
	}
	return 0;
}

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* Read (or write back) len bytes at offset off, whole, through short counts
 * and interruptions. Returns 0 or -errno. */
static int file_io(int fd, void *buf, size_t off, size_t len, bool write_back)
{
	size_t done = 0;

	buf = (char *)buf + off;

	while (done < len) {
		ssize_t n =
			write_back ? pwrite(fd, (char *)buf + done, len - done, (off_t)(off + done))
				   : pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO; /* the file shrank under us */
		done += (size_t)n;
	}
	return 0;
}

/*
 * A file-backed region is not a shared mapping of the file: kernels refuse
 * a writable long-term pin (what ibv_reg_mr takes) of a MAP_SHARED file
 * mapping on ext4, xfs or btrfs. A writable region is anonymous memory
 * loaded from the file and written back by rc_mem_sync (pwrite, fsync); a
 * read-only one is a private read-only mapping, which any file system pins.
 * Growing the file allocates its blocks, so a full disk is ENOSPC here and
 * not a failed write-back later.
 */
static int map_file(struct rc_mem *m, size_t len, const char *path, bool writable,
		    struct rc_err *err)
{
	struct stat st;
	int fd = open(path, writable ? O_RDWR | O_CREAT | O_CLOEXEC : O_RDONLY | O_CLOEXEC, 0644);
	int e;

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
		return rc_err_opt(err, EINVAL, "'%s' is empty: give {size} to grow it", path);
	}
	if ((off_t)len > st.st_size) {
		if (!writable) {
			close(fd);
			return rc_err_set(err, EINVAL,
					  "'%s' holds %lld bytes, fewer than the %zu asked for",
					  path, (long long)st.st_size, len);
		}
		e = posix_fallocate(fd, 0, (off_t)len);
		if (e) {
			close(fd);
			if (e == ENOSPC)
				return rc_err_set(err, e,
						  "no space to grow '%s' to %zu bytes: "
						  "its file system is full",
						  path, len);
			return rc_err_set(err, e, "cannot grow '%s' to %zu bytes: %s", path, len,
					  strerror(e));
		}
	}
	m->map_len = round_up(len, (size_t)sysconf(_SC_PAGESIZE));
	if (writable)
		m->buf = mmap(NULL, m->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			      -1, 0);
	else
		m->buf = mmap(NULL, m->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m->buf == MAP_FAILED) {
		e = errno;
		close(fd);
		m->buf = NULL;
		return rc_err_set(err, e, "cannot map '%s': %s", path, strerror(e));
	}
	if (writable && (e = file_io(fd, m->buf, 0, len, false))) {
		munmap(m->buf, m->map_len);
		m->buf = NULL;
		close(fd);
		return rc_err_set(err, -e, "cannot read '%s': %s", path, strerror(-e));
	}
	m->fd = fd;
	m->len = len;
	return 0;
}

static const char *const reg_names[] = { "auto", "host", "dmabuf", "peermem", "bounce" };

const char *rc_mem_reg_name(enum rc_mem_reg r)
{
	return (unsigned)r < 5 ? reg_names[r] : "?";
}

int rc_mem_reg_parse(const char *s, enum rc_mem_reg *r)
{
	for (int i = 0; i < 5; i++)
		if (!strcmp(s, reg_names[i])) {
			*r = (enum rc_mem_reg)i;
			return 0;
		}
	return -EINVAL;
}

bool rc_mem_gpu_built(void)
{
	return RDMACTL_HAVE_CUDA != 0;
}

int rc_mem_parse(const char *s, enum rc_mem_kind *k, int *gpu)
{
	uint64_t n;

	*gpu = 0;
	if (!strncmp(s, "cuda:", 5)) {
		if (rc_parse_u64(s + 5, &n) || n > 1023 || s[5] == '+' || s[5] == '-')
			return -EINVAL;
		*gpu = (int)n;
		*k = RC_MEM_CUDA;
		return 0;
	}
	return rc_mem_kind_parse(s, k);
}

int rc_mem_alloc(struct rc_mem *m, enum rc_mem_kind kind, size_t len, const char *path,
		 bool writable, struct rc_err *err)
{
	struct rc_mem_spec spec = { .kind = kind, .len = len, .path = path };

	return rc_mem_alloc_spec(m, &spec, writable, err);
}

int rc_mem_alloc_spec(struct rc_mem *m, const struct rc_mem_spec *spec, bool writable,
		      struct rc_err *err)
{
	enum rc_mem_kind kind = spec->kind;
	size_t len = spec->len;

	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->fd = -1;
	m->dmabuf_fd = -1;
	m->writable = writable;
	m->want = spec->reg;
	m->gpu = spec->gpu;

	if (kind == RC_MEM_FILE)
		return map_file(m, len, spec->path, writable, err);
	if (len == 0)
		return rc_err_set(err, EINVAL, "a region needs a size greater than 0");
	if (kind == RC_MEM_CUDA)
		return rc_gpu_alloc(m, spec->gpu, len, err);

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

/* Append "what: why" to the notes of the paths tried. */
static void note(struct rc_mem *m, const char *what, int e, const char *hint)
{
	size_t l = strlen(m->reg_notes);

	snprintf(m->reg_notes + l, sizeof(m->reg_notes) - l, "%s%s: %s%s", l ? "; " : "", what,
		 strerror(e), hint);
}

static int reg_gpu(struct rc_mem *m, struct ibv_pd *pd, int access, struct ibv_mr **out,
		   struct rc_err *err)
{
	bool any = m->want == RC_REG_AUTO;
	struct ibv_mr *mr = NULL;
	int e = ENOTSUP;

	/* Registered before (another PD, or another access): the same path
	 * again, the same bounce buffer, the notes of the first time kept. */
	if (m->reg == RC_REG_DMABUF || m->reg == RC_REG_PEERMEM || m->reg == RC_REG_BOUNCE) {
		if (m->reg == RC_REG_DMABUF)
			mr = ibv_reg_dmabuf_mr(pd, 0, m->len, m->dev_ptr, m->dmabuf_fd, access);
		else
			mr = ibv_reg_mr(pd,
					m->reg == RC_REG_BOUNCE ? m->bounce
								: (void *)(uintptr_t)m->dev_ptr,
					m->len, access);
		if (!mr)
			return rc_err_set(err, errno, "cannot register GPU %d memory again (%s): %s",
					  m->gpu, rc_mem_reg_name(m->reg), strerror(errno));
		*out = mr;
		return 0;
	}
	if (any || m->want == RC_REG_DMABUF) {
		if (m->dmabuf_fd < 0) {
			if (!m->reg_notes[0])
				snprintf(m->reg_notes, sizeof(m->reg_notes),
					 "dma-buf: not exported");
		} else if ((mr = ibv_reg_dmabuf_mr(pd, 0, m->len, m->dev_ptr, m->dmabuf_fd,
						   access))) {
			m->reg = RC_REG_DMABUF;
			m->mr_addr = m->dev_ptr;
		} else {
			e = errno;
			note(m, "dma-buf: ibv_reg_dmabuf_mr", e, "");
		}
	} else {
		m->reg_notes[0] = '\0';
	}
	if (!mr && (any || m->want == RC_REG_PEERMEM)) {
		mr = ibv_reg_mr(pd, (void *)(uintptr_t)m->dev_ptr, m->len, access);
		if (mr) {
			m->reg = RC_REG_PEERMEM;
			m->mr_addr = m->dev_ptr;
		} else {
			e = errno;
			note(m, "peer memory: ibv_reg_mr", e, " (is nvidia-peermem loaded?)");
		}
	}
	if (!mr && (any || m->want == RC_REG_BOUNCE)) {
		void *b = mmap(NULL, m->map_len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct rc_err ce;

		if (b == MAP_FAILED) {
			e = errno;
			note(m, "bounce buffer: mmap", e, "");
		} else if (rc_gpu_copy(m, 0, b, m->len, false, &ce)) {
			char why[160];

			e = EIO;
			snprintf(why, sizeof(why), " (%.150s)", ce.msg);
			note(m, "bounce buffer: copy from the GPU", e, why);
			munmap(b, m->map_len);
		} else if (!(mr = ibv_reg_mr(pd, b, m->len, access))) {
			e = errno;
			note(m, "bounce buffer: ibv_reg_mr", e, "");
			munmap(b, m->map_len);
		} else {
			m->bounce = b;
			m->reg = RC_REG_BOUNCE;
			m->mr_addr = (uintptr_t)b;
		}
	}
	if (!mr)
		return rc_err_set(err, e, "cannot register GPU %d memory (%s): %s", m->gpu,
				  any ? "tried dma-buf, peer memory, bounce buffer"
				      : rc_mem_reg_name(m->want),
				  m->reg_notes[0] ? m->reg_notes : strerror(e));
	*out = mr;
	return 0;
}

int rc_mem_register(struct rc_mem *m, struct ibv_pd *pd, int access, struct ibv_mr **out,
		    struct rc_err *err)
{
	struct ibv_mr *mr;

	*out = NULL;
	if (m->kind == RC_MEM_CUDA)
		return reg_gpu(m, pd, access, out, err);
	if (m->want != RC_REG_AUTO && m->want != RC_REG_HOST)
		return rc_err_set(err, EINVAL, "%s registration is for GPU memory, not %s",
				  rc_mem_reg_name(m->want), rc_mem_kind_name(m->kind));
	mr = ibv_reg_mr(pd, m->buf, m->len, access);
	if (!mr)
		return rc_err_set(err, errno, "ibv_reg_mr: %s", strerror(errno));
	m->reg = RC_REG_HOST;
	m->mr_addr = (uintptr_t)m->buf;
	*out = mr;
	return 0;
}

int rc_mem_sync(struct rc_mem *m, struct rc_err *err)
{
	if (m->kind == RC_MEM_CUDA && m->bounce && m->writable)
		return rc_gpu_copy(m, 0, m->bounce, m->len, true, err);
	return rc_mem_sync_range(m, 0, m->len, err);
}

int rc_mem_sync_range(struct rc_mem *m, size_t off, size_t len, struct rc_err *err)
{
	if (m->kind != RC_MEM_FILE || !m->buf || !m->writable)
		return 0;
	if (off > m->len || len > m->len - off)
		return rc_err_set(err, EINVAL,
				  "cannot write back %zu bytes at %zu of a %zu-byte region", len,
				  off, m->len);
	int e = file_io(m->fd, m->buf, off, len, true);

	if (e)
		return rc_err_set(err, -e, "cannot write the region back to its file: %s",
				  strerror(-e));
	if (off + len < m->len)
		return 0;
	if (fsync(m->fd) < 0)
		return rc_err_set(err, errno, "cannot flush the region's file to disk: %s",
				  strerror(errno));
	return 0;
}

int rc_mem_read(struct rc_mem *m, size_t off, void *host, size_t len, struct rc_err *err)
{
	if (off > m->len || len > m->len - off)
		return rc_err_set(err, EINVAL, "cannot read %zu bytes at %zu of a %zu-byte region",
				  len, off, m->len);
	if (m->kind == RC_MEM_CUDA && !m->bounce)
		return rc_gpu_copy(m, off, host, len, false, err);
	memcpy(host, (const char *)(m->kind == RC_MEM_CUDA ? m->bounce : m->buf) + off, len);
	return 0;
}

void *rc_mem_host_copy(size_t len, const char *what, struct rc_err *err)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED)
		return p;
	rc_err_set(err, errno, "cannot allocate a host copy of %zu bytes of %s: %s", len, what,
		   strerror(errno));
	return NULL;
}

void rc_mem_host_copy_free(void *copy, size_t len)
{
	if (copy)
		munmap(copy, len);
}

int rc_mem_write(struct rc_mem *m, size_t off, const void *host, size_t len, struct rc_err *err)
{
	if (off > m->len || len > m->len - off)
		return rc_err_set(err, EINVAL, "cannot write %zu bytes at %zu of a %zu-byte region",
				  len, off, m->len);
	if (m->kind == RC_MEM_CUDA && !m->bounce)
		return rc_gpu_copy(m, off, (void *)(uintptr_t)host, len, true, err);
	memcpy((char *)(m->kind == RC_MEM_CUDA ? m->bounce : m->buf) + off, host, len);
	return 0;
}

int rc_mem_gpu_check(int gpu, struct rc_err *err)
{
	return rc_gpu_probe(gpu, err);
}

int rc_mem_free(struct rc_mem *m)
{
	int rc = 0;

	if (m->kind == RC_MEM_CUDA) {
		if (m->bounce && munmap(m->bounce, m->map_len) < 0)
			rc = -errno;
		m->bounce = NULL;
		if (rc_gpu_free(m) && !rc)
			rc = -EIO;
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
static inline uint64_t mix(uint64_t seed, uint64_t word)
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
		/* byte i is (offset + i) mod 256: one period, copied */
		unsigned char period[256];

		for (size_t i = 0; i < sizeof(period); i++)
			period[i] = (unsigned char)(offset + i);
		for (size_t i = 0; i < len; i += sizeof(period))
			memcpy(b + i, period, len - i < sizeof(period) ? len - i : sizeof(period));
	} else if (!strncmp(p, "random:", 7) && !rc_parse_u64(p + 7, &seed)) {
		/* byte i is byte (offset + i) % 8 of word (offset + i) / 8, little
		 * endian: the head and tail byte by byte, whole words between */
		uint64_t pos = offset;
		size_t i = 0;

		for (; i < len && pos % 8; i++, pos++)
			b[i] = (unsigned char)(mix(seed, pos / 8) >> (8 * (pos % 8)));
		for (; len - i >= 8; i += 8, pos += 8) {
			uint64_t w = htole64(mix(seed, pos / 8));

			memcpy(b + i, &w, 8);
		}
		for (; i < len; i++, pos++)
			b[i] = (unsigned char)(mix(seed, pos / 8) >> (8 * (pos % 8)));
	} else {
		return -EINVAL;
	}
	return 0;
}
