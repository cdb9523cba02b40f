// SPDX-License-Identifier: MIT
/*
 * The settings every rank of a group must share, checked once the group
 * stands: rank 0's go down the group's tree to every rank, each rank
 * compares its own, and a second round tells every rank which ranks
 * differ and on what. Where one does, a third round brings that rank's
 * value and rank 0's to every rank, so that each says the same: "rank 1's
 * --hidden (7168) differs from rank 0's (4096)". Three rounds of the tree
 * at most, two when the ranks agree; a group of 4096 ranks moves 32 KiB a
 * tree edge (the second round's word a rank).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmactl/xxh64_core.h>

#include "group_int.h"

/* A rank's first setting off rank 0's, 1 up; this when the ranks do not
 * check the same settings (another rdmactl, or another command). */
#define AGREE_OTHER_LIST UINT64_MAX
#define AGREE_WORDS ((RC_GROUP_SETTING_TEXT + 7) / 8)

static uint64_t setting_key(const struct rc_group_setting *s)
{
	struct rc_xxh64 h;

	rc_xxh64_init(&h, 0);
	if (s->data)
		rc_xxh64_update(&h, s->data, s->len);
	else
		rc_xxh64_update(&h, s->text, strlen(s->text));
	return rc_xxh64_value(&h);
}

static bool setting_empty(const struct rc_group_setting *s)
{
	return s->data ? !s->len : !s->text[0];
}

/* The settings' names, in order: ranks that check other lists cannot be
 * compared setting by setting. */
static uint64_t list_key(const struct rc_group_setting *s, int n)
{
	struct rc_xxh64 h;

	rc_xxh64_init(&h, (uint64_t)n);
	for (int i = 0; i < n; i++)
		rc_xxh64_update(&h, s[i].name, strlen(s[i].name) + 1);
	return rc_xxh64_value(&h);
}

/* Rank 0's settings as vals[] holds them (the list's key, then each
 * setting's key, or 0 where it was left empty and takes any): this rank's
 * first setting that differs, 1 up, or 0. */
static uint64_t first_off(const struct rc_group_setting *s, int n, const uint64_t *vals)
{
	if (vals[0] != list_key(s, n))
		return AGREE_OTHER_LIST;
	for (int i = 0; i < n; i++) {
		uint64_t ref = vals[1 + i];

		if (s[i].any_if_empty && (!ref || setting_empty(&s[i])))
			continue;
		if (ref != (setting_empty(&s[i]) ? 0 : setting_key(&s[i])))
			return (uint64_t)i + 1;
	}
	return 0;
}

static void show(const struct rc_group_setting *s, char *buf)
{
	snprintf(buf, RC_GROUP_SETTING_TEXT, "%s", setting_empty(s) ? "none" : s->text);
}

/* Rank r's value of setting i and rank 0's, to every rank (r's in the first
 * half, rank 0's in the second), and the message all of them give. */
static int say_off(struct rc_group *g, const struct rc_group_setting *s, int r, int i, int more,
		   struct rc_err *err)
{
	uint64_t words[2 * AGREE_WORDS] = { 0 };
	char theirs[AGREE_WORDS * 8 + 1] = "", ref[AGREE_WORDS * 8 + 1] = "";
	int me = g->o.rank, rc;

	if (me == r)
		show(&s[i], (char *)words);
	if (me == 0)
		show(&s[i], (char *)(words + AGREE_WORDS));
	if ((rc = group_tree_sum(g, words, 2 * AGREE_WORDS, err)))
		return rc;
	memcpy(theirs, words, AGREE_WORDS * 8);
	memcpy(ref, words + AGREE_WORDS, AGREE_WORDS * 8);
	if (more)
		return rc_err_set(err, EINVAL,
				  "rank %d's %s (%s) differs from rank 0's (%s); %d more rank%s "
				  "differ%s from rank 0: every rank needs the same",
				  r, s[i].name, theirs, ref, more, more == 1 ? "" : "s",
				  more == 1 ? "s" : "");
	return rc_err_set(err, EINVAL,
			  "rank %d's %s (%s) differs from rank 0's (%s): every rank needs the same",
			  r, s[i].name, theirs, ref);
}

int rc_group_agree(struct rc_group *g, const struct rc_group_setting *s, int n, struct rc_err *err)
{
	uint64_t vals[1 + RC_GROUP_SETTINGS_MAX] = { 0 }, *off;
	int W = g->o.world, first = -1, more = 0, rc;

	if (n < 0 || n > RC_GROUP_SETTINGS_MAX)
		return rc_err_set(err, EINVAL, "%d settings to agree on (at most %d)", n,
				  RC_GROUP_SETTINGS_MAX);
	if (g->o.rank == 0) {
		vals[0] = list_key(s, n);
		for (int i = 0; i < n; i++)
			vals[1 + i] = setting_empty(&s[i]) ? 0 : setting_key(&s[i]);
	}
	/* only rank 0 adds anything: the sum is its settings */
	if ((rc = group_tree_sum(g, vals, 1 + RC_GROUP_SETTINGS_MAX, err)))
		return rc;
	if (!(off = calloc((size_t)W, sizeof(*off))))
		return rc_err_set(err, ENOMEM, "out of memory");
	off[g->o.rank] = first_off(s, n, vals);
	if ((rc = group_tree_sum(g, off, (size_t)W, err)))
		goto out;
	for (int r = 0; r < W; r++)
		if (off[r] && first < 0)
			first = r;
		else if (off[r])
			more++;
	if (first < 0)
		goto out;
	if (off[first] == AGREE_OTHER_LIST)
		rc = rc_err_set(err, EPROTO,
				"rank %d checks other settings than rank 0 (another rdmactl, or "
				"another command?)",
				first);
	else
		rc = say_off(g, s, first, (int)off[first] - 1, more, err);
out:
	free(off);
	return rc;
}
