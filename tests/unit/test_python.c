// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Python frames without a tracer: the line-table decoders against what each interpreter on
 * the machine says of its own code objects (py_lines.py, every code unit of a few standard
 * modules); interpreter detection on the real objects (version, _PyRuntime, the 3.13 debug
 * offsets agreeing with the table); Python records as a capture may bring them (malformed
 * ones refused, strings of every PEP 393 kind); and stacks merged the way a report shows
 * them. An interpreter the machine lacks is said and skipped.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "probe/elf_obj.h"
#include "probe/py_abi.h"
#include "symbols/pyframes.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"

struct interp {
	const char *python; /* the interpreter to run */
	const char *object; /* the object that defines _PyRuntime */
	uint16_t version;
	uint32_t version_hex; /* 0: not in the object (3.10) */
};

static const struct interp interps[] = {
    {"/usr/bin/python3.11", "/usr/bin/python3.11", 0x030b, 0x030b02f0},
    {"/root/.pyenv/versions/3.10.13/bin/python3.10",
     "/root/.pyenv/versions/3.10.13/lib/libpython3.10.so.1.0", 0x030a, 0},
    {"/root/.pyenv/versions/3.11.7/bin/python3.11",
     "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0", 0x030b, 0x030b07f0},
    {"/root/.pyenv/versions/3.12.1/bin/python3.12",
     "/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0", 0x030c, 0x030c01f0},
    {"/root/.pyenv/versions/3.13.0/bin/python3.13",
     "/root/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0", 0x030d, 0x030d00f0},
};

#define NR_INTERPS (sizeof(interps) / sizeof(interps[0]))

static bool present(const struct interp *in)
{
	if (!access(in->python, X_OK) && !access(in->object, R_OK))
		return true;
	printf("SKIP %s: not on this machine\n", in->python);
	return false;
}

/* tests/unit/py_lines.py, from this binary in .output/tests/unit. */
static int script_path(char *buf, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return -errno;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	snprintf(buf, len, "%s/../../../tests/unit/py_lines.py", exe);
	return access(buf, R_OK) ? -errno : 0;
}

static size_t unhex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;
	unsigned int b;

	if (!strcmp(s, "-"))
		return 0;
	while (n < max && sscanf(s + 2 * n, "%2x", &b) == 1)
		out[n++] = (uint8_t)b;
	return n;
}

/* Every code unit of every code object py_lines.py lists: the decoder agrees with it. */
static void lines_of(const struct interp *in)
{
	char script[PATH_MAX + 64], cmd[2 * PATH_MAX + 128], *line = NULL;
	static uint8_t table[1 << 16];
	struct py_code code = {.described = true, .table = table};
	unsigned long checked = 0, wrong = 0;
	unsigned int version = 0;
	size_t cap = 0, len = 0;
	FILE *f;

	if (!CHECK(!script_path(script, sizeof(script)), "py_lines.py next to the tests"))
		return;
	snprintf(cmd, sizeof(cmd), "%s %s %u", in->python, script, py_abi__code_units(in->version));
	f = popen(cmd, "r");
	if (!CHECK(f, "run %s", cmd))
		return;
	while (getline(&line, &cap, f) > 0) {
		struct gl_py_frame fr = {};
		char hex[1 << 17];
		int first, want;
		unsigned int instr;

		if (sscanf(line, "C %x %d %131071s", &version, &first, hex) == 3) {
			len = unhex(hex, table, sizeof(table));
			code.firstlineno = first;
			code.table_len = len;
		} else if (sscanf(line, "I %u %d", &instr, &want) == 2) {
			fr.instr = instr;
			checked++;
			if (pyframes__line(&code, (uint16_t)version, &fr) != want && wrong++ < 5)
				CHECK(false, "%s: instruction %u: line %d, the interpreter says %d",
				      in->python, instr,
				      pyframes__line(&code, (uint16_t)version, &fr), want);
		}
	}
	free(line);
	CHECK(!pclose(f), "%s ran", cmd);
	CHECK(version == in->version, "%s is %x", in->python, version);
	CHECK(checked > 10000 && !wrong, "%s: %lu of %lu instructions wrong", in->python, wrong,
	      checked);
	printf("# %s: %lu instructions, %lu wrong\n", in->python, checked, wrong);
}

static void line_tables(void)
{
	size_t i;

	for (i = 0; i < NR_INTERPS; i++)
		if (present(&interps[i]))
			lines_of(&interps[i]);
}

