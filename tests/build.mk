# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Test targets: the stand-in CUDA libraries (tests/standin) and the scenario programs
# (tests/scenarios) the end-to-end tests trace. Included by the top-level Makefile; make runs
# from the repository root. Everything lands under $(TESTS_OUTPUT):
#   lib/libcuda.so.1, lib/libcudart.so.13,    the stand-ins (no dev symlinks: nothing links
#   lib/libnccl.so.2                          with -lcuda/-lcudart/-lnccl, scenarios name the
#                                             file)
#   bin/<scenario>, bin/standin_selftest
#   bin/wgpu, bin/wgpu_decode,                WebGPU scenarios on the real Dawn of npm
#   bin/wgpu_shutdown
#                                             bun-webgpu-linux-x64 (scripts/install-deps.sh
#                                             fetches it into $(GPULEAK_DEPS))
#   bin/diff-base/diffapp, bin/diff-new/...   one scenario built twice, as two builds of a
#                                             program (gpuleak diff): also wgpu_diff
# `make standins` builds all of it; `make standins-check` also runs the self-test and every
# scenario once without a tracer. Include this after the top-level default target: its first
# rule would otherwise become the default goal.

TESTS_BUILD_MK := $(lastword $(MAKEFILE_LIST))

# clang unless CC was chosen (make CC=gcc, the environment, a makefile). GNU make predefines
# CC=cc, so `CC ?= clang` would never take effect; and setting CC here would change the
# compiler of the including Makefile's own targets, hence a variable of our own.
ifeq ($(origin CC),default)
TESTS_CC ?= clang
else
TESTS_CC ?= $(CC)
endif

TESTS_OUTPUT ?= .output/tests
STANDIN_LIBDIR := $(TESTS_OUTPUT)/lib
SCENARIO_BINDIR := $(TESTS_OUTPUT)/bin

# Only the build reads the toolkit: headers to check every stand-in prototype against (nccl.h
# must be NCCL 2.28's), the real runtime for `realcudart`, the real NCCL for `realnccl`, nvcc
# for `static_cudart`.
CUDA_HOME ?= /usr/local/cuda
CUDA_INCLUDE ?= $(CUDA_HOME)/include
CUDA_LIB64 ?= $(CUDA_HOME)/lib64
CUDA_NCCL_LIBDIR ?= $(CUDA_HOME)/lib
NVCC ?= $(CUDA_HOME)/bin/nvcc

TESTS_WARN := -Wall -Wextra -Werror
STANDIN_CFLAGS := -std=gnu11 -O2 -fPIC -fno-omit-frame-pointer $(TESTS_WARN) -I$(CUDA_INCLUDE)
# Every exported entry of NVIDIA's libraries starts with `push %rbp`, which the kernel
# emulates for a uprobe; most other first instructions are single-stepped, ~30x slower here.
# Keep the stand-ins' entries the same so overhead measured on them is the real one: no
# sibling calls (a wrapper would start with mov + jmp) and no shrink-wrapping (an argument
# check would come before the push). gcc still builds frameless leaves (cuDriverGetVersion,
# cudaGetErrorName/String): nothing traces those. Recursive (=): TESTS_CC may be set later.
STANDIN_NO_SHRINK_WRAP = $(shell $(TESTS_CC) -fno-shrink-wrap -x c -c -o /dev/null \
	/dev/null 2>/dev/null && echo -fno-shrink-wrap || echo -mllvm -enable-shrink-wrap=false)
STANDIN_ENTRY_CFLAGS = -fno-optimize-sibling-calls $(STANDIN_NO_SHRINK_WRAP)
# Stripped like NVIDIA's libraries: .dynsym only, no .symtab, so symbol lookup in the tests
# takes the path it takes on the real ones.
STANDIN_LDFLAGS := -shared -Wl,-z,defs -Wl,--no-undefined-version -Wl,--strip-all -pthread
# -O1 keeps every site function and its call to the API where the source puts them.
SCENARIO_CFLAGS := -std=gnu11 -O1 -g -fno-omit-frame-pointer $(TESTS_WARN) -I$(CUDA_INCLUDE)
# DT_RPATH, not RUNPATH: it wins over LD_LIBRARY_PATH, so an environment that points
# LD_LIBRARY_PATH at a real CUDA install cannot swap NVIDIA's runtime in under a scenario.
# $ORIGIN keeps a copied lib/ + bin/ tree (another inode for the uprobes) self-contained.
SCENARIO_RPATH := -Wl,--disable-new-dtags -Wl,-rpath,'$$ORIGIN/../lib'

