// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pyembed LIBPYTHON SCRIPT ARGS...
 *
 * An application that embeds CPython the way plugin hosts do: not linked against libpython,
 * it dlopen()s LIBPYTHON (RTLD_GLOBAL, so the interpreter's extension modules find its
 * symbols) after the "ready" handshake, then runs SCRIPT ARGS... with Py_BytesMain, as
 * `python SCRIPT ARGS...` would (PYTHONHOME must say where its standard library is).
 * The interpreter appears in the process only after a tracer attached: its frames are named
 * once a rescan found it. With SCENARIO_SYNC=1: "ready <pid>", "loaded" (waits for a line),
 * then SCRIPT runs, SCENARIO_SYNC=1 for it too; exits with its status.
 */
#include <dlfcn.h>
#include <stdio.h>
#include "scenario.h"

int main(int argc, char **argv)
{
	int (*bytes_main)(int, char **);
	void *h;

	if (argc < 3) {
		fprintf(stderr, "usage: pyembed LIBPYTHON SCRIPT [ARGS...]\n");
		return 2;
	}
	scenario_ready();
	h = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		fprintf(stderr, "pyembed: %s\n", dlerror());
		return 1;
	}
	*(void **)&bytes_main = dlsym(h, "Py_BytesMain");
	if (!bytes_main) {
		fprintf(stderr, "pyembed: no Py_BytesMain in %s\n", argv[1]);
		return 1;
	}
	scenario_say("loaded\n");
	if (scenario_sync())
		scenario_wait_line();
	/* argv[1] becomes the program name: `python SCRIPT ARGS...` */
	return bytes_main(argc - 1, argv + 1);
}