/* The object of each interpreter is found as one, with its version and layout. */
static void detection(void)
{
	char msg[160];
	size_t i;

	for (i = 0; i < NR_INTERPS; i++) {
		const struct interp *in = &interps[i];
		const char *base = strrchr(in->object, '/') + 1;
		struct elf_obj *elf;
		struct py_abi abi;
		uint64_t vaddr, size;
		int err;

		if (!present(in) || !CHECK(!elf_obj__open(in->object, &elf), "%s", in->object))
			continue;
		err = py_abi__detect(elf, base, &abi, msg, sizeof(msg));
		CHECK(!err, "%s: %d %s", in->object, err, msg);
		CHECK(abi.version == in->version && abi.version_hex == in->version_hex,
		      "%s: version %x (%x)", in->object, abi.version, abi.version_hex);
		CHECK(!elf_obj__find_object(elf, "_PyRuntime", &vaddr, &size) &&
			  abi.runtime_vaddr == vaddr && abi.cfg.runtime == vaddr,
		      "%s: _PyRuntime", in->object);
		/* 3.13's own offsets say what the table says */
		if (in->version >= 0x030d)
			CHECK(abi.debug_offsets && !abi.debug_fixed, "%s: %u fields differ",
			      in->object, abi.debug_fixed);
		else
			CHECK(!memcmp(&abi.cfg.version, &py_abi__layout(in->version)->version,
				      sizeof(abi.cfg) - sizeof(abi.cfg.runtime)),
			      "%s: the table's layout", in->object);
		elf_obj__free(elf);
	}
	/* the launcher of a libpython build is no interpreter itself */
	if (!access(interps[3].python, R_OK)) {
		struct elf_obj *elf;
		struct py_abi abi;

		if (CHECK(!elf_obj__open(interps[3].python, &elf), "open"))
			CHECK(py_abi__detect(elf, "python3.12", &abi, msg, sizeof(msg)) == -ENOENT,
			      "python3.12 imports _PyRuntime");
		elf_obj__free(elf);
	}
}

/* ---- records ---- */

static void put_code(struct gl_py_code_rec *r, pid_t pid, uint64_t code, uint32_t fp,
		     const char *file, const char *name, const uint8_t *table, size_t tlen)
{
	size_t fl = strlen(file), nl = strlen(name);

	memset(r, 0, sizeof(*r));
	r->hdr.kind = GL_REC_PY_CODE;
	r->hdr.pid = r->hdr.tid = (uint32_t)pid;
	r->code = code;
	r->fp = fp;
	r->firstlineno = 10;
	r->version = 0x030c;
	r->file_kind = r->name_kind = 1;
	r->file_len = (uint16_t)fl;
	r->name_len = (uint16_t)nl;
	r->table_len = (uint16_t)tlen;
	memcpy(r->data, file, fl);
	memcpy(r->data + fl, name, nl);
	if (tlen)
		memcpy(r->data + fl + nl, table, tlen);
	r->hdr.size = (uint16_t)(offsetof(struct gl_py_code_rec, data) + fl + nl + tlen);
}