STANDIN_LIBCUDA := $(STANDIN_LIBDIR)/libcuda.so.1
STANDIN_LIBCUDART := $(STANDIN_LIBDIR)/libcudart.so.13
STANDIN_LIBS := $(STANDIN_LIBCUDA) $(STANDIN_LIBCUDART)
STANDIN_LIBNCCL := $(STANDIN_LIBDIR)/libnccl.so.2
# PyTorch's caching allocator over the stand-ins: libc10.so (the profiler hook) and
# libc10_cuda.so (the allocator, with PyTorch's USDT probes); lib-nosdt/ has a
# libc10_cuda.so built without them, as PyTorch before 2.1 or with TORCH_DISABLE_SDT.
STANDIN_LIBC10 := $(STANDIN_LIBDIR)/libc10.so
STANDIN_LIBC10_CUDA := $(STANDIN_LIBDIR)/libc10_cuda.so
NOSDT_LIBDIR := $(TESTS_OUTPUT)/lib-nosdt
NOSDT_LIBC10_CUDA := $(NOSDT_LIBDIR)/libc10_cuda.so
# lib-nobase/ has the one with probes, its notes rewritten to record no .stapsdt.base, as
# PyTorch's own note macro writes them (tests/standin/sdt_nobase.py).
NOBASE_LIBDIR := $(TESTS_OUTPUT)/lib-nobase
NOBASE_LIBC10_CUDA := $(NOBASE_LIBDIR)/libc10_cuda.so
# lib-nofp/ has one built without frame pointers, as PyTorch's wheels are (pytorch#51151).
NOFP_LIBDIR := $(TESTS_OUTPUT)/lib-nofp
NOFP_LIBC10_CUDA := $(NOFP_LIBDIR)/libc10_cuda.so
TORCH_SCENARIOS := $(addprefix $(SCENARIO_BINDIR)/,torch_decode torch_decode_nosdt \
	torch_decode_nofp torch_decode_nobase torch_dlopen)
# The probe-placement runtime (reloc.S): a libcudart.so.13 of its own, in its own folder.
RELOC_LIBDIR := $(TESTS_OUTPUT)/lib-reloc
RELOC_LIBCUDART := $(RELOC_LIBDIR)/libcudart.so.13

# Linked against the stand-in runtime.
SCENARIOS_CUDART := basic leak3 apis fail prealloc threads loop timeline hostleak asyncfree \
	runtime_over_driver flood ranks soak crash reset session shutdown oomloop reexec usdt_forms
# Linked against the stand-in driver alone.
SCENARIOS_DRIVER := driver_alloc vmm
# Linked against both: a runtime form and a driver form of the same calls (docs/cuda.md).
SCENARIOS_BOTH := graphs pools ipc hostreg arrays
SCENARIO_BINS := $(addprefix $(SCENARIO_BINDIR)/,$(SCENARIOS_CUDART) $(SCENARIOS_DRIVER) \
	$(SCENARIOS_BOTH) nccl_comm nccl_owners dlopen realcudart realdriver stacks reloc torchlike pyembed \
	unwind_nofp)
# Two builds of one program for `gpuleak diff`: BASE as written, NEW with the change (-D),
# the same file name in two folders (one command, one module), linked like the others.
DIFFAPP_BUILDS := $(SCENARIO_BINDIR)/diff-base/diffapp $(SCENARIO_BINDIR)/diff-new/diffapp
SCENARIO_BINS += $(DIFFAPP_BUILDS)
STANDIN_SELFTEST := $(SCENARIO_BINDIR)/standin_selftest
STANDIN_ALL := $(STANDIN_LIBS) $(STANDIN_LIBNCCL) $(RELOC_LIBCUDART) $(SCENARIO_BINS) \
	$(STANDIN_SELFTEST) $(STANDIN_LIBC10) $(STANDIN_LIBC10_CUDA) $(NOSDT_LIBC10_CUDA) \
	$(NOFP_LIBC10_CUDA) $(TORCH_SCENARIOS)

