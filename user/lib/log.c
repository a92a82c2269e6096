// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "lib/log.h"
#include "lib/term.h"

int gl_verbosity;

void gl_log(const char *prefix, const char *fmt, ...)
{
	char small[1024], *msg = small;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(small)) {
		va_start(ap, fmt);
		if (vasprintf(&msg, fmt, ap) < 0)
			msg = small; /* out of memory: the message cut short */
		va_end(ap);
	}
	/* One line whole, whichever thread says it (start-up calibrates on a thread of its own). */
	flockfile(stderr);
	fputs(prefix, stderr);
	term_fputs(msg, stderr, TERM_KEEP_LINES);
	funlockfile(stderr);
	if (msg != small)
		free(msg);
}