static void records(void)
{
	static struct gl_py_code_rec r;
	struct gl_py_stack_rec st = {};
	const struct py_code *c;
	struct py_frame_name nm;
	struct pyframes *pf;
	/* 3.12: one entry per code unit, lines 10, 11, 12 (short forms, then a one-line +1) */
	const uint8_t table[] = {0x80, 0x00, 0xd8, 0x00, 0x00, 0xd8, 0x00, 0x00};
	struct gl_py_frame f = {.code = 0x1000, .fp = 7, .instr = 192 + 2};
	uint8_t wide[8] = {0xe9, 0x00, 0x6d, 0x00, 0x2c, 0x67, 0x00, 0x00}; /* "ém", U+672C */
	uint64_t a, b;

	if (!CHECK(!pyframes__new(&pf), "new"))
		return;
	put_code(&r, 5, 0x1000, 7, "/srv/app/model.py", "Attn.forward", table, sizeof(table));
	CHECK(!pyframes__record(pf, &r.hdr), "a descriptor");
	c = pyframes__code(pf, 5, &f);
	CHECK(c && !strcmp(c->file, "/srv/app/model.py") && !strcmp(c->name, "Attn.forward"),
	      "named");
	CHECK(pyframes__line(c, 0x030c, &f) == 11, "unit 1: line %d",
	      pyframes__line(c, 0x030c, &f));
	f.instr = 192 + 4;
	CHECK(pyframes__line(c, 0x030c, &f) == 12, "unit 2");
	f.instr = 100;
	CHECK(pyframes__line(c, 0x030c, &f) == 10, "before its instructions: the first line");
	/* one address per (code, line), the same on the next ask */
	f.instr = 194;
	a = pyframes__frame(pf, 5, 0x030c, &f, &nm);
	b = pyframes__frame(pf, 5, 0x030c, &f, &nm);
	CHECK(a && a == b && py_frame_addr(a) && nm.line == 11 && !strcmp(nm.name, "Attn.forward"),
	      "frame address");
	f.fp = 8; /* another object at the same address: no descriptor, "?" */
	b = pyframes__frame(pf, 5, 0x030c, &f, &nm);
	CHECK(b && b != a && !nm.name && !nm.file && !nm.line, "unknown code object");
	/* UCS-2 names, a cut path, a control character */
	put_code(&r, 5, 0x2000, 1, "", "", NULL, 0);
	r.flags = GL_PYC_FILE_CUT | GL_PYC_TABLE_UNREAD;
	r.name_kind = 2;
	r.name_len = 6;
	memcpy(r.data, "a\033b", 3);
	r.file_len = 3;
	memcpy(r.data + 3, wide, 6);
	r.hdr.size = (uint16_t)(offsetof(struct gl_py_code_rec, data) + 9);
	CHECK(!pyframes__record(pf, &r.hdr), "UCS-2");
	c = pyframes__code(pf, 5, &(struct gl_py_frame){.code = 0x2000, .fp = 1});
	CHECK(c && !strcmp(c->file, "...a?b") && !strcmp(c->name, "\xc3\xa9m\xe6\x9c\xac") &&
		  !c->table,
	      "converted: %s %s", c ? c->file : "", c ? c->name : "");
	/* malformed: lengths past the record, odd UCS-2, a bad kind; counted, refused */
	r.hdr.size = (uint16_t)(offsetof(struct gl_py_code_rec, data) + 8);
	CHECK(pyframes__record(pf, &r.hdr) == -EINVAL, "past its end");
	r.hdr.size += 1;
	r.name_len = 5;
	CHECK(pyframes__record(pf, &r.hdr) == -EINVAL, "odd UCS-2");
	r.name_len = 6;
	r.name_kind = 3;
	CHECK(pyframes__record(pf, &r.hdr) == -EINVAL, "kind 3");
	r.hdr.size = 20;
	CHECK(pyframes__record(pf, &r.hdr) == -EINVAL, "shorter than its header");
	st.hdr.kind = GL_REC_PY_STACK;
	st.hdr.pid = 5;
	st.id = GL_STACK_PY + 1;
	st.nr = 2;
	st.hdr.size = (uint16_t)(offsetof(struct gl_py_stack_rec, frames) + sizeof(st.frames[0]));
	CHECK(pyframes__record(pf, &st.hdr) == -EINVAL, "fewer frames than it says");
	st.nr = GL_PY_DEPTH_MAX + 1;
	st.hdr.size = sizeof(st);
	CHECK(pyframes__record(pf, &st.hdr) == -EINVAL, "more frames than there can be");
	st.nr = 1;
	st.id = 5;
	CHECK(pyframes__record(pf, &st.hdr) == -EINVAL, "not a Python stack id");
	st.id = GL_STACK_PY + 1;
	CHECK(!pyframes__record(pf, &st.hdr) && pyframes__stack(pf, 5, GL_STACK_PY + 1), "a stack");
	CHECK(pyframes__bad(pf) == 7, "counted: %" PRIu64, pyframes__bad(pf));
	pyframes__free(pf);
}

/* ---- merged stacks ---- */

#define PID 42
#define LIB 0x10000 /* native frames below: libffi, then the interpreter */

static void name(struct symbolizer *s, uint64_t addr, const char *mod, const char *func)
{
	struct sym_info si = {.module = mod, .func = func};

	CHECK(!symbolizer__set(s, PID, addr, &si), "set");
}

/* One descriptor per code object 0x100 * i, named f<i>, every instruction on line i. */
static void describe(struct symbolizer *s, int i)
{
	static struct gl_py_code_rec r;
	char nm[16];
	const uint8_t table[] = {0x80, 0x00}; /* 3.12: 1 unit on the first line */

	snprintf(nm, sizeof(nm), "f%d", i);
	put_code(&r, PID, 0x100 * (uint64_t)i, 1,
		 i == 9 ? "/venv/site-packages/torch/x.py" : "/srv/model.py", nm, table,
		 sizeof(table));
	r.firstlineno = i;
	CHECK(!symbolizer__py_record(s, &r.hdr), "descriptor");
}

