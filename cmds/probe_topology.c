// SPDX-License-Identifier: MIT
/*
 * rdmactl probe-topology: the RDMA devices, their ports and GIDs, the GPUs,
 * the GPU x NIC path classes, a rail plan and doctor findings. The data
 * comes from libcore (topo.h) and the report from topo_show.c; here are the
 * options, their checks and the run (load, --verify, --capture, --export).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rdmactl/topo.h>

#include "cmds.h"
#include "topo_export.h"
#include "topo_show.h"

#define TOPO_OPTS(X) \
	X(TP_SYSFS, "sysfs", 0, "DIR|FILE.tar.gz", "read a captured tree instead of /sys", \
	  COMP_FILE, OPT_STR(struct topo_args, sysfs, NULL)) \
	X(TP_CAPTURE, "capture", 0, "DIR|FILE.tar.gz", \
	  "copy what the probe reads into DIR or a tarball", COMP_FILE, \
	  OPT_STR(struct topo_args, capture, NULL)) \
	X(TP_VERIFY, "verify", 0, NULL, "prove each ACTIVE port carries a WRITE", \
	  OPT_FLAG(struct topo_args, verify)) \
	X(TP_VERIFY_SIZE, "verify-size", 0, "SIZE", "bytes each --verify writes", \
	  OPT_SIZE(struct topo_args, vsize, "8M"), OPT_GIVEN(struct topo_args, vsize_given)) \
	X(TP_HUGEPAGES, "hugepages", 0, NULL, "doctor: hugepages are required", \
	  OPT_FLAG(struct topo_args, hugepages)) \
	X(TP_FABRICS, "fabrics", 0, NULL, "also list libfabric's providers", \
	  OPT_FLAG(struct topo_args, fabrics)) \
	X(TP_EXPORT, "export", 0, "nccl|ucx|mooncake", \
	  "the rail plan as NCCL, UCX or Mooncake settings", COMP_WORDS, "nccl|ucx|mooncake", \
	  OPT_STR(struct topo_args, export_name, NULL)) \
	X(TP_GPU, "gpu", 0, "N", "--export: only GPU N's, as KEY=VALUE", \
	  OPT_INT(struct topo_args, gpu, 0, 4095, NULL), OPT_GIVEN(struct topo_args, gpu_given))

/* What `probe-topology` was asked, parsed and checked. */
struct topo_args {
	const char *sysfs;
	const char *capture;
	bool verify;
	bool hugepages;
	bool fabrics;
	uint64_t vsize;
	int export;                                        /* enum topo_export, -1 none */
	int gpu;                                           /* --gpu N, -1 all */
	const char *vsize_given, *export_name, *gpu_given; /* as given, or NULL */
};

enum { TOPO_OPTS(OPT_INDEX) TOPO_NOPTS };
static const struct cmd_opt topo_opts[] = { TOPO_OPTS(OPT_ENTRY) OPT_END };
OPTS_BOUND(topo_opts, TOPO_NOPTS);

static int do_capture(struct ctx *ctx, const char *src, const char *dest)
{
	struct rc_err e;
	int nfiles = 0, rc = rc_topo_capture(src, dest, &nfiles, &e);

	if (rc)
		return fail(ctx, rc, "%s", ERR_TEXT(e));
	out_str(&ctx->out, "capture", "captured %s", dest);
	out_i64(&ctx->out, "files", " (%lld files)\n", nfiles);
	out_text(&ctx->out, "read it with: rdmactl probe-topology --sysfs %s\n", dest);
	return 0;
}

static int topo_parse(struct ctx *ctx, const struct cmd *c, const struct opt_vals *v,
		      struct topo_args *a)
{
	int rc;

	*a = (struct topo_args){ .export = -1, .gpu = -1 };
	if (v->npos)
		return usage_err(ctx, "probe-topology: unexpected argument '%s'", v->pos[0]);
	if ((rc = opts_fill(ctx, c, v, TP_SYSFS, TP_FABRICS + 1, a)))
		return rc;
	if (a->vsize == 0 || a->vsize > (1ULL << 30))
		return usage_err(ctx, "invalid --verify-size: expected 1 byte to 1G");
	if (a->vsize_given && !a->verify)
		return usage_err(ctx, "probe-topology: --verify-size goes with --verify");
	if (a->sysfs && !*a->sysfs)
		return usage_err(ctx, "probe-topology: --sysfs needs a directory or a .tar.gz");
	if (a->capture && (a->verify || a->hugepages))
		return usage_err(
			ctx,
			"probe-topology: --capture only copies: it goes without --verify and --hugepages");
	if (a->sysfs && a->verify)
		return usage_err(ctx,
				 "probe-topology: --verify needs the live host, not a --sysfs tree");
	if (a->fabrics && (a->sysfs || a->capture))
		return usage_err(ctx,
				 "probe-topology: --fabrics lists this host's libfabric: it goes "
				 "without --sysfs and --capture");
	opts_fill(ctx, c, v, TP_EXPORT, TP_EXPORT + 1, a); /* a string */
	if (a->export_name && (a->export = topo_export_kind(a->export_name)) < 0)
		return usage_err(ctx, "invalid --export '%s': expected nccl, ucx or mooncake",
				 a->export_name);
	if ((rc = opts_fill(ctx, c, v, TP_GPU, TP_GPU + 1, a)))
		return rc;
	if (a->gpu_given && a->export < 0)
		return usage_err(ctx, "probe-topology: --gpu goes with --export");
	if (a->export >= 0 && (a->capture || a->verify || a->fabrics))
		return usage_err(
			ctx,
			"probe-topology: --export prints the plan only: it goes without --capture, --verify and --fabrics");
	return 0;
}

