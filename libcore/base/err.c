// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <rdmactl/err.h>
#include <rdmactl/err_core.h>
#include <rdmactl/config_core.h>

/* An error's code: code (either sign), else the callee's in e (NULL: none),
 * else EIO; never 0, which would read as success. */
static int err_code(const struct rc_err *e, int code)
{
	if (code < 0)
		code = -code;
	return code ? code : e && e->code > 0 ? e->code : EIO;
}

int rc_err_set(struct rc_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	code = err_code(NULL, code);
	if (e) {
		e->code = code;
		e->param = NULL;
		e->nnamed = 0;
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	return -code;
}

int rc_err_param(struct rc_err *e, const char *param, int code, const char *fmt, ...)
{
	va_list ap;

	code = err_code(NULL, code);
	if (e) {
		e->code = code;
		e->param = param;
		e->nnamed = 0;
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	return -code;
}

int rc_err_append(struct rc_err *e, int code, const char *fmt, ...)
{
	size_t n;
	va_list ap;

	code = err_code(e, code);
	if (!e)
		return -code;
	e->msg[sizeof(e->msg) - 1] = '\0';
	n = strlen(e->msg);
	if (n && n + 2 < sizeof(e->msg)) {
		memcpy(e->msg + n, "; ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(e->msg + n, sizeof(e->msg) - n, fmt, ap);
	va_end(ap);
	e->code = code;
	return -code;
}

/* The length of fmt's first k bytes as formatted with ap (a copy). */
static size_t formatted_len(const char *fmt, size_t k, va_list ap)
{
	char prefix[sizeof(((struct rc_err *)0)->msg)];
	va_list cp;
	int n;

	snprintf(prefix, sizeof(prefix), "%.*s", (int)k, fmt);
	va_copy(cp, ap);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	n = vsnprintf(NULL, 0, prefix, cp);
#pragma GCC diagnostic pop
	va_end(cp);
	return n > 0 ? (size_t)n : 0;
}

/* fmt without the braces of its {FIELD}s (the first RC_ERR_NAMED), into
 * out; each one's place in out and length in e->named. */
static void strip_named(struct rc_err *e, const char *fmt, char *out, size_t cap, size_t *where)
{
	size_t o = 0;

	e->nnamed = 0;
	for (const char *p = fmt; *p && o + 1 < cap; p++) {
		size_t len = *p == '{' ? strspn(p + 1, "abcdefghijklmnopqrstuvwxyz0123456789_") : 0;

		if (len && p[len + 1] == '}' && e->nnamed < RC_ERR_NAMED) {
			where[e->nnamed] = o;
			e->named[e->nnamed++].len = (unsigned short)len;
			len = len < cap - 1 - o ? len : cap - 1 - o;
			memcpy(out + o, p + 1, len);
			o += len;
			p += len + 1;
			continue;
		}
		out[o++] = *p;
	}
	out[o] = '\0';
}

/* e->msg from fmt and ap, its {FIELD}s named (e->named). */
static void format_named(struct rc_err *e, const char *fmt, va_list ap)
{
	char plain[sizeof(e->msg)];
	size_t where[RC_ERR_NAMED];

	strip_named(e, fmt, plain, sizeof(plain), where);
	for (int i = 0; i < e->nnamed; i++)
		e->named[i].at = (unsigned short)formatted_len(plain, where[i], ap);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	vsnprintf(e->msg, sizeof(e->msg), plain, ap);
#pragma GCC diagnostic pop
}

int rc_err_opt(struct rc_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	code = err_code(NULL, code);
	if (!e)
		return -code;
	e->code = code;
	e->param = NULL;
	va_start(ap, fmt);
	format_named(e, fmt, ap);
	va_end(ap);
	return -code;
}

/* The message fmt (its {FIELD}s named), ": ", then the callee's, whose
 * named parameters move with it. */
int rc_err_wrap(struct rc_err *e, int code, const char *fmt, ...)
{
	struct rc_err old;
	size_t n;
	va_list ap;

	code = err_code(e, code);
	if (!e)
		return -code;
	old = *e;
	old.msg[sizeof(old.msg) - 1] = '\0';
	if (old.nnamed < 0 || old.nnamed > RC_ERR_NAMED)
		old.nnamed = 0;
	va_start(ap, fmt);
	format_named(e, fmt, ap);
	va_end(ap);
	n = strlen(e->msg);
	if (old.msg[0] && n + 2 < sizeof(e->msg)) {
		size_t w = strlen(old.msg), room = sizeof(e->msg) - n - 3;

		if (w > room)
			w = room;
		memcpy(e->msg + n, ": ", 2);
		memcpy(e->msg + n + 2, old.msg, w);
		e->msg[n + 2 + w] = '\0';
		for (int i = 0; i < old.nnamed && e->nnamed < RC_ERR_NAMED; i++)
			if (old.named[i].at + old.named[i].len <= w) {
				e->named[e->nnamed] = old.named[i];
				e->named[e->nnamed++].at += (unsigned short)(n + 2);
			}
	}
	e->code = code;
	return -code;
}

/* name, else rc_config's (NULL: the field itself) */
static const char *param_as(rc_param_namer name, const char *field, size_t len, char *buf,
			    size_t cap)
{
	if (!cap)
		return "";
	if (!name)
		name = rc_config()->name_param;
	if (name)
		name(field, len, buf, cap);
	else
		snprintf(buf, cap, "%.*s", (int)len, field);
	return buf;
}

const char *rc_param_name(const char *field, char *buf, size_t cap)
{
	return param_as(NULL, field, strlen(field), buf, cap);
}

/* The message with each parameter it names (e->named) as the program
 * names it. */
static const char *named_text(const struct rc_err *e, rc_param_namer name, char *buf, size_t len)
{
	size_t at = 0, o = 0, mlen = strnlen(e->msg, sizeof(e->msg));

	for (int i = 0; i < e->nnamed && i < RC_ERR_NAMED; i++) {
		size_t s = e->named[i].at, n = e->named[i].len;

		if (s < at || s + n > mlen || o + (s - at) + n + 3 > len)
			continue;
		memcpy(buf + o, e->msg + at, s - at);
		o += s - at;
		param_as(name, e->msg + s, n, buf + o, len - o);
		o += strlen(buf + o);
		at = s + n;
	}
	snprintf(buf + o, len - o, "%.*s", (int)(mlen - at), e->msg + at);
	return buf;
}

const char *rc_err_text(const struct rc_err *e, rc_param_namer name, char *buf, size_t len)
{
	size_t n = e->param ? strlen(e->param) : 0;
	const char *at = n ? strstr(e->msg, e->param) : NULL;
	char as[64];

	if (!len)
		return e->msg;
	if (e->nnamed > 0 && e->nnamed <= RC_ERR_NAMED)
		return named_text(e, name, buf, len);
	if (!at)
		return e->msg;
	param_as(name, e->param, n, as, sizeof(as));
	snprintf(buf, len, "%.*s%s%s", (int)(at - e->msg), e->msg, as, at + n);
	return buf;
}
