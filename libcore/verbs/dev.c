// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/dev.h>
#include <rdmactl/dev_core.h>

int rc_dev_open(const char *name, struct ibv_context **out, struct rc_err *err)
{
	struct ibv_device **list;
	int n = 0, rc = -ENODEV;

	list = ibv_get_device_list(&n);
	if (!list)
		return rc_err_set(err, errno ? errno : ENODEV, "cannot list RDMA devices: %s",
				  strerror(errno ? errno : ENODEV));
	for (int i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name))
			continue;
		*out = ibv_open_device(list[i]);
		rc = *out ? 0
			  : rc_err_set(err, errno, "cannot open RDMA device '%s': %s", name,
				       strerror(errno));
		break;
	}
	ibv_free_device_list(list);
	if (rc == -ENODEV)
		return rc_err_set(err, ENODEV, "no RDMA device named '%s' (%d device%s present)",
				  name, n, n == 1 ? "" : "s");
	return rc;
}

int rc_dev_exists(const char *name, struct rc_err *err)
{
	char names[256] = "";
	struct ibv_device **list;
	size_t len = 0;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		return 0; /* nothing to tell: whoever opens it says why */
	for (int i = 0; i < n; i++) {
		const char *d = ibv_get_device_name(list[i]);

		if (!strcmp(d, name)) {
			ibv_free_device_list(list);
			return 0;
		}
		if (len < sizeof(names))
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s",
						len ? ", " : "", d);
	}
	ibv_free_device_list(list);
	if (!n)
		return rc_err_set(err, ENODEV, "no such device %s (this host has no RDMA device)",
				  name);
	return rc_err_set(err, ENODEV, "no such device %s (the devices here: %s)", name, names);
}

const char *rc_gid_type_name(int type)
{
	switch (type) {
	case IBV_GID_TYPE_IB:
		return "IB";
	case IBV_GID_TYPE_ROCE_V1:
		return "RoCE v1";
	case IBV_GID_TYPE_ROCE_V2:
		return "RoCE v2";
	default:
		return "unknown";
	}
}

void rc_gid_format(const union ibv_gid *gid, char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, gid->raw, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

static bool gid_is_zero(const union ibv_gid *g)
{
	static const union ibv_gid zero;

	return !memcmp(g, &zero, sizeof(zero));
}

static void fill_info(struct rc_gid_info *out, const struct ibv_gid_entry *e)
{
	out->index = (int)e->gid_index;
	out->type = (int)e->gid_type;
	out->gid = e->gid;
	rc_gid_format(&e->gid, out->str, sizeof(out->str));
}

int rc_gid_rank(bool ib_link, int type, const unsigned char raw[16])
{
	static const unsigned char v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (ib_link)
		return type == IBV_GID_TYPE_IB || type < 0 ? 0 : -1;
	/* RoCE v1 is not routable and most fabrics no longer carry it. */
	if (type != IBV_GID_TYPE_ROCE_V2)
		return -1;
	if (!memcmp(raw, v4mapped, sizeof(v4mapped)))
		return 0;
	return raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80 ? 2 : 1; /* global, then fe80::/10 */
}

int rc_gid_choose(bool ib_link, const struct ibv_gid_entry *e, int n)
{
	int best = -1, best_rank = -1;

	for (int i = 0; i < n; i++) {
		int r = gid_is_zero(&e[i].gid)
				? -1
				: rc_gid_rank(ib_link, (int)e[i].gid_type, e[i].gid.raw);

		if (r >= 0 && (best < 0 || r < best_rank)) {
			best = i;
			best_rank = r;
		}
	}
	return best;
}

int rc_gid_pick(struct ibv_context *ctx, uint8_t port, int override, struct rc_gid_info *out,
		struct rc_err *err)
{
	struct ibv_gid_entry *all, e;
	struct ibv_port_attr pa;
	int n = 0, best, rc;

	/* ibv_query_port returns the error; it does not set errno. */
	rc = ibv_query_port(ctx, port, &pa);
	if (rc)
		return rc_err_set(err, rc, "cannot query port %u of %s: %s", port,
				  ibv_get_device_name(ctx->device), strerror(rc));
	if (override >= 0) {
		if (override >= pa.gid_tbl_len ||
		    ibv_query_gid_ex(ctx, port, (uint32_t) override, &e, 0) || gid_is_zero(&e.gid))
			return rc_err_set(err, ENOENT, "GID index %d is not valid on %s port %u",
					  override, ibv_get_device_name(ctx->device), port);
		fill_info(out, &e);
		return 0;
	}
	all = calloc(pa.gid_tbl_len > 0 ? (size_t)pa.gid_tbl_len : 1, sizeof(*all));
	if (!all)
		return rc_err_set(err, ENOMEM, "out of memory");
	for (int i = 0; i < pa.gid_tbl_len; i++)
		if (ibv_query_gid_ex(ctx, port, (uint32_t)i, &all[n], 0) == 0)
			n++;
	best = rc_gid_choose(pa.link_layer == IBV_LINK_LAYER_INFINIBAND, all, n);
	if (best >= 0)
		fill_info(out, &all[best]);
	free(all);
	if (best < 0)
		return rc_err_set(err, ENOENT,
				  "%s port %u has no usable GID (RoCE v2, or IB on InfiniBand)",
				  ibv_get_device_name(ctx->device), port);
	return 0;
}

int rc_gid_find_addr(struct ibv_context *ctx, uint8_t port, const struct sockaddr *addr,
		     struct rc_gid_info *out)
{
	union ibv_gid want = { 0 };
	struct ibv_gid_entry e;
	struct ibv_port_attr pa;
	int found = -ENOENT;

	if (addr->sa_family == AF_INET) {
		want.raw[10] = want.raw[11] = 0xff;
		memcpy(&want.raw[12], &((const struct sockaddr_in *)addr)->sin_addr, 4);
	} else if (addr->sa_family == AF_INET6) {
		memcpy(want.raw, &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
	} else {
		return -EAFNOSUPPORT;
	}
	if (ibv_query_port(ctx, port, &pa))
		return -errno;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		if (ibv_query_gid_ex(ctx, port, (uint32_t)i, &e, 0) ||
		    memcmp(&e.gid, &want, sizeof(want)))
			continue;
		/* Prefer RoCE v2 where both types carry the address. */
		if (found < 0 || e.gid_type == IBV_GID_TYPE_ROCE_V2) {
			fill_info(out, &e);
			found = 0;
		}
	}
	return found;
}

int rc_dev_ipv4(const char *dev, char *out, size_t cap, struct rc_err *err)
{
	static const unsigned char v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct ibv_context *ctx;
	struct rc_gid_info g;
	int rc = rc_dev_open(dev, &ctx, err);

	if (rc)
		return rc;
	rc = rc_gid_pick(ctx, 1, -1, &g, err);
	ibv_close_device(ctx);
	if (rc)
		return rc;
	if (memcmp(g.gid.raw, v4mapped, sizeof(v4mapped)))
		return rc_err_opt(err, EADDRNOTAVAIL,
				  "device %s has no IPv4 address to connect from (GID %s): give {bind}",
				  dev, g.str);
	inet_ntop(AF_INET, g.gid.raw + 12, out, (socklen_t)cap);
	return 0;
}

int rc_dev_count(void)
{
	struct ibv_device **list;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		return 0;
	ibv_free_device_list(list);
	return n;
}
