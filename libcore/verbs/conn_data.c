// SPDX-License-Identifier: MIT
/*
 * What a connection's private data carries: the accept's data a connecting
 * side keeps (rc_conn_keep_accept), and a refusal's reason read back
 * (rc_reject_reason) and mapped to an errno (rc_reject_errno). Both the
 * connection (conn.c) and the listening side's events (cm.c) use them;
 * they call neither.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <rdmactl/conn.h>
#include <rdmactl/conn_core.h>

int rc_reject_errno(const char *reason)
{
	static const char *const refusals[] = { "not authorised", "invalid token",
						"a token is required", "has no group token" };

	if (!reason || strncmp(reason, "rdmactl: ", 9))
		return ECONNREFUSED;
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++)
		if (strstr(reason, refusals[i]))
			return EKEYREJECTED;
	return ECONNREFUSED;
}

const unsigned char *rc_conn_accept_data(const struct rc_conn *c, size_t *len)
{
	*len = c->accept_len;
	return c->accept_data;
}

void rc_conn_keep_accept(struct rc_conn *c, const void *data, size_t len)
{
	if (!data)
		len = 0;
	if (len > sizeof(c->accept_data))
		len = sizeof(c->accept_data);
	if (len)
		memcpy(c->accept_data, data, len);
	c->accept_len = (uint8_t)len;
}

size_t rc_reject_reason(const void *pd, size_t len, char *out, size_t cap)
{
	const unsigned char *p = pd;
	size_t n = 0;

	if (!cap)
		return 0;
	/* Printable ASCII up to the first byte that is not (the zeros the CM
	 * pads with end it too). */
	while (p && n < len && n < cap - 1 && p[n] >= 0x20 && p[n] <= 0x7e) {
		out[n] = (char)p[n];
		n++;
	}
	out[n] = '\0';
	return n;
}