static int32_t send_stack(struct symbolizer *s, int32_t native, const int *codes, int n,
			  uint64_t mask, uint16_t flags)
{
	static int32_t next = GL_STACK_PY;
	struct gl_py_stack_rec st = {};
	int i;

	st.hdr.kind = GL_REC_PY_STACK;
	st.hdr.pid = PID;
	st.id = next++;
	st.native_id = native;
	st.nr = (uint16_t)n;
	st.flags = flags;
	st.version = 0x030c;
	st.entry_mask = mask;
	for (i = 0; i < n; i++)
		st.frames[i] = (struct gl_py_frame){.code = 0x100 * (uint64_t)codes[i], .fp = 1};
	st.hdr.size = (uint16_t)(offsetof(struct gl_py_stack_rec, frames) + n * 16);
	CHECK(!symbolizer__py_record(s, &st.hdr), "stack");
	return st.id;
}

static const struct ustack *alloc(struct symbolizer *s, int32_t id, uint64_t caller)
{
	struct gl_call_rec r = {.hdr = {.size = sizeof(r), .kind = GL_REC_ALLOC, .pid = PID},
				.caller = caller,
				.stack_id = id};

	CHECK(!symbolizer__py_record(s, &r.hdr), "merge");
	return symbolizer__stack(s, PID, id, caller);
}

/* The names of a stack's frames, innermost first, joined by spaces. */
static const char *names(struct symbolizer *s, const struct ustack *st)
{
	static char buf[1024];
	size_t o = 0, i;

	buf[0] = 0;
	for (i = 0; st && i < st->nr && o < sizeof(buf) - 64; i++) {
		const struct sym_info *si = symbolizer__info(s, PID, st->frames[i]);

		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s", i ? " " : "",
				      si && si->func ? si->func : "?");
	}
	return buf;
}

