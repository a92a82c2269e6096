// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * lib/pickle: the exact opcodes of each kind of value, and CPython's own pickle.load on a
 * file holding all of them (python3 of the machine; the test says when it has none).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "lib/pickle.h"

/* What the writer made of fn's values, in *len bytes (malloc'd). */
static unsigned char *written(void (*fn)(struct pickle *p), size_t *len, int *err)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	struct pickle *p;

	*err = -ENOMEM;
	if (!f)
		return NULL;
	*err = pickle__new(f, &p);
	if (!*err) {
		fn(p);
		*err = pickle__end(p);
		pickle__free(p);
	}
	fclose(f);
	return (unsigned char *)buf;
}

static void ints(struct pickle *p)
{
	pickle__list(p);
	pickle__int(p, 7);
	pickle__int(p, 300);
	pickle__int(p, -1);
	pickle__int(p, 1LL << 40);
	pickle__int(p, -(1LL << 40));
	pickle__uint(p, UINT64_MAX);
	pickle__list_end(p);
}

static void exact_opcodes(void)
{
	static const unsigned char want[] = {
	    0x80, 4,							   /* PROTO 4 */
	    ']',  '(',							   /* EMPTY_LIST MARK */
	    'K',  7,							   /* BININT1 */
	    'M',  0x2c, 1,						   /* BININT2 300 */
	    'J',  0xff, 0xff, 0xff, 0xff,				   /* BININT -1 */
	    0x8a, 6,	0,    0,    0,	  0,	0,    1,		   /* LONG1 2^40: 6 bytes */
	    0x8a, 6,	0,    0,    0,	  0,	0,    0xff,		   /* LONG1 -2^40 */
	    0x8a, 9,	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, /* 2^64 - 1 */
	    'e',  '.'};
	size_t len = 0;
	int err;
	unsigned char *b = written(ints, &len, &err);

	CHECK(!err, "written: %d", err);
	if (CHECK(b && len == sizeof(want), "%zu bytes, want %zu", len, sizeof(want)))
		CHECK(!memcmp(b, want, len), "the opcodes");
	free(b);
}

static void memo_strings(struct pickle *p)
{
	pickle__list(p);
	pickle__str_memo(p, "frames");
	pickle__str_memo(p, "frames");
	pickle__list_end(p);
}

static void strings_by_reference(void)
{
	static const unsigned char want[] = {0x80, 4,	']', '(',  0x8c, 6, 'f', 'r', 'a',
					     'm',  'e', 's', 0x94, 'h',	 0, 'e', '.'};
	size_t len = 0;
	int err;
	unsigned char *b = written(memo_strings, &len, &err);

	CHECK(!err, "written: %d", err);
	if (CHECK(b && len == sizeof(want), "%zu bytes, want %zu", len, sizeof(want)))
		CHECK(!memcmp(b, want, len), "a string once, then BINGET 0");
	free(b);
}

static void unbalanced(struct pickle *p)
{
	pickle__dict(p);
}

static void open_container_is_an_error(void)
{
	size_t len;
	int err;

	free(written(unbalanced, &len, &err));
	CHECK(err == -EINVAL, "a dict left open: %d", err);
}

static char long_str[300];

static void everything(struct pickle *p)
{
	uint32_t frames;

	pickle__dict(p);
	pickle__str_memo(p, "segments");
	pickle__list(p);
	pickle__dict(p);
	pickle__str_memo(p, "address");
	pickle__uint(p, 0x7f0000000000ULL);
	pickle__str_memo(p, "is_expandable");
	pickle__bool(p, true);
	pickle__str_memo(p, "other");
	pickle__bool(p, false);
	pickle__str_memo(p, "pool");
	pickle__int(p, 0);
	pickle__int(p, 0);
	pickle__tuple2(p);
	pickle__str_memo(p, "none");
	pickle__none(p);
	pickle__dict_end(p);
	pickle__list_end(p);
	pickle__str_memo(p, "frames");
	pickle__list(p);
	pickle__str(p, "kv_append");
	pickle__str(p, "bad \xff byte, \xe2\x82\xac ok");
	pickle__str(p, long_str);
	pickle__list_end(p);
	frames = pickle__memo(p);
	pickle__str_memo(p, "again");
	pickle__get(p, frames);
	pickle__dict_end(p);
}

static void python_reads_it(void)
{
	static const char script[] =
	    "import pickle,sys\n"
	    "d = pickle.load(open(sys.argv[1], 'rb'))\n"
	    "want = {'segments': [{'address': 0x7f0000000000, 'is_expandable': True,\n"
	    "  'other': False, 'pool': (0, 0), 'none': None}],\n"
	    "  'frames': ['kv_append', 'bad \\ufffd byte, \\u20ac ok', 'x' * 299]}\n"
	    "want['again'] = want['frames']\n"
	    "assert d == want, d\n"
	    "assert d['again'] is d['frames']\n"
	    "print('ok')\n";
	char path[] = "/tmp/gpuleak-pickle-XXXXXX", py[] = "/tmp/gpuleak-pickle-py-XXXXXX";
	char cmd[256], out[512] = "";
	unsigned char *b;
	size_t len = 0;
	FILE *f;
	int fd, pfd, err;

	if (access("/usr/bin/python3", X_OK)) {
		printf("  (no /usr/bin/python3: CPython's reader not run)\n");
		return;
	}
	memset(long_str, 'x', sizeof(long_str) - 1);
	b = written(everything, &len, &err);
	CHECK(!err, "written: %d", err);
	fd = mkstemp(path);
	pfd = mkstemp(py);
	if (!CHECK(fd >= 0 && pfd >= 0 && b, "temporary files"))
		goto cleanup;
	CHECK(write(fd, b, len) == (ssize_t)len, "the pickle written");
	CHECK(write(pfd, script, strlen(script)) == (ssize_t)strlen(script), "the script");
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s %s 2>&1 | tail -c 200", py, path);
	f = popen(cmd, "r");
	if (CHECK(f, "python3 runs")) {
		if (!fgets(out, sizeof(out), f))
			out[0] = 0;
		CHECK(pclose(f) == 0 && !strcmp(out, "ok\n"), "pickle.load: %s", out);
	}
cleanup:
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	if (pfd >= 0) {
		close(pfd);
		unlink(py);
	}
	free(b);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"exact_opcodes", exact_opcodes},
	    {"strings_by_reference", strings_by_reference},
	    {"open_container_is_an_error", open_container_is_an_error},
	    {"python_reads_it", python_reads_it},
	};

	return run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
