// SPDX-License-Identifier: MIT
/* rc_err_set, rc_err_wrap and rc_err_append: codes, NULL, context, cuts;
 * rc_err_opt and rc_err_text: named parameters, and how a program names them. */
#include <errno.h>
#include <string.h>

#include <ctype.h>
#include <stdio.h>

#include <rdmactl/config.h>
#include <rdmactl/err.h>
#include <rdmactl/err_core.h>

#include "check.h"
#include "cmds.h"

/* A namer of its own: land_pages is <LAND_PAGES>. */
static void upper(const char *field, size_t len, char *out, size_t cap)
{
	size_t o = 0;

	if (o + 1 < cap)
		out[o++] = '<';
	for (size_t i = 0; i < len && o + 1 < cap; i++)
		out[o++] = (char)toupper((unsigned char)field[i]);
	if (o + 1 < cap)
		out[o++] = '>';
	out[o] = '\0';
}

int main(void)
{
	struct rc_err e = { 0 };
	char big[700];
	char t[600];

	/* an errno of either sign; 0 (no errno set) is an error, never success */
	CHECK(rc_err_set(&e, ENOENT, "no %s", "key") == -ENOENT);
	CHECK(e.code == ENOENT);
	CHECK_STR(e.msg, "no key");
	CHECK(rc_err_set(&e, -EPROTO, "x") == -EPROTO && e.code == EPROTO);
	CHECK(rc_err_set(&e, 0, "a call failed") == -EIO);
	CHECK(e.code == EIO);
	CHECK(rc_err_set(NULL, 0, "x") == -EIO);
	CHECK(rc_err_set(NULL, ETIMEDOUT, "x") == -ETIMEDOUT);

	/* wrap: context first, the callee's message after it */
	rc_err_set(&e, ECONNREFUSED, "connection refused");
	CHECK(rc_err_wrap(&e, -ECONNREFUSED, "the source %s:%s", "a", "7471") == -ECONNREFUSED);
	CHECK_STR(e.msg, "the source a:7471: connection refused");
	/* code 0 keeps the callee's; another replaces it */
	CHECK(rc_err_wrap(&e, 0, "migrate") == -ECONNREFUSED);
	CHECK_STR(e.msg, "migrate: the source a:7471: connection refused");
	CHECK(rc_err_wrap(&e, EINVAL, "f") == -EINVAL && e.code == EINVAL);
	/* nothing to wrap: the context alone, EIO when no code anywhere */
	e = (struct rc_err){ 0 };
	CHECK(rc_err_wrap(&e, 0, "context") == -EIO);
	CHECK_STR(e.msg, "context");
	CHECK(rc_err_wrap(NULL, 0, "x") == -EIO);
	CHECK(rc_err_wrap(NULL, ENOMEM, "x") == -ENOMEM);
	/* a long message is cut to fit, the context kept whole */
	memset(big, 'w', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	rc_err_set(&e, EIO, "%s", big);
	rc_err_wrap(&e, 0, "ctx");
	CHECK(strlen(e.msg) == sizeof(e.msg) - 1);
	CHECK(!strncmp(e.msg, "ctx: www", 8));
	/* a context that fills the message leaves no room: still terminated */
	rc_err_set(&e, EIO, "why");
	rc_err_wrap(&e, 0, "%s", big);
	CHECK(strlen(e.msg) == sizeof(e.msg) - 1 && e.msg[0] == 'w');

	/* append: the callee's message, then "; MORE" */
	rc_err_set(&e, ETIMEDOUT, "no answer");
	CHECK(rc_err_append(&e, 0, "aborted: %s", "the source serves again") == -ETIMEDOUT);
	CHECK_STR(e.msg, "no answer; aborted: the source serves again");
	e = (struct rc_err){ 0 };
	CHECK(rc_err_append(&e, 0, "alone") == -EIO);
	CHECK_STR(e.msg, "alone");
	CHECK(rc_err_append(NULL, EBUSY, "x") == -EBUSY);
	rc_err_set(&e, EIO, "%s", big);
	rc_err_append(&e, 0, "more");
	CHECK(strlen(e.msg) == sizeof(e.msg) - 1);

	/* opt: each {FIELD} of the format is the field's name in msg, and named[]
	 * says where, after the values formatted before it */
	CHECK(rc_err_opt(&e, EINVAL, "no %s: give {rank} and {world} (%d)", "rank", 7) == -EINVAL);
	CHECK_STR(e.msg, "no rank: give rank and world (7)");
	CHECK(e.nnamed == 2 && e.param == NULL);
	CHECK(e.named[0].at == 14 && e.named[0].len == 4);
	CHECK(e.named[1].at == 23 && e.named[1].len == 5);
	/* a brace that names no field is text */
	rc_err_opt(&e, EINVAL, "{a b} {} {x}");
	CHECK_STR(e.msg, "{a b} {} x");
	CHECK(e.nnamed == 1 && e.named[0].at == 9);
	/* set forgets them; wrap moves the callee's after its own */
	rc_err_opt(&e, EINVAL, "give {bind}");
	rc_err_set(&e, EINVAL, "plain");
	CHECK(e.nnamed == 0);
	rc_err_opt(&e, EINVAL, "give {bind}");
	CHECK(rc_err_wrap(&e, 0, "%s of {max_conns} %d", "buffers", 9) == -EINVAL);
	CHECK_STR(e.msg, "buffers of max_conns 9: give bind");
	CHECK(e.nnamed == 2 && e.named[0].at == 11 && e.named[1].at == 29);
	rc_err_opt(&e, EINVAL, "give {bind}");
	rc_err_wrap(&e, 0, "%s", big); /* the callee cut off: its name goes */
	CHECK(e.nnamed == 0);

	/* text: each named parameter as a namer names it; with none, as the
	 * configuration's does, else by its field */
	rc_err_opt(&e, EKEYREJECTED, "give {token_file} FILE or {descriptor} (%d)", 3);
	CHECK_STR(rc_err_text(&e, upper, t, sizeof(t)),
		  "give <TOKEN_FILE> FILE or <DESCRIPTOR> (3)");
	CHECK_STR(rc_err_text(&e, NULL, t, sizeof(t)), "give token_file FILE or descriptor (3)");
	rc_config_set(&(struct rc_config){ .name_param = upper });
	CHECK_STR(rc_err_text(&e, NULL, t, sizeof(t)), "give <TOKEN_FILE> FILE or <DESCRIPTOR> (3)");
	CHECK_STR(rc_param_name("land_pages", t, sizeof(t)), "<LAND_PAGES>");
	rc_config_set(NULL);
	CHECK_STR(rc_param_name("land_pages", t, sizeof(t)), "land_pages");
	/* rdmactl's: the option */
	CHECK_STR(cmds_err_text(&e, t, sizeof(t)), "give --token-file FILE or --descriptor (3)");
	/* a short buffer cuts the text, never past it; a message naming none is
	 * itself */
	CHECK(strlen(rc_err_text(&e, upper, t, 12)) <= 11);
	rc_err_set(&e, EIO, "plain {x}");
	CHECK(rc_err_text(&e, upper, t, sizeof(t)) == e.msg);
	/* rc_err_param's one parameter, named the same way */
	rc_err_param(&e, "kv_heads", EINVAL, "kv_heads must divide 8");
	CHECK_STR(rc_err_text(&e, upper, t, sizeof(t)), "<KV_HEADS> must divide 8");
	CHECK_DONE();
}
