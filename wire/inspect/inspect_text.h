/* SPDX-License-Identifier: MIT */
/* Private to wire/: a text buffer with snprintf semantics, for the decoder's and the ladder's output. */
#ifndef UROCE_INSPECT_TEXT_H
#define UROCE_INSPECT_TEXT_H

#include <stddef.h>

/*
 * Text goes to p[0..cap-1] as far as it fits (always NUL-terminated when
 * cap > 0); len counts the whole text, also past cap, so a caller can tell
 * how large a buffer it needed, as with snprintf().
 */
struct inspect_text {
	char	*p;
	size_t	cap;
	size_t	len;
};

__attribute__((format(printf, 2, 3)))
void inspect_text_printf(struct inspect_text *t, const char *fmt, ...);

#endif
