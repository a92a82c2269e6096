/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Shared by the scenario programs the end-to-end tests trace.
 *
 * With SCENARIO_SYNC=1 a scenario prints "ready <pid>" once its untraced set-up is done and
 * waits for one line on stdin, so a test can attach gpuleak before the traced work starts;
 * at the end it prints "done" and waits for one more line, so the test can read the tracer's
 * view while the target is still alive. End of file on stdin counts as a line: a test that
 * dies does not leave scenarios blocked. Without SCENARIO_SYNC only "done" is printed.
 *
 * Every CUDA call whose result is not the one the scenario expects ends the program with
 * status 1 and a message on stderr: the tests depend on exact behaviour, and a scenario that
 * silently carried on would turn a stand-in bug into a confusing tracer failure.
 *
 * C and C++ (static_cudart.cu goes through nvcc).
 */
#ifndef GPULEAK_SCENARIO_H
#define GPULEAK_SCENARIO_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The tracer names a site by the return address of the API call, so every traced call sits
 * in its own named function that is never inlined, and the call is never the function's last
 * act (the check of its result follows it), so it cannot become a tail call.
 */
#define SCENARIO_SITE __attribute__((noinline))

/*
 * Hides @x's value from the optimizer. A loop over a constant count whose index goes through
 * this cannot be unrolled, so all its iterations call the API from one instruction: one site
 * per call in the source, whichever compiler built it.
 */
#define SCENARIO_OPAQUE(x) __asm__ volatile("" : "+r"(x))

static inline int scenario_sync(void)
{
	const char *s = getenv("SCENARIO_SYNC");

	return s && !strcmp(s, "1");
}

static inline void scenario_say(const char *line)
{
	fputs(line, stdout);
	fflush(stdout);
}

/* One line, or end of file; a read error is a broken test harness. */
static inline void scenario_wait_line(void)
{
	char c;

	for (;;) {
		ssize_t n = read(STDIN_FILENO, &c, 1);

		if (n == 0)
			return;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("scenario: read stdin");
			exit(1);
		}
		if (c == '\n')
			return;
	}
}

/* Call when the untraced set-up is done and the traced work is about to start. */
static inline void scenario_ready(void)
{
	if (scenario_sync()) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		scenario_wait_line();
	}
}

/* Call when the traced work is over; the process exits when this returns. */
static inline void scenario_done(void)
{
	scenario_say("done\n");
	if (scenario_sync())
		scenario_wait_line();
}

__attribute__((noreturn)) static inline void scenario_fail(const char *file, int line,
							   const char *expr, long got, long want)
{
	fprintf(stderr, "scenario: %s:%d: %s returned %ld, expected %ld\n", file, line, expr, got,
		want);
	exit(1);
}

/* Runs @call (a CUDA call) and ends the scenario unless it returned @want. */
#define SCENARIO_EXPECT(call, want)                                                                \
	do {                                                                                       \
		long __rc = (long)(call);                                                          \
		if (__rc != (long)(want))                                                          \
			scenario_fail(__FILE__, __LINE__, #call, __rc, (long)(want));              \
	} while (0)

#define SCENARIO_OK(call) SCENARIO_EXPECT(call, 0)

/* "4096", "64K", "2M", "1G": binary multiples. Ends the program on anything else. */
static inline unsigned long long scenario_bytes(const char *s, const char *what)
{
	unsigned long long v, mul = 1;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		goto bad;
	switch (*end) {
	case 'K':
	case 'k':
		mul = 1ULL << 10;
		end++;
		break;
	case 'M':
	case 'm':
		mul = 1ULL << 20;
		end++;
		break;
	case 'G':
	case 'g':
		mul = 1ULL << 30;
		end++;
		break;
	}
	if (*end || (v && mul > ~0ULL / v))
		goto bad;
	return v * mul;
bad:
	fprintf(stderr, "scenario: %s: bad number '%s'\n", what, s);
	exit(2);
}

static inline void scenario_usage(int argc, int want, const char *usage)
{
	if (argc != want) {
		fprintf(stderr, "usage: %s\n", usage);
		exit(2);
	}
}

#endif
