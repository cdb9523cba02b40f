// SPDX-License-Identifier: MIT
/*
 * A foreign libfabric client of a region rdmactl serves over libfabric
 * (register --fabric ofi:PROVIDER, a server without a token), written
 * from libfabric's man pages (fi_getinfo(3), fi_endpoint(3), fi_av(3),
 * fi_cq(3), fi_mr(3), fi_msg(3), fi_rma(3)) and the wire contract in
 * rdmactl-register(8), not from rdmactl's code: it includes nothing of
 * rdmactl's.
 *
 *   ofi_client PROVIDER LOCAL_ADDR SERVER_ADDR_HEX REGION OFFSET IN OUT
 *
 * HELLO, WELCOME, then IN's bytes written at OFFSET of REGION with
 * fi_write and read back into OUT with fi_read, 1 MiB at a time; BYE.
 * Exit 0 on success, 1 with a message otherwise.
 * OFI_CLIENT_GUESS_KEY=KEY: no HELLO at all, the data moved with that key
 * (what an intruder would try; the server's keys must not be guessable).
 * OFI_CLIENT_FLOOD=N: N HELLOs with a zero proof and fresh nonces, sent as
 * fast as they go, every other one with immediate data (fi_senddata), and
 * nothing else (a flood of messages that fail).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define PIECE (1 << 20)

static struct fid_fabric *fab;
static struct fid_domain *dom;
static struct fid_ep *ep;
static struct fid_av *av;
static struct fid_cq *cq;
static fi_addr_t server;

static void die(const char *what, int rc)
{
	fprintf(stderr, "ofi_client: %s: %s\n", what, rc ? fi_strerror(rc < 0 ? -rc : rc) : "");
	exit(1);
}

/* Wait for one completion (10 s at most). */
static struct fi_cq_data_entry wait_one(void)
{
	struct fi_cq_data_entry e;
	time_t end = time(NULL) + 10;

	for (;;) {
		ssize_t n = fi_cq_read(cq, &e, 1);

		if (n == 1)
			return e;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = { 0 };

			fi_cq_readerr(cq, &ee, 0);
			die("a completion failed", ee.err);
		}
		if (n != -FI_EAGAIN)
			die("fi_cq_read", (int)n);
		if (time(NULL) > end)
			die("no completion in 10 s", 0);
	}
}

/* A post retried while the provider asks for progress (-FI_EAGAIN), which a
 * read of no completions makes (fi_cq(3)). */
#define POST(call) \
	({ \
		ssize_t rc_; \
		while ((rc_ = (call)) == -FI_EAGAIN) \
			fi_cq_read(cq, NULL, 0); \
		rc_; \
	})

static void open_ep(const char *prov, const char *local)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_DATA, .size = 64 };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	int rc;

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_RMA;
	hints->domain_attr->mr_mode =
		FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(prov);
	if ((rc = fi_getinfo(FI_VERSION(1, 9), local, NULL, FI_SOURCE, hints, &info)))
		die("fi_getinfo", rc);
	if ((rc = fi_fabric(info->fabric_attr, &fab, NULL)) ||
	    (rc = fi_domain(fab, info, &dom, NULL)) || (rc = fi_cq_open(dom, &cqa, &cq, NULL)) ||
	    (rc = fi_av_open(dom, &ava, &av, NULL)) || (rc = fi_endpoint(dom, info, &ep, NULL)) ||
	    (rc = fi_ep_bind(ep, &av->fid, 0)) ||
	    (rc = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)) || (rc = fi_enable(ep)))
		die("opening the endpoint", rc);
	fi_freeinfo(hints);
	fi_freeinfo(info);
}

/* Registered with a key of our choosing where the provider takes ours. */
static struct fid_mr *reg(void *buf, size_t len)
{
	static uint64_t next = 1;
	struct fid_mr *mr;
	int rc = fi_mr_reg(dom, buf, len, FI_SEND | FI_RECV | FI_READ | FI_WRITE, 0, next++, 0, &mr,
			   NULL);

	if (rc)
		die("fi_mr_reg", rc);
	return mr;
}

