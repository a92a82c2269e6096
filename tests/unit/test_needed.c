// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "probe/needed.h"

/* The shell's libraries, found where ld.so finds them, breadth first, each once. */
static void system_exe(void)
{
	struct needed *nd = NULL;
	const struct needed_obj *libc = NULL;
	size_t i, j;

	if (!CHECK(!needed__load("/bin/sh", &nd), "/bin/sh loads"))
		return;
	CHECK(!strcmp(nd->v[0].name, "/bin/sh") && nd->v[0].elf, "the executable first");
	for (i = 1; i < nd->n; i++) {
		if (!strcmp(nd->v[i].name, "libc.so.6"))
			libc = &nd->v[i];
		for (j = 1; j < i; j++)
			CHECK(strcmp(nd->v[i].name, nd->v[j].name), "%s once", nd->v[i].name);
	}
	CHECK(libc && libc->path && libc->elf && strstr(libc->path, "/libc"), "libc.so.6 found: %s",
	      libc && libc->path ? libc->path : "(none)");
	needed__free(nd);
}

/* Not ELF, or not there: an error, and nothing to free. */
static void not_elf(void)
{
	struct needed *nd = (struct needed *)1;

	CHECK(needed__load("/etc/hostname", &nd) < 0 && !nd, "a text file");
	nd = (struct needed *)1;
	CHECK(needed__load("/nonexistent", &nd) < 0 && !nd, "a missing file");
	needed__free(NULL);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"needed_system_exe", system_exe},
	    {"needed_not_elf", not_elf},
	};

	return run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