# Real Dawn: libwebgpu_wrapper.so (no SONAME) from the npm cache install-deps.sh fills.
GPULEAK_DEPS ?= /var/cache/gpuleak
DAWN_LIBDIR := $(GPULEAK_DEPS)/npm/bun-webgpu-linux-x64@0.1.7/node_modules/bun-webgpu-linux-x64
DAWN_LIB := $(DAWN_LIBDIR)/libwebgpu_wrapper.so
WGPU_SCENARIOS := $(addprefix $(SCENARIO_BINDIR)/,wgpu wgpu_decode wgpu_shutdown)
WGPU_DIFF_BUILDS := $(SCENARIO_BINDIR)/diff-base/wgpu_diff $(SCENARIO_BINDIR)/diff-new/wgpu_diff
WGPU_UNKNOWN_LIB := $(STANDIN_LIBDIR)/libwgpu_unknown.so
STANDIN_ALL += $(WGPU_UNKNOWN_LIB)
ifneq ($(wildcard $(DAWN_LIB)),)
STANDIN_ALL += $(WGPU_SCENARIOS) $(WGPU_DIFF_BUILDS)
endif

# static_cudart needs nvcc, realnccl NVIDIA's libnccl.so.2; without them the rest still builds.
ifneq ($(wildcard $(NVCC)),)
STANDIN_ALL += $(SCENARIO_BINDIR)/static_cudart
endif
ifneq ($(wildcard $(CUDA_NCCL_LIBDIR)/libnccl.so.2),)
STANDIN_ALL += $(SCENARIO_BINDIR)/realnccl
endif

# Where scripts/install-deps.sh unpacks NVIDIA's real driver library (Debian's libcuda1) for
# `realdriver`; standins-check skips that scenario, saying why, when it is not there.
GPULEAK_REAL_LIBCUDA ?= /var/cache/gpuleak/libcuda1/libcuda.so.1

.PHONY: standins standins-check

# The BPF object again with a stack no verifier without private stacks takes: `gpuleak probes
# --kernel --verifier --bpf-object` must refuse it (tests/test_kernel.py), so that the check
# that guards every change to the BPF programs is known to fail when it should.
STACKPAD_BPF_OBJ := $(TESTS_OUTPUT)/stackpad.bpf.o
STANDIN_ALL += $(STACKPAD_BPF_OBJ)