int main(int argc, char **argv)
{
	static unsigned char msg[1024], ans[1024], buf[PIECE];
	unsigned char addr[64], me[64], nonce[16];
	size_t alen, melen = sizeof(me), n;
	uint64_t off, length = 0, key = 0, base = 0;
	FILE *in, *out;
	int found = 0;

	if (argc != 8)
		die("usage: PROVIDER LOCAL_ADDR SERVER_ADDR_HEX REGION OFFSET IN OUT", 0);
	open_ep(argv[1], argv[2]);
	for (alen = 0; alen < sizeof(addr) && sscanf(argv[3] + 2 * alen, "%2hhx", &addr[alen]) == 1;
	     alen++)
		;
	if (fi_av_insert(av, addr, 1, &server, 0, NULL) != 1)
		die("fi_av_insert", 0);
	fi_getname(&ep->fid, me, &melen);
	struct fid_mr *mmr = reg(msg, sizeof(msg)), *amr = reg(ans, sizeof(ans)),
		      *bmr = reg(buf, sizeof(buf));

	if (getenv("OFI_CLIENT_GUESS_KEY")) {
		/* no handshake: a key guessed, offsets from 0, as an intruder would */
		key = strtoull(getenv("OFI_CLIENT_GUESS_KEY"), NULL, 0);
		length = UINT64_MAX;
		found = 1;
		goto data;
	}
	srand((unsigned)time(NULL) ^ (unsigned)(uintptr_t)&argc);
	for (int i = 0; i < 16; i++)
		nonce[i] = (unsigned char)rand();
	/* HELLO: "RCF1", type 1, role 1, address length, 0, nonce, zero proof, address */
	memcpy(msg, "RCF1", 4);
	msg[4] = 1;
	msg[5] = 1;
	msg[6] = (unsigned char)melen;
	memcpy(msg + 8, nonce, 16);
	memcpy(msg + 40, me, melen);
	if (getenv("OFI_CLIENT_FLOOD")) {
		/* HELLOs with a zero proof and fresh nonces, every other one with
		 * immediate data, one after the other as fast as each send
		 * completes, then nothing more */
		int count = atoi(getenv("OFI_CLIENT_FLOOD"));

		for (int k = 0; k < count; k++) {
			for (int i = 0; i < 16; i++)
				msg[8 + i] = (unsigned char)rand();
			if (k % 2 ? POST(fi_senddata(ep, msg, 40 + melen, fi_mr_desc(mmr), k,
						     server, msg))
				  : POST(fi_send(ep, msg, 40 + melen, fi_mr_desc(mmr), server, msg)))
				die("posting a HELLO", 0);
			wait_one();
		}
		printf("sent %d\n", count);
		return 0;
	}
	if (POST(fi_recv(ep, ans, sizeof(ans), fi_mr_desc(amr), FI_ADDR_UNSPEC, ans)) ||
	    POST(fi_send(ep, msg, 40 + melen, fi_mr_desc(mmr), server, msg)))
		die("posting HELLO", 0);
	for (struct fi_cq_data_entry e = wait_one(); e.op_context != ans; e = wait_one())
		;
	if (memcmp(ans, "RCF1", 4) || ans[4] != 2 || memcmp(ans + 8, nonce, 16))
		die("the answer is not a WELCOME to us", 0);
	for (int i = 0; i < ans[5]; i++) {
		const unsigned char *r = ans + 40 + 64 * i;

		if (strncmp((const char *)r, argv[4], 32))
			continue;
		for (int b = 7; b >= 0; b--) {
			length = length << 8 | r[32 + b];
			key = key << 8 | r[40 + b];
			base = base << 8 | r[48 + b];
		}
		found = 1;
	}
	if (!found)
		die("no such region in the WELCOME", 0);
data:
	off = strtoull(argv[5], NULL, 0);
	if (!(in = fopen(argv[6], "rb")) || !(out = fopen(argv[7], "wb")))
		die("cannot open IN or OUT", 0);
	for (uint64_t at = off; (n = fread(buf, 1, PIECE, in)) > 0; at += n) {
		if (at + n > length)
			die("IN is longer than the region", 0);
		if (POST(fi_write(ep, buf, n, fi_mr_desc(bmr), server, base + at, key, buf)))
			die("fi_write", 0);
		wait_one();
		memset(buf, 0, n);
		if (POST(fi_read(ep, buf, n, fi_mr_desc(bmr), server, base + at, key, buf)))
			die("fi_read", 0);
		wait_one();
		fwrite(buf, 1, n, out);
	}
	fclose(in);
	fclose(out);
	/* BYE: the head alone, type 3, our nonce */
	msg[4] = 3;
	msg[6] = 0;
	if (!POST(fi_send(ep, msg, 40, fi_mr_desc(mmr), server, msg)))
		wait_one();
	fi_close(&mmr->fid);
	fi_close(&amr->fid);
	fi_close(&bmr->fid);
	fi_close(&ep->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&dom->fid);
	fi_close(&fab->fid);
	return 0;
}
