// SPDX-License-Identifier: MIT
/*
 * The libfabric control plane's wire (libcore/ofi/fab_wire.c): a message's
 * head (HELLO, WELCOME, BYE), a WELCOME's region, the hex of a descriptor's
 * address, nonce and token check, and --fabric's words, decoded from any
 * bytes. A head that decodes encodes back to the same bytes; a region that
 * decodes decodes again to itself; hex that decodes is the same hex.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "fab_int.h"
#include "fuzz.h"

static void head(const uint8_t *data, size_t size)
{
	unsigned char again[FAB_HEAD];
	struct fab_head h;

	if (fab_head_get(data, size, &h))
		return;
	FUZZ_CHECK(size >= FAB_HEAD && h.magic == FAB_MAGIC);
	fab_head_put(again, &h);
	/* Byte 7 is reserved: zero on the way out, whatever came in. */
	FUZZ_CHECK(memcmp(again, data, 7) == 0 && again[7] == 0 &&
		   memcmp(again + 8, data + 8, FAB_HEAD - 8) == 0);
}

static void region(const uint8_t *data, size_t size)
{
	unsigned char again[FAB_REGION];
	struct rc_fregion r, r2;

	if (size < FAB_REGION || fab_region_get(data, &r))
		return;
	FUZZ_CHECK(memchr(r.name, 0, sizeof(r.name)) != NULL && (r.access & ~7) == 0);
	fab_region_put(again, &r);
	FUZZ_CHECK(fab_region_get(again, &r2) == 0);
	FUZZ_CHECK(!strcmp(r.name, r2.name) && r.length == r2.length && r.key == r2.key &&
		   r.base == r2.base && r.access == r2.access);
}

static void words(const uint8_t *data, size_t size)
{
	char s[160], hex[2 * 64 + 1];
	unsigned char b[64];
	struct rc_fabric f;
	size_t n = size < sizeof(s) - 1 ? size : sizeof(s) - 1;
	int k;

	memcpy(s, data, n);
	s[n] = '\0';
	k = fab_unhex(s, b, sizeof(b));
	FUZZ_CHECK(k == -EINVAL || (k > 0 && (size_t)k <= sizeof(b)));
	if (k > 0) {
		fab_hex(b, (size_t)k, hex);
		FUZZ_CHECK(strcasecmp(hex, s) == 0);
	}
	if (!rc_fabric_parse(s, &f))
		FUZZ_CHECK(f.kind == RC_FABRIC_VERBS || f.kind == RC_FABRIC_AUTO ||
			   (f.kind == RC_FABRIC_OFI && memchr(f.prov, 0, sizeof(f.prov))));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	head(data, size);
	region(data, size);
	words(data, size);
	return 0;
}
