// SPDX-License-Identifier: MIT
/* Every errno the code can return has a name in the JSON error "code". */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "output.h"

#define NAMED(e) \
	{ \
		e, #e \
	}

int main(void)
{
	/* Returned by libcore and the commands themselves (grep for them): each
	 * must come out under its own name. */
	static const struct {
		int value;
		const char *name;
	} returned[] = {
		NAMED(EINVAL),
		NAMED(ENOMEM),
		NAMED(EIO),
		NAMED(EBADMSG),
		NAMED(ETIMEDOUT),
		NAMED(ENOENT),
		NAMED(ENAMETOOLONG),
		NAMED(ENODEV),
		NAMED(ENOSPC),
		NAMED(EINTR),
		NAMED(EPROTO),
		NAMED(ERANGE),
		NAMED(EEXIST),
		NAMED(EHOSTUNREACH),
		NAMED(EAGAIN),
		NAMED(ECONNRESET),
		NAMED(ECONNREFUSED),
		NAMED(EACCES),
		NAMED(EXDEV),
		NAMED(ENOTSUP),
		NAMED(ECANCELED),
		NAMED(EPERM),
		NAMED(EOVERFLOW),
		NAMED(ENETDOWN),
		NAMED(EBUSY),
		NAMED(ENOTDIR),
		NAMED(ENOTCONN),
		NAMED(ENODATA),
		NAMED(ENOBUFS),
		NAMED(EFBIG),
		NAMED(EAFNOSUPPORT),
		/* passed through from the kernel by verbs and rdma_cm calls */
		NAMED(EADDRINUSE),
		NAMED(EADDRNOTAVAIL),
		NAMED(ENETUNREACH),
		NAMED(ECONNABORTED),
		NAMED(EMFILE),
		NAMED(EROFS),
		NAMED(EISDIR),
		NAMED(ENOSYS),
		NAMED(EFAULT),
	};

	for (size_t i = 0; i < sizeof(returned) / sizeof(returned[0]); i++) {
		const char *name = out_errno_name(returned[i].value);

		CHECK(name != NULL);
		if (name)
			CHECK_STR(name, returned[i].name);
	}
	/* Any other value the kernel may hand back through errno is named too. */
	for (int e = 1; e < 134; e++) {
		if (!strncmp(strerror(e), "Unknown error", 13))
			continue;
		if (!out_errno_name(e))
			fprintf(stderr, "errno %d (%s) has no name\n", e, strerror(e));
		CHECK(out_errno_name(e) != NULL);
	}
	CHECK(out_errno_name(0) == NULL);
	CHECK(out_errno_name(-EINVAL) == NULL);
	CHECK_DONE();
}
