// SPDX-License-Identifier: MIT
/* kvxfer's geometry: from --model FILE and the flags (flags win), checked,
 * and its one-line (or JSON object) report. Shared by plan, serve and send. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <rdmactl/parse.h>

#include "cmds.h"
#include "kvxfer.h"

/* Geometry values before defaults: -1 unset. */
struct gin {
	const char *layout, *page_layout, *dtype, *name;
	int64_t layers, kv_heads, head_dim, latent_dim, page_tokens, src_pt, dst_pt, src_tp, dst_tp;
};

static const struct {
	const char *key;
	size_t off;
} model_ints[] = {
	{ "layers", offsetof(struct gin, layers) },
	{ "kv_heads", offsetof(struct gin, kv_heads) },
	{ "head_dim", offsetof(struct gin, head_dim) },
	{ "latent_dim", offsetof(struct gin, latent_dim) },
	{ "page_tokens", offsetof(struct gin, page_tokens) },
	{ "src_page_tokens", offsetof(struct gin, src_pt) },
	{ "dst_page_tokens", offsetof(struct gin, dst_pt) },
	{ "src_tp", offsetof(struct gin, src_tp) },
	{ "dst_tp", offsetof(struct gin, dst_tp) },
};

static int model_file(struct ctx *ctx, const char *path, struct gin *in, json_t **keep)
{
	json_error_t je;
	json_t *root, *val;
	const char *key;
	int rc = input_file(ctx, "--model", path);

	if (rc)
		return rc;
	root = json_load_file(path, 0, &je);
	if (!root && je.line < 1)
		return usage_err(ctx, "--model %s: %s", path, je.text);
	if (!root)
		return usage_err(ctx, "--model %s: %s (line %d)", path, je.text, je.line);
	*keep = root;
	if (!json_is_object(root))
		return usage_err(ctx, "--model %s: expected a JSON object", path);
	json_object_foreach(root, key, val)
	{
		bool known = false;

		for (size_t i = 0; i < sizeof(model_ints) / sizeof(model_ints[0]); i++) {
			if (strcmp(key, model_ints[i].key))
				continue;
			if (!json_is_integer(val) || json_integer_value(val) < 0 ||
			    json_integer_value(val) > UINT32_MAX)
				return usage_err(ctx,
						 "--model %s: \"%s\" must be a non-negative integer",
						 path, key);
			*(int64_t *)((char *)in + model_ints[i].off) = json_integer_value(val);
			known = true;
		}
		if (!strcmp(key, "layout") || !strcmp(key, "page_layout") ||
		    !strcmp(key, "dtype") || !strcmp(key, "name")) {
			if (!json_is_string(val))
				return usage_err(ctx, "--model %s: \"%s\" must be a string", path,
						 key);
			if (!strcmp(key, "layout"))
				in->layout = json_string_value(val);
			else if (!strcmp(key, "page_layout"))
				in->page_layout = json_string_value(val);
			else if (!strcmp(key, "dtype"))
				in->dtype = json_string_value(val);
			else
				in->name = json_string_value(val);
			known = true;
		}
		if (!known)
			return usage_err(ctx, "--model %s: unknown key \"%s\"", path, key);
	}
	return 0;
}

/* The model's name for the report: its "name", else the file's name without
 * its folder and .json; empty without --model. */
static void model_name(char *out, size_t len, const char *path, const char *name)
{
	const char *base;
	size_t n;

	out[0] = '\0';
	if (!path)
		return;
	if (name && *name) {
		snprintf(out, len, "%s", name);
		return;
	}
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	n = strlen(base);
	if (n > 5 && !strcmp(base + n - 5, ".json"))
		n -= 5;
	snprintf(out, len, "%.*s", (int)n, base);
}

/* The option of each of the geometry's integers (enum kvx_geo). */
static const int geo_opt[KVG_N] = { KVX_LAYERS,          KVX_KV_HEADS,    KVX_HEAD_DIM,
				    KVX_LATENT_DIM,      KVX_PAGE_TOKENS, KVX_SRC_PAGE_TOKENS,
				    KVX_DST_PAGE_TOKENS, KVX_SRC_TP,      KVX_DST_TP };

/* The values as given: --model FILE's (kept in *model while in points into
 * it), then the flags over them; where neither gave one, the row's default. */
static int geom_given(struct ctx *ctx, const struct opt_vals *v, struct kvxfer_args *a,
		      struct gin *in, json_t **model)
{
	int64_t *slots[KVG_N] = { &in->layers,     &in->kv_heads,    &in->head_dim,
				  &in->latent_dim, &in->page_tokens, &in->src_pt,
				  &in->dst_pt,     &in->src_tp,      &in->dst_tp };
	int rc;

	if ((rc = kvxfer_fill(ctx, v, a, KVX_MODEL, KVX_MODEL)))
		return rc;
	if (a->model && (rc = model_file(ctx, a->model, in, model)))
		return rc;
	for (int k = 0; k < KVG_N; k++) {
		const struct cmd_opt *o = &cmd_kvxfer.opts[geo_opt[k]];

		if ((rc = kvxfer_fill(ctx, v, a, geo_opt[k], geo_opt[k])))
			return rc;
		if (a->geo_given[k] && a->geo[k] > UINT32_MAX)
			return usage_err(ctx, "invalid --%s %llu: too large", o->name,
					 (unsigned long long)a->geo[k]);
		if (a->geo_given[k] || (*slots[k] < 0 && o->def))
			*slots[k] = (int64_t)a->geo[k];
	}
	if ((rc = kvxfer_fill(ctx, v, a, KVX_LAYOUT, KVX_PAGE_LAYOUT)) ||
	    (rc = kvxfer_fill(ctx, v, a, KVX_DTYPE, KVX_DTYPE)))
		return rc;
	if (a->layout)
		in->layout = a->layout;
	if (a->page_layout_given || !in->page_layout)
		in->page_layout = a->page_layout;
	if (a->dtype_given || !in->dtype)
		in->dtype = a->dtype;
	return 0;
}