/* Run: load the topology below root (NULL: /sys), verify when asked. *failed
 * counts the ports that failed the loopback verification (-ENODEV: none was
 * verified). name: how findings name the tree (a tarball, not the folder it
 * was extracted to), NULL: root. */
static int topo_run(struct ctx *ctx, const struct topo_args *a, const char *root, const char *name,
		    struct rc_topo **t, int *failed)
{
	struct rc_topo_opts to = { .root = root, .hugepages = a->hugepages, .name = name };
	struct rc_err e;
	int rc;

	rc = rc_topo_load(&to, t, &e);
	if (rc)
		return fail(ctx, rc, "%s", ERR_TEXT(e));
	if (ctx->dev_name) {
		bool found = false;

		for (int d = 0; d < (*t)->ndevs; d++)
			found |= !strcmp((*t)->devs[d].name, ctx->dev_name);
		if (!found)
			return fail(ctx, -ENODEV, "no RDMA device named '%s' (%d device%s found)",
				    ctx->dev_name, (*t)->ndevs, (*t)->ndevs == 1 ? "" : "s");
	}
	if (a->verify) {
		if (!out_is_json(&ctx->out))
			out_log(&ctx->out, "verifying the active ports (loopback RDMA WRITE)...");
		*failed = rc_topo_verify(*t, ctx->dev_name, a->vsize, ctx->timeout_ms);
	}
	return 0;
}

static int do_probe_topology(struct ctx *ctx, int argc, char **argv)
{
	const struct cmd *c = &cmd_probe_topology;
	char root[4096], tmpdir[4096] = "", name[8400];
	struct rc_topo *t = NULL;
	struct topo_args a;
	struct opt_vals v;
	struct rc_err e;
	int rc, failed = 0;

	rc = opts_parse(ctx, c, argc, argv, &v);
	if (rc)
		return rc < 0 ? rc : 0;
	if ((rc = topo_parse(ctx, c, &v, &a)))
		return rc;
	if (a.sysfs &&
	    (rc = rc_topo_open_tree(a.sysfs, root, sizeof(root), tmpdir, sizeof(tmpdir), &e)))
		return fail(ctx, rc, "%s", ERR_TEXT(e));
	if (a.capture) {
		rc = do_capture(ctx, a.sysfs ? root : NULL, a.capture);
		goto out;
	}
	/* A tarball's tree is named by the tarball and the path inside it:
	 * the temporary folder it was extracted to is gone when we exit. */
	if (tmpdir[0])
		snprintf(name, sizeof(name), "%s:%s", a.sysfs, root + strlen(tmpdir));
	rc = topo_run(ctx, &a, a.sysfs ? root : NULL, tmpdir[0] ? name : NULL, &t, &failed);
	if (rc)
		goto out;
	if (a.export >= 0) {
		rc = topo_export(ctx, t, a.export, a.gpu);
		goto out;
	}
	if ((rc = topo_show(ctx, t, a.sysfs ? a.sysfs : "/sys", a.fabrics)))
		goto out;
	if (failed < 0)
		rc = fail(ctx, -ENODEV,
			  "no port was verified: --verify found no ACTIVE port to write to (see the findings)");
	else if (failed)
		rc = fail(ctx, -EIO, "%d port%s failed the loopback verification (see the findings)",
			  failed, failed == 1 ? "" : "s");
out:
	rc_topo_free(t);
	if (tmpdir[0])
		rc_topo_rmtree(tmpdir);
	return rc;
}

const struct cmd cmd_probe_topology = {
	.name = "probe-topology",
	.aliases = (const char *const[]){ "topo", NULL },
	.run = do_probe_topology,
	.opts = topo_opts,
	.summary = "RDMA devices, GPUs, PCIe paths, rail plan, doctor findings",
};
