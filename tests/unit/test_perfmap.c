// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Perf maps (symbols/perfmap.c): the parser on good, malformed, huge and overlapping lines,
 * fed at once and piece by piece; the file read on as it grows, and again from its start when
 * it is truncated, rewritten in place or replaced; files not to trust; the bounds; the names
 * V8 and CPython write as function and location. Then the symbolizer naming frames of this
 * process's own anonymous executable memory from its /tmp/perf-PID.map, re-read when a frame
 * falls past it. No root.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "probe/modules.h"
#include "probe/proc_maps.h"
#include "symbols/perfmap.h"
#include "symbols/symbolizer.h"

static const char *find(const struct perfmap *pm, uint64_t addr)
{
	uint64_t start;

	return perfmap__find(pm, addr, &start);
}

static bool found(const struct perfmap *pm, uint64_t addr, const char *want)
{
	const char *got = find(pm, addr);

	return want ? got && !strcmp(got, want) : !got;
}

static struct perfmap *fed(const char *text)
{
	struct perfmap *pm;

	if (perfmap__new(&pm))
		return NULL;
	if (perfmap__feed(pm, text, strlen(text))) {
		perfmap__free(pm);
		return NULL;
	}
	return pm;
}

static const char LINES[] = "7f64fa7feac0 378 JS:~makeLogits file:///srv/app/model.mjs:21:20\n"
			    "0x7f0000001000 0x20 with 0x\n"
			    "7f0000002000\t10\ttabs\r\n"
			    "7f0000003000 10 trailing blanks  \t\n"
			    "7f00b98b67b1 b py::Attention.forward:/srv/app/model.py\n"
			    "\n"
			    "zz 10 not hex\n"
			    "7f0000004000 10\n"
			    "7f0000004000 nohex name\n"
			    "7f0000005000 0 empty range\n"
			    "17f00000000000000 10 seventeen digits\n"
			    "fffffffffffffff0 20 wraps around\n"
			    "7f0000006000 10 \n"
			    "7f0000006000 10 a\x01\x1b[31mb\x7f\n"
			    "7f0000007000 10 last line without a newline";

static void parses_lines(void)
{
	struct perfmap *pm = fed(LINES);
	struct perfmap_stats st;

	if (!CHECK(pm, "fed"))
		return;
	CHECK(found(pm, 0x7f64fa7feac0, "JS:~makeLogits file:///srv/app/model.mjs:21:20") &&
		  found(pm, 0x7f64fa7fee37, "JS:~makeLogits file:///srv/app/model.mjs:21:20") &&
		  found(pm, 0x7f64fa7fee38, NULL) && found(pm, 0x7f64fa7feabf, NULL),
	      "[start, start + size)");
	CHECK(found(pm, 0x7f000000101f, "with 0x"), "0x accepted");
	CHECK(found(pm, 0x7f0000002000, "tabs"), "tabs, CRLF");
	CHECK(found(pm, 0x7f0000003000, "trailing blanks"), "trailing blanks cut");
	CHECK(found(pm, 0x7f00b98b67bb, "py::Attention.forward:/srv/app/model.py"), "python");
	CHECK(found(pm, 0x7f0000004000, NULL) && found(pm, 0x7f0000005000, NULL) &&
		  found(pm, 0xfffffffffffffff8, NULL),
	      "malformed lines left out");
	CHECK(found(pm, 0x7f0000006000, "a??[31mb?"), "control characters replaced");
	CHECK(found(pm, 0x7f0000007000, NULL), "a partial line waits for its newline");
	perfmap__stats(pm, &st);
	CHECK_U64(st.entries, 6, "entries");
	CHECK_U64(st.lines, 14, "complete lines");
	CHECK_U64(st.malformed, 8, "malformed");
	CHECK(!perfmap__feed(pm, "\n", 1) &&
		  found(pm, 0x7f000000700f, "last line without a newline"),
	      "completed");
	perfmap__free(pm);
}

