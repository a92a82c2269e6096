// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libnofp.so for the `stacks` scenario: built with -fomit-frame-pointer, as most
 * distribution libraries are. nofp_call keeps %rbp as its caller left it, so a frame-pointer
 * walk through it skips its caller: gpuleak says the frames after it were unwound without
 * frame pointers.
 */
typedef int (*nofp_cb)(int);

__attribute__((noinline, visibility("default"))) int nofp_call(nofp_cb cb, int x)
{
	/* work after the call: a frame of its own, not a tail call */
	return cb(x) * 3 + 1;
}
