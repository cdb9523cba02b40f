// SPDX-License-Identifier: MIT
/* What libfabric offers on this host (rdmactl/fabric.h: rc_fabric_offers),
 * as fi_info lists it, one row a provider and domain. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ofi_dl.h" /* before libfabric's headers */

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <rdmactl/fabric.h>
#include <rdmactl/ofi_core.h>

static struct rc_fabric_offer *row_of(struct rc_fabric_offer *out, int n, const char *prov,
				      const char *domain)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(out[i].provider, prov) && !strcmp(out[i].domain, domain))
			return &out[i];
	return NULL;
}

static void take(struct rc_fabric_offer *r, const struct fi_info *i)
{
	r->msg |= i->ep_attr->type == FI_EP_MSG;
	r->rdm |= i->ep_attr->type == FI_EP_RDM;
	r->dgram |= i->ep_attr->type == FI_EP_DGRAM;
	r->rma |= (i->caps & FI_RMA) != 0;
	r->atomic |= (i->caps & FI_ATOMIC) != 0;
	r->cq_data |= i->domain_attr->cq_data_size >= 4;
	r->hmem |= (i->caps & FI_HMEM) != 0;
}

/* Whether rc_ofi_open would open an RDM endpoint of r's provider on r's
 * domain: what it asks of libfabric (with 64-bit atomics: atomic). */
static bool opens(const struct rc_fabric_offer *r, bool atomic)
{
	struct fi_info *h = rc_ofi_hints(r->provider, atomic), *got = NULL;
	bool ok;

	if (!h || !(h->domain_attr->name = strdup(r->domain))) {
		fi_freeinfo(h);
		return false;
	}
	ok = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, h, &got) == 0 && got;
	fi_freeinfo(got);
	fi_freeinfo(h);
	return ok;
}

/* r as rdmactl would use it: usable, the --fabric that opens it, and its
 * atomics as asked for (a provider such as ofi_rxm offers them only then) */
static void usable(struct rc_fabric_offer *r)
{
	/* a bare tcp or verbs (an RDM one in a later libfabric): rdmactl's
	 * ofi:tcp and ofi:verbs open them through ofi_rxm, another row */
	if (strcmp(rc_ofi_prov_string(r->provider), r->provider))
		return;
	if (!(r->usable = opens(r, false)))
		return;
	snprintf(r->fabric_option, sizeof(r->fabric_option), "ofi:%s",
		 rc_ofi_short_name(r->provider));
	if (!r->atomic) /* not listed without hints: asked for */
		r->atomic = opens(r, true);
}

int rc_fabric_offers(struct rc_fabric_offer *out, int cap, int *n, int *left_out, struct rc_err *err)
{
	struct fi_info *all = NULL;
	int rc = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, NULL, &all);

	*n = *left_out = 0;
	if (rc == -FI_ENOSYS)
		return rc_err_set(err, ENOSYS, "%s", fi_strerror(-rc));
	if (rc == -FI_ENODATA) /* no provider at all */
		return 0;
	if (rc)
		return rc_err_set(err, rc < 0 && -rc < 256 ? -rc : EIO, "fi_getinfo: %s",
				  fi_strerror(rc < 0 ? -rc : rc));
	for (const struct fi_info *i = all; i; i = i->next) {
		const char *prov = i->fabric_attr && i->fabric_attr->prov_name
					   ? i->fabric_attr->prov_name
					   : NULL;
		const char *dom = i->domain_attr && i->domain_attr->name ? i->domain_attr->name : "";
		struct rc_fabric_offer *r;

		if (!prov || !i->ep_attr || !i->domain_attr)
			continue;
		if (!(r = row_of(out, *n, prov, dom))) {
			if (*n >= cap) {
				++*left_out;
				continue;
			}
			r = &out[(*n)++];
			*r = (struct rc_fabric_offer){ 0 };
			snprintf(r->provider, sizeof(r->provider), "%s", prov);
			snprintf(r->domain, sizeof(r->domain), "%s", dom);
			snprintf(r->fabric, sizeof(r->fabric), "%s",
				 i->fabric_attr->name ? i->fabric_attr->name : "");
		}
		take(r, i);
	}
	fi_freeinfo(all);
	for (int k = 0; k < *n; k++)
		if (out[k].rdm)
			usable(&out[k]);
	return 0;
}

const char *rc_fabric_version(char *buf, size_t cap)
{
	uint32_t v = fi_version();

	if (v)
		snprintf(buf, cap, "%u.%u", FI_MAJOR(v), FI_MINOR(v));
	else if (cap)
		buf[0] = '\0';
	return buf;
}