$(STACKPAD_BPF_OBJ): $(BPF_SRC) $(wildcard bpf/*.h) $(VMLINUX) $(LIBBPF_A)
	@mkdir -p $(@D)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -DGL_TEST_STACK_PAD=288 \
		$(WARN) -Ivmlinux/$(ARCH) -Ibpf $(LIBBPF_INC) -idirafter $(BPF_MULTIARCH) -c $(BPF_SRC) -o $@

# And with its read-only data laid out otherwise (one more variable first): --bpf-object must
# refuse to write the built-in skeleton's settings into it.
LAYOUT_BPF_OBJ := $(TESTS_OUTPUT)/layout.bpf.o
STANDIN_ALL += $(LAYOUT_BPF_OBJ)

$(LAYOUT_BPF_OBJ): $(BPF_SRC) $(wildcard bpf/*.h) $(VMLINUX) $(LIBBPF_A)
	@mkdir -p $(@D)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -DGL_TEST_RODATA_PAD \
		$(WARN) -Ivmlinux/$(ARCH) -Ibpf $(LIBBPF_INC) -idirafter $(BPF_MULTIARCH) -c $(BPF_SRC) -o $@

standins: $(STANDIN_ALL)
ifeq ($(wildcard $(NVCC)),)
	@echo "warning: $(NVCC) not found: $(SCENARIO_BINDIR)/static_cudart not built" >&2
endif
ifeq ($(wildcard $(CUDA_NCCL_LIBDIR)/libnccl.so.2),)
	@echo "warning: $(CUDA_NCCL_LIBDIR)/libnccl.so.2 not found: $(SCENARIO_BINDIR)/realnccl" \
		"not built" >&2
endif
ifeq ($(wildcard $(DAWN_LIB)),)
	@echo "warning: $(DAWN_LIB) not found (scripts/install-deps.sh fetches it):" \
		"WebGPU scenarios not built" >&2
endif

standins-check: standins
	$(STANDIN_SELFTEST)
	GPULEAK_REAL_LIBCUDA=$(GPULEAK_REAL_LIBCUDA) tests/scenarios/smoke.sh $(SCENARIO_BINDIR)

$(STANDIN_LIBDIR) $(SCENARIO_BINDIR) $(RELOC_LIBDIR) $(NOSDT_LIBDIR) $(NOFP_LIBDIR) \
		$(NOBASE_LIBDIR):
	mkdir -p $@

# The driver stand-in is unversioned like the real libcuda.so.1; the map only hides
# everything it does not list. --no-undefined-version: a listed name nobody defines fails.
$(STANDIN_LIBCUDA): tests/standin/cuda.c tests/standin/libcuda.map $(TESTS_BUILD_MK) \
		| $(STANDIN_LIBDIR)
	$(TESTS_CC) $(STANDIN_CFLAGS) $(STANDIN_ENTRY_CFLAGS) $(STANDIN_LDFLAGS) -o $@ $< \
		-Wl,-soname,libcuda.so.1 -Wl,--version-script=tests/standin/libcuda.map

# No link-time dependency on the driver: it is dlopen()ed, found through DT_RPATH $ORIGIN
# (before LD_LIBRARY_PATH and the loader cache, where a real libcuda.so.1 may be).
$(STANDIN_LIBCUDART): tests/standin/cudart.c tests/standin/libcudart.map $(TESTS_BUILD_MK) \
		| $(STANDIN_LIBDIR)
	$(TESTS_CC) $(STANDIN_CFLAGS) $(STANDIN_ENTRY_CFLAGS) $(STANDIN_LDFLAGS) -o $@ $< \
		-Wl,-soname,libcudart.so.13 -Wl,--version-script=tests/standin/libcudart.map \
		-Wl,--disable-new-dtags -Wl,-rpath,'$$ORIGIN' -ldl

# NCCL has no link-time dependency on CUDA either: it dlopen()s libcuda.so.1 the same way.
# nccl.h is a prerequisite so a toolkit without NCCL fails here, by name. The map exports each
# name twice, pncclX and its weak alias ncclX.
$(STANDIN_LIBNCCL): tests/standin/nccl.c tests/standin/libnccl.map $(CUDA_INCLUDE)/nccl.h \
		$(TESTS_BUILD_MK) | $(STANDIN_LIBDIR)
	$(TESTS_CC) $(STANDIN_CFLAGS) $(STANDIN_ENTRY_CFLAGS) $(STANDIN_LDFLAGS) -o $@ $< \
		-Wl,-soname,libnccl.so.2 -Wl,--version-script=tests/standin/libnccl.map \
		-Wl,--disable-new-dtags -Wl,-rpath,'$$ORIGIN' -ldl

# The profiler hook's entry pushes %rbp, as the real one's (push %r14) is emulated too.
$(STANDIN_LIBC10): tests/standin/c10.c tests/standin/c10.h $(TESTS_BUILD_MK) | $(STANDIN_LIBDIR)
	$(TESTS_CC) $(STANDIN_CFLAGS) $(STANDIN_ENTRY_CFLAGS) $(STANDIN_LDFLAGS) \
		-fvisibility=hidden -o $@ $< -Wl,-soname,libc10.so

# <sys/sdt.h> (systemtap-sdt-dev) makes the probes' notes; stripping keeps them. The runtime,
# driver and libc10.so by file name, found next to it at run time (DT_RPATH $ORIGIN; the
# copy without probes looks in ../lib).
C10_CUDA_LINK = -L$(STANDIN_LIBDIR) -l:libc10.so -l:libcudart.so.13 -l:libcuda.so.1 \
	-Wl,-soname,libc10_cuda.so -Wl,--disable-new-dtags
$(STANDIN_LIBC10_CUDA): tests/standin/c10_cuda.c tests/standin/c10_cuda.h tests/standin/c10.h \
		$(STANDIN_LIBC10) $(STANDIN_LIBS) $(TESTS_BUILD_MK) | $(STANDIN_LIBDIR)
	$(TESTS_CC) $(STANDIN_CFLAGS) $(STANDIN_ENTRY_CFLAGS) $(STANDIN_LDFLAGS) \
		-fvisibility=hidden -o $@ $< $(C10_CUDA_LINK) -Wl,-rpath,'$$ORIGIN'

$(NOSDT_LIBC10_CUDA): tests/standin/c10_cuda.c tests/standin/c10_cuda.h tests/standin/c10.h \
		$(STANDIN_LIBC10) $(STANDIN_LIBS) $(TESTS_BUILD_MK) | $(NOSDT_LIBDIR)
	$(TESTS_CC) $(STANDIN_CFLAGS) $(STANDIN_ENTRY_CFLAGS) $(STANDIN_LDFLAGS) -DSTANDIN_NO_SDT \
		-fvisibility=hidden -o $@ $< $(C10_CUDA_LINK) -Wl,-rpath,'$$ORIGIN/../lib'

$(NOBASE_LIBC10_CUDA): $(STANDIN_LIBC10_CUDA) tests/standin/sdt_nobase.py $(TESTS_BUILD_MK) \
		| $(NOBASE_LIBDIR)
	$(PYTHON) tests/standin/sdt_nobase.py $< $@ >/dev/null
	chmod +x $@

# With its probes, -O2 without frame pointers (the later flag wins) and with .eh_frame.
$(NOFP_LIBC10_CUDA): tests/standin/c10_cuda.c tests/standin/c10_cuda.h tests/standin/c10.h \
		$(STANDIN_LIBC10) $(STANDIN_LIBS) $(TESTS_BUILD_MK) | $(NOFP_LIBDIR)
	$(TESTS_CC) $(STANDIN_CFLAGS) $(STANDIN_LDFLAGS) -fomit-frame-pointer -fvisibility=hidden \
		-o $@ $< \
		$(C10_CUDA_LINK) -Wl,-rpath,'$$ORIGIN/../lib'

# One program, four times: over the allocator with its probes, over the one without, over the
# one without frame pointers, and over the one whose notes record no .stapsdt.base.
$(SCENARIO_BINDIR)/torch_decode: tests/scenarios/torch_decode.c tests/scenarios/scenario.h \
		$(STANDIN_LIBC10_CUDA) $(TESTS_BUILD_MK) | $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -Itests/standin -o $@ $< $(STANDIN_LIBC10_CUDA) \
		$(STANDIN_LIBC10) $(STANDIN_LIBCUDART) $(SCENARIO_RPATH)

$(SCENARIO_BINDIR)/torch_decode_nofp: tests/scenarios/torch_decode.c \
		tests/scenarios/scenario.h $(NOFP_LIBC10_CUDA) $(TESTS_BUILD_MK) | $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -Itests/standin -o $@ $< $(NOFP_LIBC10_CUDA) \
		$(STANDIN_LIBC10) $(STANDIN_LIBCUDART) -Wl,--disable-new-dtags \
		-Wl,-rpath,'$$ORIGIN/../lib-nofp:$$ORIGIN/../lib'

$(SCENARIO_BINDIR)/torch_decode_nosdt: tests/scenarios/torch_decode.c \
		tests/scenarios/scenario.h $(NOSDT_LIBC10_CUDA) $(TESTS_BUILD_MK) | $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -Itests/standin -o $@ $< $(NOSDT_LIBC10_CUDA) \
		$(STANDIN_LIBC10) $(STANDIN_LIBCUDART) -Wl,--disable-new-dtags \
		-Wl,-rpath,'$$ORIGIN/../lib-nosdt:$$ORIGIN/../lib'

$(SCENARIO_BINDIR)/torch_decode_nobase: tests/scenarios/torch_decode.c \
		tests/scenarios/scenario.h $(NOBASE_LIBC10_CUDA) $(TESTS_BUILD_MK) | $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -Itests/standin -o $@ $< $(NOBASE_LIBC10_CUDA) \
		$(STANDIN_LIBC10) $(STANDIN_LIBCUDART) -Wl,--disable-new-dtags \
		-Wl,-rpath,'$$ORIGIN/../lib-nobase:$$ORIGIN/../lib'

# No PyTorch at link time: it dlopen()s the stand-in, which must exist when it runs.
$(SCENARIO_BINDIR)/torch_dlopen: tests/scenarios/torch_dlopen.c tests/scenarios/scenario.h \
		$(TESTS_BUILD_MK) | $(STANDIN_LIBC10_CUDA) $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -Itests/standin -o $@ $< $(SCENARIO_RPATH) -ldl

# Assembly entries (reloc.S) whose first instructions the kernel single-steps; stripped like
# the others, their symbol sizes stay in .dynsym.
$(RELOC_LIBCUDART): tests/standin/reloc.S tests/standin/reloc_impl.c \
		tests/standin/libcudart_reloc.map $(TESTS_BUILD_MK) | $(RELOC_LIBDIR)
	$(TESTS_CC) $(STANDIN_CFLAGS) $(STANDIN_LDFLAGS) -o $@ tests/standin/reloc.S \
		tests/standin/reloc_impl.c -Wl,-soname,libcudart.so.13 \
		-Wl,--version-script=tests/standin/libcudart_reloc.map

$(SCENARIO_BINDIR)/reloc: tests/scenarios/reloc.c tests/scenarios/scenario.h $(RELOC_LIBCUDART) \
		$(TESTS_BUILD_MK) | $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -o $@ $< $(RELOC_LIBCUDART) -Wl,--disable-new-dtags \
		-Wl,-rpath,'$$ORIGIN/../lib-reloc'

# Naming the library file records its soname as NEEDED, so the real libcudart.so.13 (in the
# loader cache) can never be picked up at link time.
$(addprefix $(SCENARIO_BINDIR)/,$(SCENARIOS_CUDART)): $(SCENARIO_BINDIR)/%: \
		tests/scenarios/%.c tests/scenarios/scenario.h $(STANDIN_LIBS) $(TESTS_BUILD_MK) \
		| $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -o $@ $< $(STANDIN_LIBCUDART) $(SCENARIO_RPATH) -pthread

# diff-new/ is built with the change: -DDIFFAPP_NEW. One folder deeper: ../../lib.
$(DIFFAPP_BUILDS): $(SCENARIO_BINDIR)/diff-%/diffapp: tests/scenarios/diffapp.c \
		tests/scenarios/scenario.h $(STANDIN_LIBS) $(TESTS_BUILD_MK)
	mkdir -p $(@D)
	$(TESTS_CC) $(SCENARIO_CFLAGS) $(if $(filter new,$*),-DDIFFAPP_NEW) -o $@ $< \
		$(STANDIN_LIBCUDART) -Wl,--disable-new-dtags -Wl,-rpath,'$$ORIGIN/../../lib' -pthread

# The driver API directly, no runtime.
$(addprefix $(SCENARIO_BINDIR)/,$(SCENARIOS_DRIVER)): $(SCENARIO_BINDIR)/%: \
		tests/scenarios/%.c tests/scenarios/scenario.h $(STANDIN_LIBCUDA) $(TESTS_BUILD_MK) \
		| $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -o $@ $< $(STANDIN_LIBCUDA) $(SCENARIO_RPATH) -pthread

# The stand-in NCCL and runtime (user buffers, cudaSetDevice); both dlopen() the stand-in
# driver, so it must exist when it runs.
$(SCENARIO_BINDIR)/nccl_comm: tests/scenarios/nccl_comm.c tests/scenarios/scenario.h \
		$(STANDIN_LIBNCCL) $(STANDIN_LIBS) $(TESTS_BUILD_MK) | $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -o $@ $< $(STANDIN_LIBNCCL) $(STANDIN_LIBCUDART) \
		$(SCENARIO_RPATH) -pthread

$(SCENARIO_BINDIR)/nccl_owners: tests/scenarios/nccl_owners.c tests/scenarios/scenario.h \
		$(STANDIN_LIBNCCL) $(STANDIN_LIBS) $(TESTS_BUILD_MK) | $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -o $@ $< $(STANDIN_LIBNCCL) $(STANDIN_LIBCUDART) \
		$(SCENARIO_RPATH) -pthread

# The runtime and the driver, both by file name (their sonames as NEEDED).
$(addprefix $(SCENARIO_BINDIR)/,$(SCENARIOS_BOTH)): $(SCENARIO_BINDIR)/%: \
		tests/scenarios/%.c tests/scenarios/scenario.h $(STANDIN_LIBS) $(TESTS_BUILD_MK) \
		| $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -o $@ $< $(STANDIN_LIBS) $(SCENARIO_RPATH) -pthread

# NVIDIA's libnccl.so.2 through DT_RPATH, and nothing of ours: no $ORIGIN/../lib, or the
# real NCCL would dlopen() the stand-in driver.
$(SCENARIO_BINDIR)/realnccl: tests/scenarios/realnccl.c tests/scenarios/scenario.h \
		$(TESTS_BUILD_MK) | $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -o $@ $< $(CUDA_NCCL_LIBDIR)/libnccl.so.2 \
		-Wl,--disable-new-dtags -Wl,-rpath,$(CUDA_NCCL_LIBDIR)

# Nothing from CUDA at link time (cuda.h for the types only): it dlopen()s the file named by
# GPULEAK_REAL_LIBCUDA at run time.
$(SCENARIO_BINDIR)/realdriver: tests/scenarios/realdriver.c tests/scenarios/scenario.h \
		$(TESTS_BUILD_MK) | $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -o $@ $< -ldl

# No libpython at link time: it dlopen()s the one it is given (tests/test_python.py).
$(SCENARIO_BINDIR)/pyembed: tests/scenarios/pyembed.c tests/scenarios/scenario.h \
		$(TESTS_BUILD_MK) | $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -o $@ $< -ldl

# No libcudart at link time; the stand-ins must exist when it runs.
$(SCENARIO_BINDIR)/dlopen: tests/scenarios/dlopen.c tests/scenarios/scenario.h $(TESTS_BUILD_MK) \
		| $(STANDIN_LIBS) $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -o $@ $< $(SCENARIO_RPATH) -ldl

# NVIDIA's runtime, through DT_RPATH as above: LD_LIBRARY_PATH cannot swap the stand-in in.
# (It can still decide which libcuda.so.1 the real runtime dlopen()s: keep the stand-in
# lib/ off LD_LIBRARY_PATH, or the real runtime answers 36 instead of 35.)
$(SCENARIO_BINDIR)/realcudart: tests/scenarios/realcudart.c tests/scenarios/scenario.h \
		$(TESTS_BUILD_MK) | $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -o $@ $< $(CUDA_LIB64)/libcudart.so.13 \
		-Wl,--disable-new-dtags -Wl,-rpath,$(CUDA_LIB64)

# nvcc's default static cudart: cudaMalloc is a LOCAL symbol of the executable itself.
$(SCENARIO_BINDIR)/static_cudart: tests/scenarios/static_cudart.cu tests/scenarios/scenario.h \
		$(TESTS_BUILD_MK) | $(SCENARIO_BINDIR)
	$(NVCC) -O1 -g -Xcompiler -fno-omit-frame-pointer,-Wall,-Wextra,-Werror -o $@ $<

# The `stacks` scenario and its two libraries: libstackhelper.so stripped to .dynsym like a
# vendor library, libnofp.so without frame pointers like most distribution libraries. The
# helper's symbols and DWARF are kept apart in libstackhelper.so.debug, as a distribution's
# -dbgsym package keeps them (objcopy --only-keep-debug, the same build-id).
STACKS_HELPER := $(STANDIN_LIBDIR)/libstackhelper.so
STACKS_NOFP := $(STANDIN_LIBDIR)/libnofp.so

$(STACKS_HELPER): tests/scenarios/stacks_lib.c $(TESTS_BUILD_MK) | $(STANDIN_LIBDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -fPIC -shared -fvisibility=hidden -Wl,--build-id \
		-Wl,-soname,libstackhelper.so -o $@.full $<
	objcopy --only-keep-debug $@.full $@.debug
	objcopy --strip-all $@.full $@
	rm -f $@.full

$(STACKS_NOFP): tests/scenarios/stacks_nofp.c $(TESTS_BUILD_MK) | $(STANDIN_LIBDIR)
	$(TESTS_CC) -std=gnu11 -O2 -fomit-frame-pointer $(TESTS_WARN) -fPIC -shared \
		-fvisibility=hidden -Wl,-soname,libnofp.so -o $@ $<

$(SCENARIO_BINDIR)/stacks: tests/scenarios/stacks.c tests/scenarios/scenario.h $(STANDIN_LIBS) \
		$(STACKS_HELPER) $(STACKS_NOFP) $(TESTS_BUILD_MK) | $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -o $@ $< $(STANDIN_LIBCUDART) $(STACKS_HELPER) \
		$(STACKS_NOFP) $(SCENARIO_RPATH) -pthread

# Without frame pointers, as distributions build: what --unwind dwarf is for.
$(SCENARIO_BINDIR)/unwind_nofp: tests/scenarios/unwind_nofp.c tests/scenarios/scenario.h \
		$(STANDIN_LIBS) $(TESTS_BUILD_MK) | $(SCENARIO_BINDIR)
	$(TESTS_CC) -std=gnu11 -O2 -g -fomit-frame-pointer $(TESTS_WARN) -I$(CUDA_INCLUDE) -o $@ $< \
		$(STANDIN_LIBCUDART) $(SCENARIO_RPATH)

# A PyTorch-like library built as distributions build them (-O2 -fomit-frame-pointer) for
# the `torchlike` scenario: stacks through code where %rbp is no frame pointer.
TORCHLIKE_LIB := $(STANDIN_LIBDIR)/libtorchlike.so

$(TORCHLIKE_LIB): tests/scenarios/torchlike_lib.c $(STANDIN_LIBCUDART) $(TESTS_BUILD_MK) \
		| $(STANDIN_LIBDIR)
	$(TESTS_CC) -std=gnu11 -O2 -fomit-frame-pointer $(TESTS_WARN) -I$(CUDA_INCLUDE) -fPIC \
		-shared -fvisibility=hidden -Wl,-soname,libtorchlike.so -o $@ $< \
		$(STANDIN_LIBCUDART) $(SCENARIO_RPATH)

$(SCENARIO_BINDIR)/torchlike: tests/scenarios/torchlike.c tests/scenarios/scenario.h \
		$(TORCHLIKE_LIB) $(TESTS_BUILD_MK) | $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -o $@ $< $(TORCHLIKE_LIB) $(SCENARIO_RPATH) -pthread

# Checks the stand-ins' own semantics; links the driver directly to reach it without cudart.
$(STANDIN_SELFTEST): tests/standin/selftest.c $(STANDIN_LIBS) $(TESTS_BUILD_MK) \
		| $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -o $@ $< $(STANDIN_LIBS) $(SCENARIO_RPATH) -pthread

# Linked by name with the cache folder as DT_RPATH: the library has no SONAME, so NEEDED is
# the bare file name and the run-time search finds the same file the link used.
$(WGPU_SCENARIOS): $(SCENARIO_BINDIR)/%: tests/scenarios/%.c tests/scenarios/scenario.h \
		tests/scenarios/webgpu_min.h tests/scenarios/wgpu_setup.h $(TESTS_BUILD_MK) \
		| $(SCENARIO_BINDIR)
	$(TESTS_CC) $(SCENARIO_CFLAGS) -o $@ $< -L$(DAWN_LIBDIR) -l:libwebgpu_wrapper.so \
		-Wl,--disable-new-dtags -Wl,-rpath,$(DAWN_LIBDIR)

$(WGPU_DIFF_BUILDS): $(SCENARIO_BINDIR)/diff-%/wgpu_diff: tests/scenarios/wgpu_diff.c \
		tests/scenarios/scenario.h tests/scenarios/webgpu_min.h tests/scenarios/wgpu_setup.h \
		$(TESTS_BUILD_MK)
	mkdir -p $(@D)
	$(TESTS_CC) $(SCENARIO_CFLAGS) $(if $(filter new,$*),-DWGPU_DIFF_NEW) -o $@ $< \
		-L$(DAWN_LIBDIR) -l:libwebgpu_wrapper.so -Wl,--disable-new-dtags \
		-Wl,-rpath,$(DAWN_LIBDIR)

$(WGPU_UNKNOWN_LIB): tests/standin/wgpu_unknown.c $(TESTS_BUILD_MK) | $(STANDIN_LIBDIR)
	$(TESTS_CC) $(STANDIN_CFLAGS) -shared -o $@ $<