/* Fed whole, byte by byte, and in chunks of 7: the same entries. */
static void fed_in_pieces(void)
{
	static const uint64_t probe[] = {0x7f64fa7feac0, 0x7f0000001010, 0x7f0000002000,
					 0x7f0000006000, 0x7f00b98b67b1, 0x7f0000007000};
	struct perfmap *whole = fed(LINES), *bytes = NULL, *chunks = NULL;
	size_t i, len = sizeof(LINES) - 1;

	if (!CHECK(whole && !perfmap__new(&bytes) && !perfmap__new(&chunks), "new"))
		goto out;
	for (i = 0; i < len; i++)
		perfmap__feed(bytes, LINES + i, 1);
	for (i = 0; i < len; i += 7)
		perfmap__feed(chunks, LINES + i, len - i < 7 ? len - i : 7);
	for (i = 0; i < sizeof(probe) / sizeof(probe[0]); i++) {
		const char *a = find(whole, probe[i]), *b = find(bytes, probe[i]),
			   *c = find(chunks, probe[i]);

		CHECK((!a && !b && !c) || (a && b && c && !strcmp(a, b) && !strcmp(a, c)),
		      "0x%" PRIx64 ": %s / %s / %s", probe[i], a ? a : "-", b ? b : "-",
		      c ? c : "-");
	}
out:
	perfmap__free(whole);
	perfmap__free(bytes);
	perfmap__free(chunks);
}

/* A line of n bytes before its newline, naming [at, at + 0x10). */
static char *line_of(uint64_t at, size_t n)
{
	char *l = malloc(n + 2);
	int h;

	if (!l)
		return NULL;
	h = snprintf(l, n + 2, "%" PRIx64 " 10 ", at);
	memset(l + h, 'x', n - (size_t)h);
	l[n] = '\n';
	l[n + 1] = 0;
	return l;
}

static void huge_lines(void)
{
	char *longest = line_of(0x1000, PERFMAP_MAX_LINE - 1),
	     *too_long = line_of(0x2000, PERFMAP_MAX_LINE);
	char *huge = line_of(0x3000, 1 << 20);
	struct perfmap *pm = NULL;
	struct perfmap_stats st;
	size_t i, len;

	if (!CHECK(longest && too_long && huge && !perfmap__new(&pm), "set up"))
		goto out;
	perfmap__feed(pm, longest, strlen(longest));
	perfmap__feed(pm, too_long, strlen(too_long));
	/* the huge one in pieces: never held, skipped to its newline */
	len = strlen(huge);
	for (i = 0; i < len; i += 4000)
		perfmap__feed(pm, huge + i, len - i < 4000 ? len - i : 4000);
	perfmap__feed(pm, "4000 10 after\n", 14);
	/* the longest again, split where the limit would bite */
	perfmap__feed(pm, longest, PERFMAP_MAX_LINE - 10);
	perfmap__feed(pm, longest + PERFMAP_MAX_LINE - 10,
		      strlen(longest) - (PERFMAP_MAX_LINE - 10));
	perfmap__stats(pm, &st);
	CHECK(find(pm, 0x1000) && strlen(find(pm, 0x1000)) == PERFMAP_MAX_LINE - 1 - 8,
	      "a line of PERFMAP_MAX_LINE - 1 bytes is kept");
	CHECK(!find(pm, 0x2000) && !find(pm, 0x3000), "longer ones are not");
	CHECK(found(pm, 0x4000, "after"), "the line after a huge one");
	CHECK_U64(st.entries, 3, "entries");
	CHECK_U64(st.malformed, 2, "skipped");
out:
	free(longest);
	free(too_long);
	free(huge);
	perfmap__free(pm);
}