/* The words: layout, page layout and dtype. */
static int geom_words(struct ctx *ctx, const struct gin *in, struct kv_geom *g)
{
	if (in->layout && kv_layout_parse(in->layout, &g->layout))
		return usage_err(ctx, "invalid layout '%s': expected paged or mla", in->layout);
	if (in->page_layout && kv_page_layout_parse(in->page_layout, &g->page_layout))
		return usage_err(ctx, "invalid page layout '%s': expected nhd or hnd",
				 in->page_layout);
	if (in->dtype && kv_dtype_parse(in->dtype, &g->dtype))
		return usage_err(ctx, "invalid dtype '%s': expected bf16, fp16 or fp8", in->dtype);
	return 0;
}

/* The layers, and the heads the layout has: paged, KV heads of head_dim;
 * mla, one latent of latent_dim (stored as one head). */
static int geom_heads(struct ctx *ctx, const struct kv_geom *g, struct gin *in)
{
	if (in->layers < 0)
		return usage_err(ctx, "kvxfer: give --layers (or --model FILE)");
	if (g->layout == KV_LAYOUT_MLA) {
		if (in->kv_heads >= 0 || in->head_dim >= 0)
			return usage_err(
				ctx,
				"kvxfer: the mla layout has no heads: give --latent-dim, not --kv-heads or --head-dim");
		if (in->latent_dim < 0)
			return usage_err(ctx, "kvxfer: the mla layout needs --latent-dim");
		in->kv_heads = 1;
		in->head_dim = in->latent_dim;
		return 0;
	}
	if (in->latent_dim >= 0)
		return usage_err(ctx, "kvxfer: --latent-dim goes with --layout mla");
	if (in->kv_heads < 0 || in->head_dim < 0)
		return usage_err(
			ctx,
			"kvxfer: the paged layout needs --kv-heads and --head-dim (or --model FILE)");
	return 0;
}

int kvxfer_geom(struct ctx *ctx, const struct opt_vals *v, struct kvxfer_args *a, struct kv_geom *g,
		char *name, size_t namelen)
{
	struct gin in = { NULL, NULL, NULL, NULL, -1, -1, -1, -1, -1, -1, -1, -1, -1 };
	json_t *model = NULL;
	struct rc_err e;
	char why[sizeof(e.msg) + 64];
	int rc;

	memset(g, 0, sizeof(*g));
	if (name && namelen)
		name[0] = '\0';
	if ((rc = geom_given(ctx, v, a, &in, &model)) || (rc = geom_words(ctx, &in, g)) ||
	    (rc = geom_heads(ctx, g, &in)))
		goto out;
	g->layers = (uint32_t)in.layers;
	g->kv_heads = (uint32_t)in.kv_heads;
	g->head_dim = (uint32_t)in.head_dim;
	g->src_tp = (uint32_t)in.src_tp;
	g->dst_tp = (uint32_t)in.dst_tp;
	g->src_page_tokens = (uint32_t)(in.src_pt >= 0 ? in.src_pt : in.page_tokens);
	g->dst_page_tokens = (uint32_t)(in.dst_pt >= 0 ? in.dst_pt : in.page_tokens);
	if (kv_geom_check(g, &e))
		rc = usage_err(ctx, "kvxfer: %s", cmds_err_text(&e, why, sizeof(why)));
	if (!rc && name && namelen)
		model_name(name, namelen, a->model, in.name);
out:
	json_decref(model);
	return rc;
}

void kvxfer_put_geom(struct out *o, const struct kv_geom *g, const char *model)
{
	bool mla = g->layout == KV_LAYOUT_MLA;

	out_obj_begin(o, "geometry");
	if (model && *model)
		out_str(o, "model", "%s: ", model);
	else
		out_null(o, "model");
	out_str(o, "layout", "%s", kv_layout_name(g->layout));
	out_u64(o, "layers", NULL, g->layers);
	out_text(o, ", %u layer%s", g->layers, g->layers == 1 ? "" : "s");
	if (mla) {
		out_u64(o, "latent_dim", ", latent of %llu dims", g->head_dim);
	} else {
		out_u64(o, "kv_heads", NULL, g->kv_heads);
		out_text(o, ", %u KV head%s", g->kv_heads, g->kv_heads == 1 ? "" : "s");
		out_u64(o, "head_dim", " x %llu dims", g->head_dim);
	}
	out_str(o, "dtype", ", %s", kv_dtype_name(g->dtype));
	out_str(o, "page_layout", ", %s pages", kv_page_layout_name(g->page_layout));
	out_u64(o, "src_tp", ", TP %llu", g->src_tp);
	out_u64(o, "dst_tp", " -> %llu", g->dst_tp);
	out_u64(o, "src_page_tokens", NULL, g->src_page_tokens);
	out_u64(o, "dst_page_tokens", NULL, g->dst_page_tokens);
	if (g->src_page_tokens == g->dst_page_tokens)
		out_text(o, ", %u token%s per page\n", g->src_page_tokens,
			 g->src_page_tokens == 1 ? "" : "s");
	else
		out_text(o, ", %u -> %u tokens per page\n", g->src_page_tokens, g->dst_page_tokens);
	out_obj_end(o);
}
