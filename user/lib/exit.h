/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The exit status of every gpuleak command, in one place: the numbers are an interface (CI
 * scripts test for 3 and 5, the man page and every --help list them), so they never change.
 *
 * When several apply, the first of these wins: 2 (nothing ran), 1 (gpuleak's own failure:
 * what it says cannot be trusted), 3 (its finding, as valgrind's --error-exitcode and
 * compute-sanitizer's come before the program's status), 4 (the command failed), 0. diff runs
 * no command and has no --fail-on-leak: its gate is 5, after 2 and 1.
 */
#ifndef GPULEAK_LIB_EXIT_H
#define GPULEAK_LIB_EXIT_H

enum gl_exit {
	GL_EXIT_OK = 0,		/* done */
	GL_EXIT_ERROR = 1,	/* a runtime error: said on stderr */
	GL_EXIT_USAGE = 2,	/* a usage error: the command line is wrong */
	GL_EXIT_GATE = 3,	/* --fail-on-leak: the gate found leaks */
	GL_EXIT_TARGET = 4,	/* run, record -- CMD: the command exited non-zero or was killed by
				 * a signal while traced (its status is said on stderr) */
	GL_EXIT_REGRESSION = 5, /* diff --fail-on-regression: the new run regressed */
};

#endif
