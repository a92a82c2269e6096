# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
#   make          build ./gpuleak (generated files under .output/)
#   make demo     install dependencies, build, run the built-in example under gpuleak
#   make check    no root: the unit tests, the golden reports (tests/golden), the format check
#   make test     install dependencies, build (+ ASan/UBSan build), run the test suite (root:
#                 every test, those of make check included, in one tally)
#   make golden   rewrite the golden reports' expected outputs (tests/golden/README.md)
#   make format-check / make format    check / apply .clang-format on the C sources
#   make bench    the benchmark (not part of make test)
#   make vmtest   the kernel matrix alone: end-to-end tests inside Debian's 6.18, 6.12, 6.1
#                 and 5.10 under qemu (root; also part of make test; docs/kernels.md)
#   make bench-capture   capture size and `gpuleak report` speed (bench/capture_bench.sh)
#   make fuzz     fuzz the capture reader and the rules parser, FUZZ_TIME seconds each (600)

OUTPUT := .output
CLANG ?= clang
CC ?= cc
BPFTOOL ?= bpftool
VERSION := 0.1.0
# Debian's interpreter: the test suite uses Debian's python3-jsonschema.
PYTHON ?= /usr/bin/python3

ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
VMLINUX := vmlinux/$(ARCH)/vmlinux.h
# One vmlinux.h per architecture is committed (scripts/gen-vmlinux.sh makes them); a build on
# another says so at once rather than failing on a missing header deep in the BPF build.
SUPPORTED_ARCHS := $(notdir $(wildcard vmlinux/*))
ifeq ($(filter $(ARCH),$(SUPPORTED_ARCHS)),)
$(error gpuleak builds on $(SUPPORTED_ARCHS) only (vmlinux/ARCH/vmlinux.h); this machine is \
	$(shell uname -m))
endif

# A recipe that fails leaves no half-written target behind for the next make to trust.
.DELETE_ON_ERROR:

# make install [PREFIX=/usr/local] [DESTDIR=]: the binary, the NVTX library it injects, the
# man page.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib/gpuleak
MANDIR ?= $(PREFIX)/share/man
# libbpf's usdt.bpf.h includes <linux/errno.h>, which needs the multiarch <asm/errno.h>.
BPF_MULTIARCH := /usr/include/$(shell $(CC) -print-multiarch)

# `make V=1` shows the commands.
ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

# libbpf: Debian's source package (scripts/install-deps.sh unpacks it into LIBBPF_SRC), built
# here and linked statically, headers included, so gpuleak runs the libbpf it was tested with
# whatever the machine has (why 1.7: install-deps.sh). Its headers come first for the BPF
# programs too: usdt.bpf.h must match the user-space USDT code that fills its spec map.
LIBBPF_SRC ?= /var/cache/gpuleak/libbpf
LIBBPF_OUT := $(OUTPUT)/libbpf
LIBBPF_A := $(LIBBPF_OUT)/lib/libbpf.a
LIBBPF_INC := -isystem $(LIBBPF_OUT)/include

WARN := -Wall -Wextra -Werror
CFLAGS ?= -O2 -g
CFLAGS += $(WARN) -std=gnu11 -D_GNU_SOURCE -DGPULEAK_VERSION='"$(VERSION)"' \
	  $(LIBBPF_INC) -Ibpf -Iuser -I$(OUTPUT) -fno-omit-frame-pointer
# capstone (user/probe/dawn_procs.c) and libstdc++ (__cxa_demangle, user/symbols/demangle.c)
# are opened when first needed, not linked: they cost every process ~10 ms before main().
LDLIBS := $(LIBBPF_A) -ldw -lelf -lz -lm -ldl -lpthread
SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined

BPF_SRC := bpf/gpuleak.bpf.c
BPF_OBJ := $(OUTPUT)/gpuleak.bpf.o
SKEL := $(OUTPUT)/gpuleak.skel.h

# user/ is one folder per stage of the data path (HACKING.md). Everything but live/ and cli/
# is the engine that needs no libbpf: what `gpuleak report`, the unit tests, the fuzzers and
# the capture generator link. Derived from the folders, never listed by hand.
ENGINE_DIRS := lib probe symbols capture tracker engine diff output offline
LIVE_DIRS := live cli
ENGINE_SRC := $(foreach d,$(ENGINE_DIRS),$(wildcard user/$(d)/*.c))
LIVE_SRC := $(foreach d,$(LIVE_DIRS),$(wildcard user/$(d)/*.c))
USER_SRC := $(ENGINE_SRC) $(LIVE_SRC)
USER_OBJ := $(patsubst user/%.c,$(OUTPUT)/obj/%.o,$(USER_SRC))
ASAN_OBJ := $(patsubst user/%.c,$(OUTPUT)/asan/%.o,$(USER_SRC))
ENGINE_OBJ := $(patsubst user/%.c,$(OUTPUT)/obj/%.o,$(ENGINE_SRC))
ENGINE_ASAN_OBJ := $(patsubst user/%.c,$(OUTPUT)/asan/%.o,$(ENGINE_SRC))
# Header dependencies come from the compiler (-MMD); only the skeleton is named, since the
# live session includes a generated header that must exist before its first compile.
DEPFLAGS = -MMD -MP

.PHONY: all deps test check golden format-check format demo bench bench-capture fuzz \
	fuzz-build fuzz-merge clean standins check-deps install uninstall vmtest
all: gpuleak

deps:
	@scripts/install-deps.sh

$(OUTPUT):
	@mkdir -p $@

# libbpf's own build, quiet; its objects under .output/libbpf/obj. Stamped by the archive.
$(LIBBPF_A): | $(OUTPUT)
	@test -f $(LIBBPF_SRC)/src/Makefile || { echo "no libbpf source in $(LIBBPF_SRC):" \
		"run scripts/install-deps.sh (or make LIBBPF_SRC=DIR)" >&2; exit 1; }
	$(call msg,LIBBPF,$@ ($(shell cat $(LIBBPF_SRC)/VERSION 2>/dev/null)))
	$(Q)$(MAKE) -s --no-print-directory -C $(LIBBPF_SRC)/src BUILD_STATIC_ONLY=y \
		OBJDIR=$(abspath $(LIBBPF_OUT)/obj) DESTDIR=$(abspath $(LIBBPF_OUT)) PREFIX=/ \
		LIBDIR=/lib INCLUDEDIR=/include install_headers install >/dev/null

$(BPF_OBJ): $(BPF_SRC) $(wildcard bpf/*.h) $(VMLINUX) $(LIBBPF_A) | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) $(WARN) \
		-Ivmlinux/$(ARCH) -Ibpf $(LIBBPF_INC) -idirafter $(BPF_MULTIARCH) -c $(BPF_SRC) -o $@

$(SKEL): $(BPF_OBJ)
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name gpuleak_bpf > $@.tmp && mv $@.tmp $@

$(OUTPUT)/obj/%.o: user/%.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(OUTPUT)/asan/%.o: user/%.c
	@mkdir -p $(@D)
	$(call msg,CC-ASAN,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN) $(DEPFLAGS) -c $< -o $@

# Only the live session includes the skeleton.
$(patsubst user/%.c,$(OUTPUT)/obj/%.o,$(LIVE_SRC)) \
$(patsubst user/%.c,$(OUTPUT)/asan/%.o,$(LIVE_SRC)): $(SKEL)

-include $(USER_OBJ:.o=.d) $(ASAN_OBJ:.o=.d)

gpuleak: $(USER_OBJ) $(OUTPUT)/libgpuleak_nvtx.so $(LIBBPF_A)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(USER_OBJ) $(LDLIBS) -o $@

# Loaded into targets by NVTX (run --step nvtx:): self-contained. -O0 so every entry starts
# with push %rbp, which the kernel emulates under a uprobe (optimizers make these empty
# functions start with xor/ret, which it must single-step).
$(OUTPUT)/libgpuleak_nvtx.so: user/live/inject/nvtx_inject.c | $(OUTPUT)
	$(call msg,CC-SO,$@)
	$(Q)$(CC) -O0 -g $(WARN) -fPIC -shared -fvisibility=hidden -fno-omit-frame-pointer \
		-Wl,-z,defs $< -o $@

# The build the tests run: same code under AddressSanitizer and UBSan.
$(OUTPUT)/gpuleak-asan: $(ASAN_OBJ) $(LIBBPF_A)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN) $(ASAN_OBJ) $(LDLIBS) -o $@

-include tests/build.mk

# Every test, as root: make check's (they run first), then the end-to-end suite. The last line
# is the tally, "N passed, N failed" (.ci/run repeats it).
test: deps
	@$(MAKE) --no-print-directory gpuleak $(OUTPUT)/gpuleak-asan standins unit fuzz-build \
		$(CAPTURE_GEN)
	@$(PYTHON) tests/run_tests.py --gpuleak $(OUTPUT)/gpuleak-asan

# The kernel matrix alone (tests/test_vmtest.py, scripts/vmtest.sh): the plain ./gpuleak and
# the scenarios, run inside each kernel install-deps fetched. One tally, as make test's.
vmtest: deps
	@$(MAKE) --no-print-directory gpuleak standins
	@$(PYTHON) tests/run_tests.py --gpuleak gpuleak -k vmtest_linux_

# What needs no root, no BPF and no target, as any user: the C unit tests (with the test
# libraries they load), `gpuleak report` of the committed captures against their expected
# outputs (tests/golden), and the format check. Builds what they need (the BPF skeleton
# included: compiling is not loading), then the runner's --check subset: one tally.
check:
	@$(MAKE) --no-print-directory $(OUTPUT)/gpuleak-asan unit fuzz-build \
		$(STANDIN_LIBC10_CUDA) $(NOSDT_LIBC10_CUDA) $(STANDIN_LIBC10)
	@$(PYTHON) tests/run_tests.py --check --gpuleak $(OUTPUT)/gpuleak-asan

# The golden reports' expected outputs, from the committed captures: after a change to the
# output that is meant (then commit the diff; tests/golden/README.md).
golden: $(OUTPUT)/gpuleak-asan
	@tests/golden/golden.sh --update --gpuleak $(OUTPUT)/gpuleak-asan

# .clang-format over every C file under user/, bpf/, tests/ and bench/.
CLANG_FORMAT ?= clang-format
format-check:
	@CLANG_FORMAT=$(CLANG_FORMAT) tests/format-check.sh

format:
	$(CLANG_FORMAT) -i $$(find user bpf tests bench -name '*.[ch]')

demo: deps
	@$(MAKE) --no-print-directory gpuleak standins
	@scripts/demo.sh

install: gpuleak
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 0755 gpuleak $(DESTDIR)$(BINDIR)/gpuleak
	install -m 0644 $(OUTPUT)/libgpuleak_nvtx.so $(DESTDIR)$(LIBDIR)/libgpuleak_nvtx.so
	install -m 0644 docs/gpuleak.1 $(DESTDIR)$(MANDIR)/man1/gpuleak.1

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/gpuleak $(DESTDIR)$(LIBDIR)/libgpuleak_nvtx.so \
		$(DESTDIR)$(MANDIR)/man1/gpuleak.1
	-rmdir $(DESTDIR)$(LIBDIR) 2>/dev/null

clean:
	rm -rf $(OUTPUT) gpuleak

# C unit tests: each links the ASan/UBSan objects it needs (everything but main).
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/unit/%,$(UNIT_SRC))
# Unit tests link everything but the command line.
LIB_ASAN_OBJ := $(filter-out $(OUTPUT)/asan/cli/%,$(ASAN_OBJ))

$(OUTPUT)/tests/unit/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(LIB_ASAN_OBJ) $(wildcard user/*/*.h) \
		$(LIBBPF_A)
	@mkdir -p $(@D)
	$(call msg,CC-UNIT,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN) $< $(LIB_ASAN_OBJ) $(LDLIBS) -o $@

# The unit tests' fixtures: test_stacks loads these two from ../lib.
unit: $(UNIT_BIN) $(STACKS_HELPER) $(STACKS_NOFP)
.PHONY: unit

# Capture benchmark: a generator that writes realistic captures through the real writer.
LIB_OBJ := $(filter-out $(OUTPUT)/obj/cli/%,$(USER_OBJ))
CAPTURE_GEN := $(OUTPUT)/bench/capture_gen

$(CAPTURE_GEN): bench/capture_gen.c $(LIB_OBJ) $(LIBBPF_A)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $< $(LIB_OBJ) $(LDLIBS) -o $@

# Callable from `make bench`; needs root for the recorded scenarios (skipped without).
bench-capture: gpuleak $(CAPTURE_GEN) standins
	@bench/capture_bench.sh

include bench/bench.mk

# libFuzzer targets for the files users hand us: tests/fuzz/fuzz_NAME.c, with its seeds,
# corpus and dictionary in tests/fuzz/NAME/. capture: everything `gpuleak report` runs, from
# bytes; rules: the rules parser and matchers; perfmap: the perf maps traced JITs write; json:
# the strict JSON reader and the NDJSON verdicts gpuleak diff reads, with the diff of what loads;
# dawn: the object reader and Dawn's proc-table recovery, on any object file.
# objfacts: the store of facts about objects a run leaves for the next in /run/gpuleak.
FUZZ_CC ?= clang
FUZZ_TARGETS := capture rules perfmap json dawn unwind objfacts
FUZZ_BINS := $(patsubst %,$(OUTPUT)/fuzz/fuzz_%,$(FUZZ_TARGETS))
# The engine: every libbpf-free folder.
FUZZ_SRC := $(ENGINE_SRC)
FUZZ_CFLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined $(WARN) -std=gnu11 -D_GNU_SOURCE \
	-DGPULEAK_VERSION='"$(VERSION)"' -Ibpf -Iuser
FUZZ_TIME ?= 600
FUZZ_ARGS = -timeout=10 -rss_limit_mb=2048 -dict=tests/fuzz/$*/dict

$(OUTPUT)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_SRC) $(wildcard user/*/*.h) bpf/gpuleak.h
	@mkdir -p $(@D)
	$(call msg,FUZZ-CC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(FUZZ_SRC) -ldw -lelf -lz -lm -ldl -lpthread -o $@

fuzz-build: $(FUZZ_BINS)

# `make fuzz` runs every target for FUZZ_TIME seconds each, `make fuzz-NAME` one of them.
# New inputs go to .output/fuzz/NAME; `make fuzz-merge` keeps what adds coverage in the
# committed corpora.
fuzz: $(addprefix fuzz-,$(FUZZ_TARGETS))

fuzz-%: $(OUTPUT)/fuzz/fuzz_%
	@mkdir -p $(OUTPUT)/fuzz/$*
	$< $(FUZZ_ARGS) -max_total_time=$(FUZZ_TIME) -print_final_stats=1 \
		$(OUTPUT)/fuzz/$* tests/fuzz/$*/corpus tests/fuzz/$*/seeds

fuzz-merge: $(addprefix fuzz-merge-,$(FUZZ_TARGETS))

fuzz-merge-%: $(OUTPUT)/fuzz/fuzz_%
	@mkdir -p tests/fuzz/$*/corpus
	$< $(FUZZ_ARGS) -merge=1 tests/fuzz/$*/corpus tests/fuzz/$*/seeds $(OUTPUT)/fuzz/$*
