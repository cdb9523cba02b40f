// SPDX-License-Identifier: MIT
/* Nested command tables: which sub-commands take an option (a row's in
 * bits), their names in a message or a help line. The parser (opts.c),
 * the dispatcher (dispatch.c), help and completion stand on these; they
 * call none of them. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"

bool opt_for(const struct cmd *c, const struct cmd_opt *o)
{
	int k = 0;

	if (!c || !c->parent || !o->in)
		return true;
	while (c->parent->subs[k] && c->parent->subs[k] != c)
		k++;
	return (o->in >> k) & 1u;
}

/* The sub-commands of c whose bit is in mask: their last words joined as
 * "a, b or c" (joint " or "), or their whole names quoted (quote set). */
void cmd_subs_words(const struct cmd *c, unsigned mask, bool quote, const char *joint, char *buf,
		    size_t cap)
{
	int n = 0, k = 0;

	buf[0] = '\0';
	for (int i = 0; c->subs[i]; i++)
		n += (mask >> i) & 1u;
	for (int i = 0; c->subs[i]; i++) {
		const char *name = c->subs[i]->name, *w = strrchr(name, ' ');
		size_t len = strlen(buf);

		if (!((mask >> i) & 1u))
			continue;
		k++;
		snprintf(buf + len, cap - len, quote ? "%s'%s'" : "%s%s",
			 k == 1   ? ""
			 : k == n ? joint
				  : ", ",
			 quote || !w ? name : w + 1);
	}
}

void opt_not_for_text(const struct cmd *c, const struct cmd_opt *o, char *buf, size_t cap)
{
	char owners[256];

	cmd_subs_words(c->parent, o->in, true, " and ", owners, sizeof(owners));
	snprintf(buf, cap, "%s: --%s does not apply here: --%s belongs to %s, not '%s'", c->name,
		 o->name, o->name, owners, c->name);
}

const char *cmd_opt_help(const struct cmd *c, const struct cmd_opt *o, char *buf, size_t cap)
{
	char help[512], subs[128];
	const char *h = opt_help(o, help, sizeof(help));

	if (!c || !c->subs || !o->in) {
		snprintf(buf, cap, "%s", h);
		return buf;
	}
	cmd_subs_words(c, o->in, false, ", ", subs, sizeof(subs));
	snprintf(buf, cap, "%s: %s", subs, h);
	return buf;
}