static void overlapping_entries(void)
{
	struct perfmap *pm = fed("1000 100 old\n"
				 "1000 100 new\n"
				 "2000 1000 outer\n"
				 "2100 10 inner\n"
				 "5000 10 first inner\n"
				 "4000 2000 later outer\n"
				 "8000 100 a\n"
				 "8080 100 b overlaps a\n");
	struct perfmap_stats st;
	char line[64];
	int i;

	if (!CHECK(pm, "fed"))
		return;
	CHECK(found(pm, 0x1050, "new"), "the same range: the later line");
	CHECK(found(pm, 0x2105, "inner") && found(pm, 0x2200, "outer") &&
		  found(pm, 0x2000, "outer") && found(pm, 0x2fff, "outer"),
	      "nested in an earlier entry");
	CHECK(found(pm, 0x5005, "later outer") && found(pm, 0x4000, "later outer"),
	      "an earlier entry inside a later one");
	CHECK(found(pm, 0x8050, "a") && found(pm, 0x8090, "b overlaps a") &&
		  found(pm, 0x8150, "b overlaps a"),
	      "partial overlap");
	/* appended below what was read: sorted in */
	for (i = 9; i >= 0; i--) {
		int n = snprintf(line, sizeof(line), "%x 10 down%d\n", 0x900 + 0x10 * i, i);

		perfmap__feed(pm, line, (size_t)n);
	}
	perfmap__feed(pm, "1080 8 newest\n", 14);
	for (i = 0; i < 10; i++) {
		snprintf(line, sizeof(line), "down%d", i);
		CHECK(found(pm, 0x900 + 0x10 * (uint64_t)i + 4, line), "%s", line);
	}
	CHECK(found(pm, 0x1084, "newest") && found(pm, 0x1090, "new"), "split by a later one");
	perfmap__stats(pm, &st);
	CHECK_U64(st.entries, 19, "entries");
	perfmap__free(pm);
}

static void bounds(void)
{
	struct perfmap *pm = NULL;
	struct perfmap_stats st;

	if (!CHECK(!perfmap__new(&pm), "new"))
		return;
	perfmap__set_limits(pm, 3, 1 << 20);
	CHECK(perfmap__feed(pm, "1000 10 a\n2000 10 b\n3000 10 c\n4000 10 d\n", 40) == -ENOSPC,
	      "full");
	perfmap__stats(pm, &st);
	CHECK(st.full && st.entries == 3 && found(pm, 0x3000, "c") && !find(pm, 0x4000),
	      "three entries kept: %zu", st.entries);
	CHECK(perfmap__feed(pm, "5000 10 e\n", 10) == -ENOSPC && !find(pm, 0x5000), "stays full");
	perfmap__reset(pm);
	perfmap__set_limits(pm, 100, 16);
	CHECK(perfmap__feed(pm, "1000 10 abcdefgh\n2000 10 abcdefgh\n", 34) == -ENOSPC &&
		  found(pm, 0x1000, "abcdefgh") && !find(pm, 0x2000),
	      "bytes of names");
	perfmap__free(pm);
}

