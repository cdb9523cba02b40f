// SPDX-License-Identifier: MIT
/* A rank on several rails: the rails' work at once, a thread a rail
 * (rc_group_rails_run), for the layers that stripe over groups (a2a, mcast). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include <rdmactl/err_core.h>
#include <rdmactl/group_core.h>

struct rail_thread {
	void (*fn)(void *item);
	void *item;
};

static void *rail_thread_main(void *arg)
{
	struct rail_thread *t = arg;

	t->fn(t->item);
	return NULL;
}

void rc_group_rails_run(int n, void (*fn)(void *item), void *items, size_t size,
			void (*nostart)(void *item, int err))
{
	pthread_t *th = calloc((size_t)n, sizeof(*th));
	struct rail_thread *t = calloc((size_t)n, sizeof(*t));
	bool *started = calloc((size_t)n, sizeof(*started));

	for (int i = 1; i < n; i++) {
		void *item = (char *)items + (size_t)i * size;
		int e = th && t && started ? 0 : ENOMEM;

		if (!e) {
			t[i] = (struct rail_thread){ .fn = fn, .item = item };
			e = pthread_create(&th[i], NULL, rail_thread_main, &t[i]);
		}
		if (!e)
			started[i] = true;
		else if (nostart)
			nostart(item, e);
	}
	fn(items);
	for (int i = 1; started && i < n; i++)
		if (started[i])
			pthread_join(th[i], NULL);
	free(th);
	free(t);
	free(started);
}

int rc_group_rail_err(struct rc_group *const *g, int i, int code, const char *msg,
		      struct rc_err *err)
{
	const char *dev = rc_group_dev(g[i]);

	return rc_err_set(err, -code, "rail %d (%s): %s", i + 1, dev ? dev : "?", msg);
}
