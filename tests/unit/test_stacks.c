// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Stacks as user space keeps them (stacks.c: the kernel's frames made canonical, truncation)
 * and as the symbolizer names and judges them, on real objects this process maps: two copies
 * of one library (one symbol table for both: same build-id), a mangled export (demangled),
 * a library without frame pointers (the walk through it is flagged). Needs the test
 * libraries `make unit` builds next to this binary (../lib); no root: the mount namespace is
 * made in a user namespace of its own when not root.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "probe/elf_obj.h"
#include "probe/modules.h"
#include "probe/proc_maps.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"

#define GROW_MANGLED "_ZN6gpuapp5cache4growEPFvmEm"
#define GROW	     "gpuapp::cache::grow(void (*)(unsigned long), unsigned long)"

static void canonical_frames(void)
{
	struct stacks *s;
	struct ustack *st, *again;
	const uint64_t with_site[] = {0x1010, 0x2020, 0x3030};
	const uint64_t without_site[] = {0x2020, 0x3030};
	int is_new;

	if (!CHECK(!stacks__new(&s), "new"))
		return;
	/* the kernel put the call site first (a probe on push %rbp): taken as it is */
	CHECK(!stacks__intern(s, 7, 1, 0x1010, with_site, 3, 8, &st, &is_new), "intern");
	CHECK(is_new && st->nr == 3 && !memcmp(st->frames, with_site, sizeof(with_site)) &&
		  !st->flags,
	      "as is: nr %u flags %u", st->nr, st->flags);
	/* it did not (a single-stepped probe): the call site goes first */
	CHECK(!stacks__intern(s, 7, 2, 0x1010, without_site, 2, 8, &st, &is_new), "intern");
	CHECK(is_new && st->nr == 3 && st->frames[0] == 0x1010 && st->frames[1] == 0x2020 &&
		  st->frames[2] == 0x3030 && !st->flags,
	      "call site added: nr %u", st->nr);
	/* the same key: the same entry, nothing new */
	CHECK(!stacks__intern(s, 7, 2, 0x1010, without_site, 2, 8, &again, &is_new), "again");
	CHECK(again == st && !is_new, "interned once");
	/* a full map (depth + 1 frames) means the walk went on: cut, flagged */
	CHECK(!stacks__intern(s, 7, 3, 0x1010, with_site, 3, 2, &st, &is_new), "depth 2");
	CHECK(st->nr == 2 && (st->flags & STACK_TRUNCATED), "cut: nr %u flags %u", st->nr,
	      st->flags);
	/* depth + 1 frames once the call site is added: cut too */
	CHECK(!stacks__intern(s, 7, 4, 0x1010, without_site, 2, 2, &st, &is_new), "depth 2");
	CHECK(st->nr == 2 && (st->flags & STACK_TRUNCATED), "cut: nr %u", st->nr);
	/* exactly depth frames: nothing cut */
	CHECK(!stacks__intern(s, 7, 5, 0x1010, with_site, 2, 2, &st, &is_new), "depth 2");
	CHECK(st->nr == 2 && !st->flags, "whole: nr %u flags %u", st->nr, st->flags);
	/* same id and caller in another process: another stack */
	CHECK(!stacks__intern(s, 8, 1, 0x1010, without_site, 2, 8, &st, &is_new) && is_new,
	      "per process");
	CHECK(stacks__count(s) == 6 && stacks__at(s, 5) == st && st->index == 5, "order");
	CHECK(stacks__intern(s, 7, 9, 0x1010, with_site, 3, 1, &st, &is_new) == -EINVAL,
	      "more frames than the map holds");
	CHECK(stacks__add(s, 9, 1, 0x1010, with_site, 3, 1 << 7, 0) == -EINVAL, "unknown flags");
	CHECK(stacks__add(s, 9, 1, 0x1010, with_site, 3, STACK_NO_FP, 4) == -EINVAL,
	      "flagged past the end");
	CHECK(!stacks__add(s, 9, 1, 0x1010, with_site, 3, STACK_NO_FP, 2), "recorded");
	st = stacks__get(s, 9, 1, 0x1010);
	CHECK(st && st->nr == 3 && st->flags == STACK_NO_FP && st->nofp_from == 2, "as recorded");
	CHECK(!stacks__get(s, 9, 1, 0x1011) && !stacks__get(s, 9, -1, 0x1010), "absent");
	stacks__free(s);
}