static int write_file(const char *path, const char *text, int flags)
{
	int fd = open(path, O_WRONLY | O_CREAT | flags, 0644);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static void file_grows_and_is_rewritten(void)
{
	char dir[] = "/tmp/gpuleak-perfmap.XXXXXX", path[64], other[64], link[64];
	struct perfmap *pm = NULL;
	struct perfmap_stats st;
	uid_t me = geteuid();

	if (!CHECK(mkdtemp(dir) && !perfmap__new(&pm), "set up"))
		goto out;
	snprintf(path, sizeof(path), "%s/perf-1.map", dir);
	snprintf(other, sizeof(other), "%s/other", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	CHECK(perfmap__refresh(pm, NULL, path, me) == -ENOENT, "no file yet");
	write_file(path, "1000 10 one\n2000 10 two\n3000 10 thr", O_TRUNC);
	CHECK(perfmap__refresh(pm, NULL, path, me) == 1 && found(pm, 0x2000, "two") &&
		  !find(pm, 0x3000),
	      "read: two lines, a partial third");
	CHECK(perfmap__refresh(pm, NULL, path, me) == 0, "nothing new");
	write_file(path, "ee\n4000 10 four\n", O_APPEND);
	CHECK(perfmap__refresh(pm, NULL, path, me) == 1 && found(pm, 0x3000, "three") &&
		  found(pm, 0x4000, "four") && found(pm, 0x1000, "one"),
	      "read on from where it stopped");
	perfmap__stats(pm, &st);
	CHECK(st.bytes_read == 51 && st.entries == 4 && st.resets == 0 && st.refills == 2,
	      "each byte read once: %" PRIu64 " bytes, %zu entries", st.bytes_read, st.entries);
	/* truncated and written again (a new process with that pid) */
	write_file(path, "5000 10 five\n", O_TRUNC);
	CHECK(perfmap__refresh(pm, NULL, path, me) == 1 && found(pm, 0x5000, "five") &&
		  !find(pm, 0x1000),
	      "truncated: read from its start");
	/* rewritten in place, as long as before and longer: told by the bytes before the offset */
	write_file(path, "6000 10 sixx\n7000 10 seven\n", O_TRUNC);
	CHECK(perfmap__refresh(pm, NULL, path, me) == 1 && found(pm, 0x6000, "sixx") &&
		  found(pm, 0x7000, "seven") && !find(pm, 0x5000),
	      "rewritten: read from its start");
	/* replaced by another file */
	write_file(other, "8000 10 eight\n", O_TRUNC);
	CHECK(!rename(other, path), "rename");
	CHECK(perfmap__refresh(pm, NULL, path, me) == 1 && found(pm, 0x8000, "eight") &&
		  !find(pm, 0x6000),
	      "replaced: the new file");
	perfmap__stats(pm, &st);
	CHECK_U64(st.resets, 3, "resets");
	perfmap__free(pm);
	pm = NULL;
	/* not to trust: a symlink, a FIFO, another user's file */
	CHECK(!symlink(path, link) && !perfmap__new(&pm), "symlink");
	CHECK(perfmap__refresh(pm, NULL, link, me) == -EPERM, "a symlink is not followed");
	unlink(link);
	CHECK(!mkfifo(link, 0644), "fifo");
	CHECK(perfmap__refresh(pm, NULL, link, me) == -EPERM, "a FIFO is not read");
	unlink(link);
	if (me == 0)
		CHECK(!chown(path, 4321, 4321), "chown");
	CHECK(perfmap__refresh(pm, NULL, path, me == 0 ? 1234 : me + 1) == -EPERM,
	      "a file of another user than the process's");
	CHECK(me != 0 || perfmap__refresh(pm, NULL, path, 4321) == 1, "its own user's");
out:
	perfmap__free(pm);
	unlink(path);
	unlink(link);
	unlink(other);
	rmdir(dir);
}

/*
 * A process's root (its /proc/PID/root): the map's path is resolved inside it, and symlinks
 * there cannot lead out of it, by ".." or by an absolute path.
 */
static void resolved_inside_the_root(void)
{
	char root[] = "/tmp/gpuleak-root.XXXXXX", out[] = "/tmp/gpuleak-out.XXXXXX";
	char outside[64], up[96], abs[96], escape[64], inside_dir[96], inside[128];
	struct perfmap *pm = NULL;
	uid_t me = geteuid();

	if (!CHECK(mkdtemp(root) && mkdtemp(out) && !perfmap__new(&pm), "set up"))
		goto cleanup;
	snprintf(outside, sizeof(outside), "%s/perf-7.map", out);
	snprintf(up, sizeof(up), "%s/tmp", root);
	snprintf(abs, sizeof(abs), "%s/abs", root);
	snprintf(escape, sizeof(escape), "../%s", out + 5); /* ../gpuleak-out.XXXXXX */
	snprintf(inside_dir, sizeof(inside_dir), "%s/%s", root, out + 5);
	snprintf(inside, sizeof(inside), "%s/perf-7.map", inside_dir);
	write_file(outside, "1000 10 outside\n", O_TRUNC);
	CHECK(!symlink(escape, up) && !symlink(out, abs), "symlinks");
	CHECK(perfmap__refresh(pm, root, "/tmp/perf-7.map", me) == -ENOENT,
	      "a relative symlink does not climb out of the root");
	CHECK(perfmap__refresh(pm, root, "/abs/perf-7.map", me) == -ENOENT,
	      "an absolute symlink is resolved in the root");
	CHECK(!mkdir(inside_dir, 0755), "mkdir");
	write_file(inside, "2000 10 inside\n", O_TRUNC);
	CHECK(perfmap__refresh(pm, root, "/tmp/perf-7.map", me) == 1 &&
		  found(pm, 0x2000, "inside") && !find(pm, 0x1000),
	      "the file the process would see");
cleanup:
	perfmap__free(pm);
	unlink(inside);
	rmdir(inside_dir);
	unlink(up);
	unlink(abs);
	rmdir(root);
	unlink(outside);
	rmdir(out);
}

static void describes_names(void)
{
	static const struct {
		const char *name, *func, *where;
	} t[] = {
	    {"JS:~makeLogits file:///srv/app/model.mjs:21:20", "makeLogits", "model.mjs:21:20"},
	    {"JS:*makeLogits file:///srv/app/model.mjs:21:20", "makeLogits", "model.mjs:21:20"},
	    {"JS:^step /srv/app/loop.js:3:14", "step", "loop.js:3:14"},
	    {"JS:+step /srv/app/loop.js:3:14", "step", "loop.js:3:14"},
	    {"JS:step /srv/app/loop.js:3:14", "step", "loop.js:3:14"},
	    {"JS:~ node:path:1208:10", "(anonymous)", "node:path:1208:10"},
	    {"JS:~resolve node:internal/modules/esm/resolve:1:1", "resolve", "resolve:1:1"},
	    {"JS:~get size file:///srv/My App/cache.mjs:9:7", "get size", "cache.mjs:9:7"},
	    {"Eval:~ node:internal/main/run_main_module:1:1", "(anonymous)", "run_main_module:1:1"},
	    {"LazyCompile:~Module._compile internal/modules/cjs/loader.js:1000:37",
	     "Module._compile", "loader.js:1000:37"},
	    {"JS:~noplace", "noplace", NULL},
	    {"Builtin:ArrayPrototypeForEach", "Builtin:ArrayPrototypeForEach", NULL},
	    {"BytecodeHandler:Ldar", "BytecodeHandler:Ldar", NULL},
	    {"py::Attention.forward:/srv/app/model.py", "Attention.forward", "model.py"},
	    {"py::<module>:<frozen importlib._bootstrap>", "<module>",
	     "<frozen importlib._bootstrap>"},
	    {"py::nofile", "py::nofile", NULL},
	    {"Ljava/lang/Thread;::run", "Ljava/lang/Thread;::run", NULL},
	    {"", "", NULL},
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char *func = NULL, *where = NULL;

		CHECK(!perfmap__describe(t[i].name, &func, &where) && func &&
			  !strcmp(func, t[i].func) &&
			  (t[i].where ? where && !strcmp(where, t[i].where) : !where),
		      "'%s': '%s' at '%s'", t[i].name, func ? func : "-", where ? where : "-");
		free(func);
		free(where);
	}
	/* the script's whole path, for --site-skip and JavaScript sites */
	{
		static const struct {
			const char *name, *script;
		} sc[] = {
		    {"JS:~makeLogits file:///srv/app/model.mjs:21:20", "/srv/app/model.mjs"},
		    {"JS:^step /srv/app/node_modules/x/loop.js:3:14",
		     "/srv/app/node_modules/x/loop.js"},
		    {"JS:~ node:internal/timers:512:7", "node:internal/timers"},
		    {"Builtin:Stub", NULL},
		    {"py::decode_step:/srv/app/loop.py", NULL},
		};

		for (i = 0; i < sizeof(sc) / sizeof(sc[0]); i++) {
			char *got = perfmap__script(sc[i].name);

			CHECK(sc[i].script ? got && !strcmp(got, sc[i].script) : !got,
			      "script of '%s': '%s'", sc[i].name, got ? got : "-");
			free(got);
		}
	}
}

/*
 * The symbolizer names frames in this process's anonymous executable memory from its own
 * /tmp/perf-PID.map (PID as this process sees itself), and reads the map again when a frame
 * falls past what it read.
 */
static void symbolizer_names_jit_frames(void)
{
	struct modules *mods = NULL;
	struct symbolizer *s = NULL;
	struct proc_maps *m = NULL;
	struct symbolizer_stats st;
	char path[64], text[256];
	uint64_t base, at[3];
	const char *sym, *mod;
	void *code;

	code = mmap(NULL, 1 << 16, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!CHECK(code != MAP_FAILED, "mmap"))
		return;
	base = (uint64_t)(uintptr_t)code;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	snprintf(text, sizeof(text),
		 "%" PRIx64 " 100 JS:~makeLogits file:///srv/app/model.mjs:21:20\n"
		 "%" PRIx64 " 40 Builtin:Stub\n",
		 base, base + 0x100);
	if (!CHECK(!write_file(path, text, O_TRUNC), "write %s", path))
		goto out;
	if (!CHECK(!modules__new(&mods) && !symbolizer__new(mods, &s) &&
		       !proc_maps__load(getpid(), &m) && !symbolizer__add_maps(s, m),
		   "set up"))
		goto out;
	at[0] = base + 0x10;
	at[1] = base + 0x120;
	at[2] = base + 0x1008;
	CHECK(!symbolizer__resolve(s, getpid(), at, 3), "batch");
	/* a script's function: no offset into the tier V8 compiled it to */
	CHECK(!strcmp(symbolizer__name(s, getpid(), at[0]), "makeLogits (model.mjs:21:20)"), "%s",
	      symbolizer__name(s, getpid(), at[0]));
	snprintf(text, sizeof(text), "Builtin:Stub+0x20 (perf-%d.map)", (int)getpid());
	CHECK(!strcmp(symbolizer__name(s, getpid(), at[1]), text), "%s",
	      symbolizer__name(s, getpid(), at[1]));
	snprintf(text, sizeof(text), "0x%" PRIx64, at[2]);
	CHECK(!strcmp(symbolizer__name(s, getpid(), at[2]), text), "no entry: %s",
	      symbolizer__name(s, getpid(), at[2]));
	CHECK(!symbolizer__frame(s, getpid(), at[0], &sym, &mod) && sym && mod &&
		  !strcmp(sym, "makeLogits") && !strcmp(mod, "model.mjs:21:20"),
	      "rules see function and location");
	/* the JIT compiles on: a frame past what was read is looked up in what it appended */
	snprintf(text, sizeof(text), "%" PRIx64 " 10 py::decode_step:/srv/app/loop.py\n",
		 base + 0x1000);
	write_file(path, text, O_APPEND);
	CHECK(!symbolizer__resolve(s, getpid(), at + 2, 1), "batch");
	CHECK(!strcmp(symbolizer__name(s, getpid(), at[2]), "decode_step+0x8 (loop.py)"), "%s",
	      symbolizer__name(s, getpid(), at[2]));
	symbolizer__stats(s, &st);
	CHECK(st.jit_frames == 3 && st.perf_map_reads == 2,
	      "3 frames named in 2 reads: %" PRIu64 ", %" PRIu64, st.jit_frames, st.perf_map_reads);
out:
	symbolizer__free(s);
	modules__free(mods);
	proc_maps__free(m);
	unlink(path);
	munmap(code, 1 << 16);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"parses_lines", parses_lines},
	    {"fed_in_pieces", fed_in_pieces},
	    {"huge_lines", huge_lines},
	    {"overlapping_entries", overlapping_entries},
	    {"bounds", bounds},
	    {"file_grows_and_is_rewritten", file_grows_and_is_rewritten},
	    {"resolved_inside_the_root", resolved_inside_the_root},
	    {"describes_names", describes_names},
	    {"symbolizer_names_jit_frames", symbolizer_names_jit_frames},
	};

	return run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
