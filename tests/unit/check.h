/* SPDX-License-Identifier: MIT */
/* A minimal assertion kit for the unit tests: each failure names file:line. */
#ifndef RDMACTL_CHECK_H
#define RDMACTL_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;

#define CHECK(cond) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			check_failures++; \
		} \
	} while (0)

#define CHECK_EQ_U64(a, b) \
	do { \
		unsigned long long a_ = (a), b_ = (b); \
		if (a_ != b_) { \
			fprintf(stderr, "%s:%d: %s == %llu, expected %llu\n", __FILE__, __LINE__, \
				#a, a_, b_); \
			check_failures++; \
		} \
	} while (0)

#define CHECK_STR(a, b) \
	do { \
		const char *a_ = (a), *b_ = (b); \
		if (strcmp(a_, b_)) { \
			fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, \
				__LINE__, #a, a_, b_); \
			check_failures++; \
		} \
	} while (0)

#define CHECK_DONE() \
	do { \
		if (check_failures) \
			fprintf(stderr, "%d check(s) failed\n", check_failures); \
		return check_failures ? 1 : 0; \
	} while (0)

#endif
