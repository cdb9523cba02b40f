// SPDX-License-Identifier: MIT
/*
 * A foreign client: plain librdmacm and libibverbs, nothing of rdmactl.
 * It proves the wire contract of `rdmactl register`: connect with rdma_cm
 * (RC, RDMA_PS_TCP, initiator depth and responder resources of 1), the
 * token as private data, then RDMA WRITE (or READ) with addr and rkey from
 * the JSON descriptor.
 *
 *   foreign_client write|read HOST PORT ADDR RKEY OFFSET LENGTH [TOKEN]
 *
 * write: fills LENGTH bytes with "foreign:" followed by a byte counter and
 * writes them at ADDR+OFFSET; read: reads them back and prints them as hex.
 * With FOREIGN_CLIENT_BIND=ADDR it connects from that address; with
 * FOREIGN_CLIENT_HOLD=SECONDS it stays connected that long afterwards.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

static int die(const char *what)
{
	fprintf(stderr, "foreign_client: %s: %s\n", what, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res, *src = NULL;
	struct ibv_qp_init_attr attr = { .cap = { .max_send_wr = 4, .max_recv_wr = 1,
						  .max_send_sge = 1, .max_recv_sge = 1 },
					 .sq_sig_all = 1 };
	struct rdma_conn_param cp = { .initiator_depth = 1, .responder_resources = 1,
				      .retry_count = 7, .rnr_retry_count = 7 };
	struct rdma_cm_id *id;
	int rc;
	struct ibv_wc wc;
	struct ibv_mr *mr;
	uint64_t raddr, off;
	uint32_t rkey;
	size_t len;
	char *buf;
	bool wr;

	if (argc < 8 || argc > 9) {
		fprintf(stderr, "usage: foreign_client write|read HOST PORT ADDR RKEY OFFSET LENGTH [TOKEN]\n");
		return 2;
	}
	wr = !strcmp(argv[1], "write");
	raddr = strtoull(argv[4], NULL, 0);
	rkey = (uint32_t)strtoul(argv[5], NULL, 0);
	off = strtoull(argv[6], NULL, 0);
	len = strtoull(argv[7], NULL, 0);
	if (argc == 9) {
		cp.private_data = argv[8];
		cp.private_data_len = (uint8_t)strlen(argv[8]);
	}
	if (getenv("FOREIGN_CLIENT_BIND")) {
		hints.ai_flags = RAI_PASSIVE;
		if (rdma_getaddrinfo(getenv("FOREIGN_CLIENT_BIND"), NULL, &hints, &src))
			return die("rdma_getaddrinfo (bind)");
		hints.ai_flags = 0;
		hints.ai_src_addr = src->ai_src_addr;
		hints.ai_src_len = src->ai_src_len;
	}
	rc = rdma_getaddrinfo(argv[2], argv[3], &hints, &res);
	if (src)
		rdma_freeaddrinfo(src);
	if (rc)
		return die("rdma_getaddrinfo");
	rc = rdma_create_ep(&id, res, NULL, &attr);
	rdma_freeaddrinfo(res);
	if (rc)
		return die("rdma_create_ep");
	/* From here every way out releases what was set up (reverse order). */
	rc = 1;
	if (rdma_connect(id, &cp)) {
		die("rdma_connect");
		goto out_ep;
	}
	buf = calloc(1, len);
	if (!buf) {
		die("calloc");
		goto out_conn;
	}
	if (wr) {
		for (size_t i = 0; i < len; i++)
			buf[i] = i < 8 ? "foreign:"[i] : (char)(i & 0xff);
	}
	mr = rdma_reg_write(id, buf, len); /* local write access: the READ lands here */
	if (!mr) {
		die("rdma_reg_write");
		goto out_buf;
	}
	if (wr ? rdma_post_write(id, NULL, buf, len, mr, IBV_SEND_SIGNALED, raddr + off, rkey)
	       : rdma_post_read(id, NULL, buf, len, mr, IBV_SEND_SIGNALED, raddr + off, rkey)) {
		die("rdma_post");
		goto out_mr;
	}
	if (rdma_get_send_comp(id, &wc) <= 0) {
		die("rdma_get_send_comp");
		goto out_mr;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "foreign_client: RDMA %s failed: %s\n", wr ? "WRITE" : "READ",
			ibv_wc_status_str(wc.status));
		goto out_mr;
	}
	if (!wr) {
		for (size_t i = 0; i < len; i++)
			printf("%02x", (unsigned char)buf[i]);
		printf("\n");
	}
	if (getenv("FOREIGN_CLIENT_HOLD"))
		sleep((unsigned)atoi(getenv("FOREIGN_CLIENT_HOLD")));
	rc = 0;
out_mr:
	rdma_dereg_mr(mr);
out_buf:
	free(buf);
out_conn:
	rdma_disconnect(id);
out_ep:
	rdma_destroy_ep(id);
	return rc;
}
