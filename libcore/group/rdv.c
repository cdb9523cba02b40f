// SPDX-License-Identifier: MIT
/* The rendezvous front: a static peers file, or etcd (rdv_etcd.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdv_int.h"
#include <rdmactl/group_core.h>

enum rdv_kind { RDV_FILE, RDV_ETCD };

struct rc_rdv {
	enum rdv_kind kind;
	int rank;
	int world;
	struct rc_endpoint *file_eps; /* RDV_FILE: world entries */
	struct rc_etcd_rdv *etcd;
};

static int file_load(struct rc_rdv *r, const char *path, struct rc_err *err)
{
	FILE *fp = fopen(path, "r");
	bool *have = calloc((size_t)r->world, sizeof(bool));
	int *line_of = calloc((size_t)r->world, sizeof(int));
	char line[512], missing[256];
	int lineno = 0, rc = 0;

	r->file_eps = calloc((size_t)r->world, sizeof(*r->file_eps));
	if (!have || !line_of || !r->file_eps) {
		rc = rc_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	if (!fp) {
		rc = rc_err_set(err, EINVAL, "cannot read peers file %s: %s", path, strerror(errno));
		goto out;
	}
	while (fgets(line, sizeof(line), fp)) {
		char *p = line, *end;
		long rank;

		lineno++;
		p[strcspn(p, "#\r\n")] = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			continue;
		rank = strtol(p, &end, 10);
		if (end == p || (*end != ' ' && *end != '\t') || rank < 0) {
			rc = rc_err_set(err, EINVAL, "%s:%d: expected 'RANK ADDR:PORT [HOSTNAME]'",
					path, lineno);
			goto out;
		}
		if (rank >= r->world) {
			rc = rc_err_set(err, EINVAL,
					"%s:%d: rank %ld is not below the world size %d", path,
					lineno, rank, r->world);
			goto out;
		}
		if (have[rank]) {
			rc = rc_err_set(err, EINVAL,
					"%s:%d: rank %ld is listed twice (also on line %d)", path,
					lineno, rank, line_of[rank]);
			goto out;
		}
		if (endpoint_scan(end, &r->file_eps[rank], NULL)) {
			rc = rc_err_set(err, EINVAL, "%s:%d: '%s' is not ADDR:PORT [HOSTNAME]",
					path, lineno, end + strspn(end, " \t"));
			goto out;
		}
		have[rank] = true;
		line_of[rank] = lineno;
	}
	ranks_missing(have, r->world, missing, sizeof(missing));
	if (missing[0])
		rc = rc_err_set(err, EINVAL, "%s lists no address for rank %s (world size %d)",
				path, missing, r->world);
out:
	if (fp)
		fclose(fp);
	free(have);
	free(line_of);
	return rc;
}

int rc_rdv_open(const char *url, int rank, int world, int timeout_ms, struct rc_rdv **out,
		struct rc_err *err)
{
	struct rc_rdv *r = calloc(1, sizeof(*r));
	int rc;

	if (!r)
		return rc_err_set(err, ENOMEM, "out of memory");
	r->rank = rank;
	r->world = world;
	if (!strncmp(url, "file:", 5)) {
		r->kind = RDV_FILE;
		rc = file_load(r, url + 5, err);
	} else if (!strncmp(url, "etcd://", 7)) {
		r->kind = RDV_ETCD;
		rc = etcd_open(url, rank, world, timeout_ms, &r->etcd, err);
	} else {
		rc = rc_err_set(err, EINVAL,
				"rendezvous '%s': expected file:PATH or etcd://HOST:PORT/JOB", url);
	}
	if (rc) {
		rc_rdv_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

int rc_rdv_self(struct rc_rdv *r, struct rc_endpoint *ep, struct rc_err *err)
{
	if (r->kind != RDV_FILE)
		return rc_err_set(err, ENOENT, "the rendezvous holds no address for rank %d",
				  r->rank);
	*ep = r->file_eps[r->rank];
	return 0;
}

int rc_rdv_exchange(struct rc_rdv *r, const struct rc_endpoint *self, struct rc_endpoint *all,
		    struct rc_err *err)
{
	if (r->kind == RDV_ETCD)
		return etcd_exchange(r->etcd, self, all, err);
	memcpy(all, r->file_eps, (size_t)r->world * sizeof(*all));
	return 0;
}

const char *rc_rdv_kind(const struct rc_rdv *r)
{
	return r->kind == RDV_ETCD ? "etcd" : "file";
}

int rc_rdv_close(struct rc_rdv *r)
{
	int rc = 0;

	if (!r)
		return 0;
	if (r->etcd)
		rc = etcd_close(r->etcd);
	free(r->file_eps);
	free(r);
	return rc;
}
