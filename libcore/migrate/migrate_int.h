/* SPDX-License-Identifier: MIT */
/*
 * Inside migrate/: the requests both moves make (migrate.c), for the live
 * move (live.c). Not installed.
 */
#ifndef RDMACTL_MIGRATE_INT_H
#define RDMACTL_MIGRATE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <rdmactl/migrate.h>
#include <rdmactl/ctrl_core.h>

/* Both sides connected and checked against each other, and the report's
 * names filled in; on failure what was opened stays in *a and *b for the
 * caller to close. */
int mig_open_pair(const struct rc_migrate_opts *o, struct rc_client **a, struct rc_client **b,
		  struct rc_migrate_result *r, struct rc_err *err);

/* The caller's progress hook, when it has one (round 0: nothing to tell). */
void mig_tell(const struct rc_migrate_opts *o, const char *step, int round, uint64_t done,
	      uint64_t total);

/* Have the destination b pull ext[0..n) of region. first: it (re)connects
 * to the source; last: it closes that connection after; rkey: read with
 * it (0: the one the source lists); digest: RC_PULL_DIGEST or 0. The bytes
 * pulled go to *bytes; round is the progress hook's. */
int mig_pull_some(struct rc_client *b, const struct rc_migrate_opts *o, const char *region,
		  const struct rc_extent *ext, size_t n, bool first, bool last, uint32_t rkey,
		  uint32_t digest, int round, uint64_t *bytes, struct rc_err *err);

/* sha256 of ext[0..n) of region at one side. flags: RC_HASH_DST,
 * RC_HASH_BLOCKS (then ext is one range, one request). */
int mig_hash_all(struct rc_client *cl, const char *side, uint32_t flags, const char *region,
		 const struct rc_extent *ext, size_t n, uint64_t cap, int wait_ms,
		 unsigned char digest[RC_SHA256_LEN], struct rc_err *err);

/* One migration step (RC_MIG_TRACK ... RC_MIG_DROP) asked of the source a;
 * its answer in *resp. */
int mig_step(struct rc_client *a, enum rc_mig_step s, uint32_t move, const char *region,
	     const char *arg, struct rc_mig_resp *resp, int wait_ms, struct rc_err *err);

#endif