/* The test libraries: ../lib next to this executable. */
static int lib_path(const char *name, char *buf, size_t len)
{
	char exe[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return -1;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = 0;
	return snprintf(buf, len, "%s/../lib/%s", exe, name) >= (int)len ? -1 : 0;
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0700);
	ssize_t n;
	int err = in < 0 || out < 0;

	while (!err && (n = read(in, buf, sizeof(buf))) > 0)
		err = write(out, buf, n) != n;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return err ? -1 : 0;
}

static void named_and_judged_on_real_objects(void)
{
	char helper[PATH_MAX], nofp[PATH_MAX], dir[] = "/tmp/gpuleak-unit-XXXXXX";
	char copy[2][PATH_MAX + 16] = {"", ""};
	void *h[3] = {}, *fn[2];
	uint64_t at[2], nofp_ret, frames[2];
	struct modules *mods = NULL;
	struct symbolizer *s = NULL;
	struct proc_maps *m = NULL;
	struct symbolizer_stats st;
	const struct ustack *us;
	int i;

	if (!CHECK(!lib_path("libstackhelper.so", helper, sizeof(helper)) &&
		       !lib_path("libnofp.so", nofp, sizeof(nofp)) && mkdtemp(dir),
		   "paths"))
		return;
	/* two files, one build-id */
	for (i = 0; i < 2; i++) {
		snprintf(copy[i], sizeof(copy[i]), "%s/copy%d.so", dir, i + 1);
		if (!CHECK(!copy_file(helper, copy[i]), "copy %s", copy[i]))
			goto cleanup;
		h[i] = dlopen(copy[i], RTLD_NOW | RTLD_LOCAL);
		fn[i] = h[i] ? dlsym(h[i], GROW_MANGLED) : NULL;
		if (!CHECK(fn[i], "dlopen %s: %s", copy[i], dlerror()))
			goto cleanup;
		at[i] = (uint64_t)(uintptr_t)fn[i] + 4;
	}
	h[2] = dlopen(nofp, RTLD_NOW | RTLD_LOCAL);
	if (!CHECK(h[2] && dlsym(h[2], "nofp_call"), "dlopen %s", nofp))
		goto cleanup;
	nofp_ret = (uint64_t)(uintptr_t)dlsym(h[2], "nofp_call") + 4;
	if (!CHECK(!modules__new(&mods) && !symbolizer__new(mods, &s) &&
		       !proc_maps__load(getpid(), &m) && !symbolizer__add_maps(s, m),
		   "set up"))
		goto cleanup;
	CHECK(!symbolizer__resolve(s, getpid(), at, 2), "batch");
	for (i = 0; i < 2; i++) {
		const struct sym_info *si = symbolizer__info(s, getpid(), at[i]);
		const char *base = strrchr(copy[i], '/') + 1;

		CHECK(si && si->func && !strcmp(si->func, GROW) && si->func_off == 4 &&
			  si->module && !strcmp(si->module, base),
		      "copy %d: %s+%" PRIu64 " (%s)", i + 1, si && si->func ? si->func : "-",
		      si ? si->func_off : 0, si && si->module ? si->module : "-");
	}
	symbolizer__stats(s, &st);
	CHECK(st.objects == 2 && st.shared == 1 && st.batches == 1,
	      "one symbol table for two copies: objects %u shared %u batches %" PRIu64, st.objects,
	      st.shared, st.batches);
	/* nofp_call keeps no frame pointer: what the walk found above it is flagged */
	frames[0] = nofp_ret;
	frames[1] = at[0];
	CHECK(!symbolizer__add_stack(s, getpid(), 1, nofp_ret, frames, 2, 8, &us), "stack");
	CHECK(us && (us->flags & STACK_NO_FP) && us->nofp_from == 1, "flagged from frame 1");
	/* gpuapp::cache::grow keeps one; the walk ended at nofp_call, which starts no thread:
	 * it stopped there, for want of a frame pointer, and nofp_call's callers are unknown */
	frames[0] = at[0];
	frames[1] = nofp_ret;
	CHECK(!symbolizer__add_stack(s, getpid(), 2, at[0], frames, 2, 8, &us), "stack");
	CHECK(us && us->flags == STACK_NO_FP && us->nofp_from == 2,
	      "cut short after frame 2: flags %u from %u", us ? us->flags : 0,
	      us ? us->nofp_from : 0);
	CHECK(symbolizer__stack(s, getpid(), 2, at[0]) == us, "found again");
	/* a walk that ends at a function with a frame pointer needs no verdict */
	CHECK(!symbolizer__add_stack(s, getpid(), 3, at[0], frames, 1, 8, &us), "stack");
	CHECK(us && !us->flags, "not flagged: flags %u", us ? us->flags : 0);
cleanup:
	symbolizer__free(s);
	modules__free(mods);
	proc_maps__free(m);
	for (i = 0; i < 3; i++)
		if (h[i])
			dlclose(h[i]);
	for (i = 0; i < 2; i++)
		unlink(copy[i]);
	rmdir(dir);
}

