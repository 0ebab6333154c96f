// SPDX-License-Identifier: MIT
/* A text buffer with snprintf semantics, shared by the decoder and the ladder. */
#include <stdarg.h>
#include <stdio.h>

#include "inspect_text.h"

void inspect_text_printf(struct inspect_text *t, const char *fmt, ...)
{
	size_t room = t->len < t->cap ? t->cap - t->len : 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? t->p + t->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->len += (size_t)n;
}