static void merged(void)
{
	/* native: call site in libffi, _ctypes, eval, PyObject_Call, eval, Py_RunMain, main */
	const uint64_t walk[] = {LIB + 1, LIB + 2, LIB + 3, LIB + 4, LIB + 5, LIB + 6, LIB + 7};
	const int codes[] = {1, 2, 3, 4};
	const struct ustack *st;
	struct symbolizer *s;
	int32_t id;
	int i;

	if (!CHECK(!symbolizer__new(NULL, &s), "new"))
		return;
	name(s, LIB + 1, "libffi.so.8", "ffi_call_unix64");
	name(s, LIB + 2, "_ctypes.cpython-312-x86_64-linux-gnu.so", "_ctypes_callproc");
	name(s, LIB + 3, "libpython3.12.so.1.0", "_PyEval_EvalFrameDefault");
	name(s, LIB + 4, "libpython3.12.so.1.0", "PyObject_Call");
	name(s, LIB + 5, "libpython3.12.so.1.0", "_PyEval_EvalFrameDefault.cold");
	name(s, LIB + 6, "libpython3.12.so.1.0", "Py_RunMain");
	name(s, LIB + 7, "app", "main");
	name(s, LIB + 8, "libpython3.12.so.1.0", "_PyObject_MakeTpCall");
	for (i = 1; i <= 9; i++)
		describe(s, i);
	/* a reliable walk: two calls of the loop, f1 f2 in the inner, f3 f4 in the outer */
	CHECK(!symbolizer__set_stack(s, PID, 1, LIB + 1, walk, 7, 0, 0), "native");
	id = send_stack(s, 1, codes, 4, 1 << 1 | 1 << 3, 0);
	st = alloc(s, id, LIB + 1);
	CHECK(st && !strcmp(names(s, st), "ffi_call_unix64 _ctypes_callproc f1 f2 PyObject_Call f3 "
					  "f4 Py_RunMain main"),
	      "in place of the loop's calls: %s", names(s, st));
	CHECK(st && !st->flags, "nothing cut");
	CHECK(symbolizer__site_frame(s, PID, id, LIB + 1) == (st ? st->frames[2] : 1),
	      "the site: f1, the innermost frame of the program");
	CHECK(!strcmp(symbolizer__name(s, PID, st->frames[2]), "f1 (model.py:1)"), "named %s",
	      symbolizer__name(s, PID, st->frames[2]));
	/* through code without frame pointers from frame 2: dropped among the Python frames */
	CHECK(!symbolizer__set_stack(s, PID, 2, LIB + 1, walk, 7, STACK_NO_FP, 2), "native");
	id = send_stack(s, 2, codes, 4, 1 << 3, 0);
	st = alloc(s, id, LIB + 1);
	CHECK(st && !strcmp(names(s, st), "ffi_call_unix64 _ctypes_callproc f1 f2 f3 f4 "
					  "PyObject_Call Py_RunMain main"),
	      "unreliable frames dropped: %s", names(s, st));
	CHECK(st && (st->flags & STACK_NO_FP) && st->nofp_from == 6,
	      "unreliable after the Python frames: from %u", st ? st->nofp_from : 0);
	/* another native walk gone astray the same way: one stack stands for both */
	{
		const uint64_t w[] = {LIB + 1, LIB + 2, LIB + 8, LIB + 3,
				      LIB + 4, LIB + 6, LIB + 7};
		int32_t first = id;

		CHECK(!symbolizer__set_stack(s, PID, 6, LIB + 1, w, 7, STACK_NO_FP, 2), "native");
		id = send_stack(s, 6, codes, 4, 1 << 3, 0);
		CHECK(alloc(s, id, LIB + 1) && symbolizer__py_canonical(s, PID, id) == first &&
			  symbolizer__py_canonical(s, PID, first) == first,
		      "the same frames: %d for %d", symbolizer__py_canonical(s, PID, id), first);
	}
	/* no evaluation frame named: the Python frames at the first interpreter frame */
	{
		const uint64_t w[] = {LIB + 1, LIB + 8, LIB + 6, LIB + 7};

		CHECK(!symbolizer__set_stack(s, PID, 3, LIB + 1, w, 4, 0, 0), "native");
		id = send_stack(s, 3, codes, 2, 0, 0);
		st = alloc(s, id, LIB + 1);
		CHECK(st && !strcmp(names(s, st),
				    "ffi_call_unix64 f1 f2 _PyObject_MakeTpCall Py_RunMain main"),
		      "before the interpreter: %s", names(s, st));
	}
	/* a Python stack cut at its depth: what follows the next loop call is cut too */
	CHECK(!symbolizer__set_stack(s, PID, 4, LIB + 1, walk, 7, 0, 0), "native");
	id = send_stack(s, 4, codes, 2, 1 << 1, GL_PYS_TRUNCATED);
	st = alloc(s, id, LIB + 1);
	CHECK(st && !strcmp(names(s, st), "ffi_call_unix64 _ctypes_callproc f1 f2 PyObject_Call") &&
		  (st->flags & STACK_TRUNCATED),
	      "cut: %s", names(s, st));
	/* no native stack (--stack-depth 0): the call site, then the Python frames; a frame in
	 * PyTorch's files is not the site */
	{
		const int torch_first[] = {9, 2};

		id = send_stack(s, -1, torch_first, 2, 0, 0);
		st = alloc(s, id, LIB + 1);
		CHECK(st && !strcmp(names(s, st), "ffi_call_unix64 f9 f2"), "%s", names(s, st));
		CHECK(st && symbolizer__site_frame(s, PID, id, LIB + 1) == st->frames[2],
		      "the site skips torch's own frame");
	}
	/* a user C extension's call site names the site itself */
	{
		const uint64_t w[] = {LIB + 9, LIB + 3};

		name(s, LIB + 9, "myext.so", "alloc_cache");
		CHECK(!symbolizer__set_stack(s, PID, 5, LIB + 9, w, 2, 0, 0), "native");
		id = send_stack(s, 5, codes, 1, 1, 0);
		CHECK(alloc(s, id, LIB + 9) && !symbolizer__site_frame(s, PID, id, LIB + 9),
		      "its call site");
	}
	symbolizer__free(s);
}

/* --layout 0x030c: the table's layout of a version, "field offset" per line (test_python.py
 * compares it with the interpreter's DWARF). */
static int print_layout(const char *ver)
{
	const struct gl_py_cfg *c = py_abi__layout((uint16_t)strtoul(ver, NULL, 0));

	if (!c)
		return 1;
#define F(f) printf("%s %u\n", #f, (unsigned int)c->f)
	F(rt_interp_head), F(is_next), F(is_threads_head), F(ts_next), F(ts_thread_id);
	F(ts_frame), F(ts_chunk), F(ts_top), F(chunk_data), F(cf_current_frame), F(fr_back);
	F(fr_code), F(fr_instr), F(fr_owner), F(fr_entry), F(co_filename), F(co_name);
	F(co_linetable), F(co_firstlineno), F(str_state), F(str_length), F(str_ascii_data);
	F(str_compact_data), F(bytes_size), F(bytes_data);
#undef F
	printf("co_code_adaptive %u\n", py_abi__code_units(c->version));
	return 0;
}

int main(int argc, char **argv)
{
	static const struct unit_test tests[] = {
	    {"line_tables_agree_with_each_interpreter", line_tables},
	    {"interpreters_detected_with_their_layouts", detection},
	    {"python_records_checked_and_named", records},
	    {"stacks_merged_in_place_of_the_interpreter", merged},
	};

	if (argc == 3 && !strcmp(argv[1], "--layout"))
		return print_layout(argv[2]);
	return run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
