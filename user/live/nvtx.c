// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/log.h"
#include "live/nvtx.h"

/* libgpuleak_nvtx.so: next to gpuleak, in its build tree, or installed beside it. */
static int inject_path(char *buf, size_t len)
{
	static const char *const rel[] = {"libgpuleak_nvtx.so", ".output/libgpuleak_nvtx.so",
					  "../lib/gpuleak/libgpuleak_nvtx.so"};
	const char *env = getenv("GPULEAK_NVTX_LIB");
	char exe[4096], *slash;
	ssize_t n;
	size_t i;

	if (env) {
		snprintf(buf, len, "%s", env);
		return access(buf, R_OK) ? -errno : 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -ENOENT;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		if (snprintf(buf, len, "%.*s/%s", (int)(len / 2), exe, rel[i]) >= (int)len)
			continue;
		if (!access(buf, R_OK))
			return 0;
	}
	return -ENOENT;
}

int nvtx__inject_env(char *buf, size_t len)
{
	char path[4096];

	if (inject_path(path, sizeof(path))) {
		pr_err("--step nvtx: needs libgpuleak_nvtx.so next to gpuleak (build it with "
		       "make) or GPULEAK_NVTX_LIB\n");
		return -ENOENT;
	}
	if (getenv("NVTX_INJECTION64_PATH"))
		pr_warn("NVTX_INJECTION64_PATH was set; gpuleak's injection library "
			"replaces it for the target\n");
	snprintf(buf, len, "NVTX_INJECTION64_PATH=%s", path);
	return 0;
}