/*
 * A library a process sees at a path that exists only in its mount namespace (a container's
 * file system): with no /proc/PID/map_files entry to open (the mapping range here is made
 * up, as when the mapping is gone or map_files is refused), the object is opened through
 * /proc/PID/root, and only when it is the mapped inode.
 */
static void objects_in_another_mount_namespace(void)
{
	char helper[PATH_MAX], cmd[3 * PATH_MAX + 512], line[128];
	char dir[] = "/tmp/gpuleak-ns.XXXXXX", inside[sizeof(dir) + 16];
	struct elf_obj *same = NULL;
	struct modules *mods = NULL;
	struct module *mod;
	struct pmap_ent e = {.start = 0x1000, .end = 0x2000, .exec = true, .path = inside};
	unsigned long long ino = 0;
	FILE *p = NULL;
	int pid = 0;

	if (!CHECK(!lib_path("libstackhelper.so", helper, sizeof(helper)), "path"))
		return;
	if (!CHECK(mkdtemp(dir), "mkdtemp"))
		return;
	snprintf(inside, sizeof(inside), "%s/libinside.so", dir);
	/*
	 * A tmpfs over a new, empty directory in a private mount namespace: the path does not
	 * exist out here. (Not over /tmp: the checkout, and the helper, may be under it.) Not
	 * root: in a user namespace of its own (-r), whose owner may still read the process's
	 * /proc/PID/root.
	 */
	snprintf(cmd, sizeof(cmd),
		 "exec unshare %s-m --propagation private sh -c 'mount -t tmpfs "
		 "none %s && cp %s %s && echo $$ $(stat -c %%i %s) && exec sleep 30'",
		 geteuid() ? "-r " : "", dir, helper, inside, inside);
	p = popen(cmd, "r");
	if (!CHECK(p && fgets(line, sizeof(line), p) && sscanf(line, "%d %llu", &pid, &ino) == 2,
		   "a process in its own mount namespace%s",
		   geteuid() ? " (not root: unprivileged user namespaces must be allowed)" : ""))
		goto cleanup;
	CHECK(access(e.path, F_OK), "%s is not visible outside", e.path);
	e.ino = ino;
	if (!CHECK(!modules__new(&mods), "new"))
		goto cleanup;
	mod = modules__get(mods, pid, &e);
	CHECK(mod && mod->elf, "opened through /proc/%d/root", pid);
	if (mod && mod->elf && CHECK(!elf_obj__open(helper, &same), "open %s", helper))
		CHECK(elf_obj__build_id(same)[0] &&
			  !strcmp(elf_obj__build_id(mod->elf), elf_obj__build_id(same)),
		      "the copy in the namespace: build-id %s", elf_obj__build_id(mod->elf));
	/* another inode at that path is another file: not opened */
	e.ino = ino + 1;
	e.start = 0x3000;
	e.end = 0x4000;
	mod = modules__get(mods, pid, &e);
	CHECK(mod && !mod->elf, "not the mapped inode: not opened");
cleanup:
	elf_obj__free(same);
	modules__free(mods);
	if (pid > 0)
		kill(pid, SIGKILL);
	if (p)
		pclose(p);
	rmdir(dir);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"canonical_frames", canonical_frames},
	    {"named_and_judged_on_real_objects", named_and_judged_on_real_objects},
	    {"objects_in_another_mount_namespace", objects_in_another_mount_namespace},
	};

	return run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
