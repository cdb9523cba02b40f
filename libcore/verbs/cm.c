// SPDX-License-Identifier: MIT
/*
 * The one way a listening side takes its CM events: each is taken,
 * acknowledged at once and sorted into what the server must do about it
 * (answer a request, count a connection up or gone, stop on a removed
 * device), and the one place where an event changes a connection's state
 * and says why it went (rc_cm_sort). The region server, kvxfer's receiver
 * and the group's accepting side take their listener's events so
 * (rc_listener_next); the connecting side (the group, kvxfer's sender)
 * takes those of its channels so (rc_cm_poll). The connecting side
 * moves the CM events of its many connections to one channel
 * (rc_cm_channel, rc_conn_share_events). And what a listener shows: its
 * address, port and device.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rdmactl/conn.h>
#include <rdmactl/conn_core.h>

/* The kind of a CM event of any connection, listening or connecting: GONE
 * for a disconnect, a failed or refused connect, an unreachable peer or a
 * time-wait's end; DEVICE_GONE for a removed device. */
static enum rc_cm_kind kind_of(enum rdma_cm_event_type t)
{
	switch (t) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return RC_CM_REQUEST;
	case RDMA_CM_EVENT_ESTABLISHED:
		return RC_CM_ESTABLISHED;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		return RC_CM_GONE;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return RC_CM_DEVICE_GONE;
	default:
		return RC_CM_OTHER;
	}
}

void rc_cm_sort(const struct rdma_cm_event *ev, const struct rc_listener *l, struct rc_cm_event *out)
{
	memset(out, 0, sizeof(*out));
	out->type = ev->event;
	out->kind = kind_of(ev->event);
	if (out->kind == RC_CM_REQUEST && l) {
		const struct rdma_conn_param *p = &ev->param.conn;
		uint8_t n = p->private_data && p->private_data_len ? p->private_data_len : 0;

		/* The private data lives in the event: keep a copy past the ack (a
		 * uint8_t length always fits the copy). */
		if (n)
			memcpy(out->private_data, p->private_data, n);
		out->param = *p;
		out->param.private_data = n ? out->private_data : NULL;
		out->param.private_data_len = n;
		out->child = ev->id;
		out->other_device = ev->id->verbs != l->verbs;
		rc_peer_name(ev->id, out->peer, sizeof(out->peer));
	} else if (out->kind == RC_CM_REQUEST) {
		out->kind = RC_CM_OTHER; /* no listener: nothing asked it */
	} else if (ev->id->context != (const void *)l) {
		out->conn = ev->id->context;
	}
	if (out->conn)
		out->was_established = out->conn->established;
	if (out->conn && out->kind == RC_CM_ESTABLISHED)
		out->conn->established = true;
	if (out->kind == RC_CM_GONE || out->kind == RC_CM_DEVICE_GONE) {
		if (out->conn)
			out->conn->disconnected = true;
		snprintf(out->why, sizeof(out->why), "%s (%s)",
			 out->kind == RC_CM_DEVICE_GONE            ? "device removed"
			 : ev->event == RDMA_CM_EVENT_DISCONNECTED ? "disconnected"
								   : "connection failed",
			 rdma_event_str(ev->event));
	}
}

static void take_event(struct rdma_cm_event *ev, const struct rc_listener *l,
		       struct rc_cm_event *out)
{
	rc_cm_sort(ev, l, out);
	rdma_ack_cm_event(ev);
}

int rc_listener_next(struct rc_listener *l, int timeout_ms, struct rc_cm_event *out)
{
	struct rdma_cm_event *ev;
	int rc = rc_listener_event(l, timeout_ms, &ev);

	if (!rc)
		take_event(ev, l, out);
	return rc;
}

int rc_cm_poll(struct rdma_event_channel *ech, struct rc_cm_event *out)
{
	struct rdma_cm_event *ev;

	if (!ech)
		return -EINVAL;
	if (rdma_get_cm_event(ech, &ev))
		return errno ? -errno : -EAGAIN;
	take_event(ev, NULL, out);
	return 0;
}

int rc_cm_accept(struct rc_listener *l, struct rc_cm_event *ev, const struct rc_conn_opts *o,
		 struct rc_conn **out, struct rc_err *err)
{
	struct rdma_conn_param req = ev->param;

	/* What the request asked of the responder, not its private data. */
	req.private_data = NULL;
	req.private_data_len = 0;
	return rc_accept(l, ev->child, &req, o, out, err);
}

void rc_reject(struct rdma_cm_id *child, const char *reason)
{
	size_t n = strlen(reason) + 1;

	rdma_reject(child, reason, (uint8_t)(n > 148 ? 148 : n));
}

void rc_cm_refuse(struct rc_cm_event *ev, const char *why)
{
	rc_reject(ev->child, why);
	rdma_destroy_id(ev->child);
	ev->child = NULL;
}

struct rdma_event_channel *rc_cm_channel(void)
{
	struct rdma_event_channel *ech = rdma_create_event_channel();

	if (ech && rc_set_nonblock(ech->fd)) {
		rdma_destroy_event_channel(ech);
		ech = NULL;
	}
	return ech;
}

bool rc_conn_share_events(struct rc_conn *c, struct rdma_event_channel *ech)
{
	if (!ech || !c->ech || rdma_migrate_id(c->id, ech))
		return false;
	rdma_destroy_event_channel(c->ech);
	c->ech = NULL;
	return true;
}

const char *rc_listener_addr(const struct rc_listener *l)
{
	return l->addr;
}

uint16_t rc_listener_port(const struct rc_listener *l)
{
	return l->port;
}

const char *rc_listener_device(const struct rc_listener *l)
{
	return l->dev_name;
}

uint8_t rc_listener_port_num(const struct rc_listener *l)
{
	return l->port_num;
}
