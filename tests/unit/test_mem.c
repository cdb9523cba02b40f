// SPDX-License-Identifier: MIT
/* Memory kinds, access flags and patterns (no device needed). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include <rdmactl/mem.h>
#include <rdmactl/mem_core.h>

#include "check.h"
#include "cmds.h"

int main(void)
{
	unsigned char a[64], b[64];
	char path[] = "/tmp/rdmactl-unit-XXXXXX";
	enum rc_access acc;
	enum rc_mem_kind k;
	struct rc_mem m;
	struct stat st;
	int fd;

	cmds_config_load(); /* RDMACTL_CUDA_LIB, from ctest */
	CHECK(rc_access_parse("ro", &acc) == 0 && acc == RC_ACCESS_RO);
	CHECK(rc_access_parse("atomic", &acc) == 0 && acc == RC_ACCESS_ATOMIC);
	CHECK(rc_access_parse("rwx", &acc) == -EINVAL);
	CHECK(rc_access_ibv(RC_ACCESS_RO) == IBV_ACCESS_REMOTE_READ);
	CHECK(!(rc_access_ibv(RC_ACCESS_RW) & IBV_ACCESS_REMOTE_ATOMIC));
	CHECK(rc_access_ibv(RC_ACCESS_ATOMIC) & IBV_ACCESS_REMOTE_ATOMIC);
	/* Remote write needs local write, says the verbs spec. */
	CHECK(rc_access_ibv(RC_ACCESS_RW) & IBV_ACCESS_LOCAL_WRITE);
	CHECK(rc_mem_kind_parse("hugepage", &k) == 0 && k == RC_MEM_HUGEPAGE);
	CHECK(rc_mem_kind_parse("gpu", &k) == -EINVAL);
	{
		enum rc_mem_reg reg;
		int gpu = -1;

		CHECK(rc_mem_parse("cuda", &k, &gpu) == 0 && k == RC_MEM_CUDA && gpu == 0);
		CHECK(rc_mem_parse("cuda:3", &k, &gpu) == 0 && k == RC_MEM_CUDA && gpu == 3);
		CHECK(rc_mem_parse("host", &k, &gpu) == 0 && k == RC_MEM_HOST && gpu == 0);
		CHECK(rc_mem_parse("cuda:", &k, &gpu) == -EINVAL);
		CHECK(rc_mem_parse("cuda:-1", &k, &gpu) == -EINVAL);
		CHECK(rc_mem_parse("cuda:2x", &k, &gpu) == -EINVAL);
		CHECK(rc_mem_parse("host:1", &k, &gpu) == -EINVAL);
		CHECK(rc_mem_reg_parse("dmabuf", &reg) == 0 && reg == RC_REG_DMABUF);
		CHECK(rc_mem_reg_parse("bounce", &reg) == 0 && reg == RC_REG_BOUNCE);
		CHECK(rc_mem_reg_parse("dma-buf", &reg) == -EINVAL);
		CHECK(!strcmp(rc_mem_reg_name(RC_REG_PEERMEM), "peermem"));
		/* A host region registers as host memory and nothing else. */
		struct rc_mem_spec spec = { .kind = RC_MEM_HOST, .len = 4096, .reg = RC_REG_DMABUF };
		struct rc_mem hm;
		struct ibv_mr *mr = NULL;
		struct rc_err e;

		CHECK(rc_mem_alloc_spec(&hm, &spec, true, NULL) == 0 && hm.want == RC_REG_DMABUF);
		CHECK(rc_mem_register(&hm, NULL, 0, &mr, &e) == -EINVAL && !mr);
		CHECK(strstr(e.msg, "for GPU memory"));
		CHECK(rc_mem_free(&hm) == 0);
		/* Without the toolkit, GPU memory fails plainly; with it, on a
		 * host without the driver or a GPU, it fails naming the cause. */
		spec = (struct rc_mem_spec){ .kind = RC_MEM_CUDA, .len = 4096, .gpu = 0 };
		if (!rc_mem_gpu_built()) {
			CHECK(rc_mem_alloc_spec(&hm, &spec, true, &e) == -ENOTSUP);
			CHECK(strstr(e.msg, "CUDA toolkit"));
		} else if (rc_mem_alloc_spec(&hm, &spec, true, &e) == 0) {
			CHECK(hm.dev_ptr != 0 && hm.gpu == 0); /* a GPU is here */
			rc_mem_free(&hm);
		} else {
			CHECK(e.msg[0] != '\0');
		}
	}

	/* Patterns are repeatable and seekable by offset. */
	CHECK(rc_pattern_valid("random:42") && !rc_pattern_valid("random:") &&
	      !rc_pattern_valid("ones"));
	CHECK(rc_pattern_fill("random:42", 0, a, sizeof(a)) == 0);
	CHECK(rc_pattern_fill("random:42", 13, b, sizeof(b) - 13) == 0);
	CHECK(memcmp(a + 13, b, sizeof(b) - 13) == 0);
	CHECK(rc_pattern_fill("random:43", 0, b, sizeof(b)) == 0);
	CHECK(memcmp(a, b, sizeof(a)) != 0);
	CHECK(rc_pattern_fill("seq", 250, a, 8) == 0);
	CHECK(a[0] == 250 && a[5] == 255 && a[6] == 0);

	/* Host memory, and a file-backed region that persists. */
	CHECK(rc_mem_alloc(&m, RC_MEM_HOST, 0, NULL, true, NULL) == -EINVAL);
	CHECK(rc_mem_alloc(&m, RC_MEM_HOST, 5000, NULL, true, NULL) == 0);
	CHECK(m.len == 5000 && m.map_len == 8192);
	CHECK(rc_mem_free(&m) == 0);
	fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	CHECK(rc_mem_alloc(&m, RC_MEM_FILE, 0, path, true, NULL) == -EINVAL); /* empty */
	CHECK(rc_mem_alloc(&m, RC_MEM_FILE, 12345, path, true, NULL) == 0);
	memset(m.buf, 0x5a, 12345);
	CHECK(rc_mem_sync(&m, NULL) == 0);
	CHECK(rc_mem_free(&m) == 0);
	CHECK(stat(path, &st) == 0 && st.st_size == 12345);
	CHECK(rc_mem_alloc(&m, RC_MEM_FILE, 0, path, false, NULL) == 0);
	CHECK(m.len == 12345 && ((unsigned char *)m.buf)[12344] == 0x5a);
	CHECK(rc_mem_free(&m) == 0);
	CHECK(rc_mem_alloc(&m, RC_MEM_FILE, 20000, path, false, NULL) == -EINVAL);
	/* Writable again: loaded from the file, grown with allocated blocks, and
	 * only what rc_mem_sync wrote back reaches the file. */
	CHECK(rc_mem_alloc(&m, RC_MEM_FILE, 20000, path, true, NULL) == 0);
	CHECK(m.len == 20000 && ((unsigned char *)m.buf)[0] == 0x5a &&
	      ((unsigned char *)m.buf)[12344] == 0x5a && ((unsigned char *)m.buf)[12345] == 0);
	CHECK(stat(path, &st) == 0 && st.st_size == 20000 && st.st_blocks * 512 >= 20000);
	((unsigned char *)m.buf)[19999] = 0xa5;
	{
		unsigned char last = 0;
		int rfd = open(path, O_RDONLY);

		CHECK(pread(rfd, &last, 1, 19999) == 1 && last == 0);
		CHECK(rc_mem_sync(&m, NULL) == 0);
		CHECK(pread(rfd, &last, 1, 19999) == 1 && last == 0xa5);
		/* A part written back reaches the file; bytes outside it do not. */
		((unsigned char *)m.buf)[4096] = 0x11;
		((unsigned char *)m.buf)[8192] = 0x22;
		CHECK(rc_mem_sync_range(&m, 4096, 4096, NULL) == 0);
		CHECK(pread(rfd, &last, 1, 4096) == 1 && last == 0x11);
		CHECK(pread(rfd, &last, 1, 8192) == 1 && last == 0x5a);
		CHECK(rc_mem_sync_range(&m, 8192, 20000 - 8192, NULL) == 0);
		CHECK(pread(rfd, &last, 1, 8192) == 1 && last == 0x22);
		CHECK(rc_mem_sync_range(&m, 8192, 20000, NULL) == -EINVAL);
		close(rfd);
	}
	CHECK(rc_mem_free(&m) == 0);
	unlink(path);
	CHECK(rc_mem_alloc(&m, RC_MEM_FILE, 0, "/nonexistent/x", false, NULL) == -ENOENT);

	/* rc_mem_write and rc_mem_read: host memory, bounds checked. */
	{
		unsigned char in[64], out[64];

		for (int i = 0; i < 64; i++)
			in[i] = (unsigned char)(i * 7 + 1);
		CHECK(rc_mem_alloc(&m, RC_MEM_HOST, 4096, NULL, true, NULL) == 0);
		CHECK(rc_mem_write(&m, 4032, in, 64, NULL) == 0);
		CHECK(rc_mem_read(&m, 4032, out, 64, NULL) == 0 && memcmp(in, out, 64) == 0);
		CHECK(((unsigned char *)m.buf)[4095] == in[63]);
		CHECK(rc_mem_write(&m, 4033, in, 64, NULL) == -EINVAL);
		CHECK(rc_mem_read(&m, 4097, out, 0, NULL) == -EINVAL);
		CHECK(rc_mem_free(&m) == 0);
	}

	/* GPU memory through the fake driver (ctest sets RDMACTL_CUDA_LIB):
	 * what rc_mem_write put on the "GPU" comes back through rc_mem_read,
	 * the CPU never touching device memory (it is PROT_NONE there); no
	 * such GPU, and no driver, are named. */
	if (rc_mem_gpu_built() && getenv("RDMACTL_CUDA_LIB")) {
		unsigned char in[300], out[300];
		struct rc_mem_spec spec = { .kind = RC_MEM_CUDA, .len = 100000, .gpu = 0 };
		struct rc_err e;

		setenv("RDMACTL_FAKE_CUDA_PROTECT", "1", 1);
		setenv("RDMACTL_FAKE_CUDA_GPUS", "2", 1);
		for (int i = 0; i < 300; i++)
			in[i] = (unsigned char)(i * 13 + 5);
		CHECK(rc_mem_gpu_check(1, NULL) == 0);
		CHECK(rc_mem_gpu_check(2, &e) == -ENODEV &&
		      strstr(e.msg, "no GPU 2: CUDA sees 2 GPUs"));
		CHECK(rc_mem_alloc_spec(&m, &spec, true, NULL) == 0);
		CHECK(m.kind == RC_MEM_CUDA && m.dev_ptr && m.dmabuf_fd == -1 &&
		      strstr(m.reg_notes, "dma-buf: the export was refused"));
		CHECK(rc_mem_write(&m, 99700, in, 300, NULL) == 0);
		CHECK(rc_mem_write(&m, 0, in, 300, NULL) == 0);
		memset(out, 0, sizeof(out));
		CHECK(rc_mem_read(&m, 99700, out, 300, NULL) == 0 && memcmp(in, out, 300) == 0);
		CHECK(rc_mem_read(&m, 0, out, 300, NULL) == 0 && memcmp(in, out, 300) == 0);
		CHECK(rc_mem_write(&m, 99701, in, 300, NULL) == -EINVAL);
		CHECK(rc_mem_free(&m) == 0);
		setenv("RDMACTL_CUDA_LIB", "/nonexistent/libcuda.so.1", 1);
		cmds_config_load();
		CHECK(rc_mem_gpu_check(0, &e) == -ENODEV &&
		      strstr(e.msg, "GPU memory needs the NVIDIA driver, which this host lacks"));
	} else if (!rc_mem_gpu_built()) {
		struct rc_err e;

		CHECK(rc_mem_gpu_check(0, &e) == -ENOTSUP &&
		      strstr(e.msg, "built with the CUDA toolkit"));
	}
	CHECK_DONE();
}
