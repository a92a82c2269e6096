/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The exit status of every gpuleak command, in one place: the numbers are an interface (CI
 * scripts test for 3 and 5, the man page and every --help list them), so they never change.
 * 4 is kept for the status of a traced target that failed (issue 15). When several apply, the
 * first that does wins: a usage error, then a runtime error (no result to judge), then the
 * gate of the command (3 for attach/run/record/report, 5 for diff), then 0.
 */
#ifndef GPULEAK_EXIT_H
#define GPULEAK_EXIT_H

enum gl_exit {
	GL_EXIT_OK = 0,		/* done */
	GL_EXIT_ERROR = 1,	/* a runtime error: said on stderr */
	GL_EXIT_USAGE = 2,	/* a usage error: the command line is wrong */
	GL_EXIT_GATE = 3,	/* --fail-on-leak: the gate found leaks */
	GL_EXIT_REGRESSION = 5, /* diff --fail-on-regression: the new run regressed */
};

#endif
