# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `make bench`: what tracing costs (bench/bench.py). Included by the top-level Makefile after
# tests/build.mk, whose compiler settings the targets share. Everything lands in .output/bench:
#   lib/libcudart.so.13   the benchmark's runtime: cudaMalloc + cudaFree, nothing else
#   bin/pairloop          the tight-loop target (allocate/free pairs through that library)
#   bin/pairloop_nofp     the same built without frame pointers (--unwind auto copies there)
#   bin/torchloop         the same with PyTorch block pairs (the tests' stand-in allocator)
#   bin/realtarget        maps NVIDIA's libcudart.so.13 and libnccl.so.2 (attach, placement)
#   glbench               empty-program floors (per call; attach and detach), consumer,
#                         memory and symbols benchmarks (links gpuleak's objects)
#   lib/libmanysyms.so    100000 functions: the ELF symbol table of glbench symbols

BENCH_OUT := $(OUTPUT)/bench
BENCH_LIB := $(BENCH_OUT)/lib/libcudart.so.13
BENCH_PAIRLOOP := $(BENCH_OUT)/bin/pairloop
BENCH_PAIRLOOP_NOFP := $(BENCH_OUT)/bin/pairloop_nofp
BENCH_TORCHLOOP := $(BENCH_OUT)/bin/torchloop
BENCH_REALTARGET := $(BENCH_OUT)/bin/realtarget
GLBENCH := $(BENCH_OUT)/glbench
BENCH_SKEL := $(BENCH_OUT)/bench.skel.h
BENCH_MANYSYMS := $(BENCH_OUT)/lib/libmanysyms.so
BENCH_ALL := $(BENCH_LIB) $(BENCH_PAIRLOOP) $(BENCH_PAIRLOOP_NOFP) $(BENCH_TORCHLOOP) $(GLBENCH) $(BENCH_MANYSYMS)
ifneq ($(wildcard $(CUDA_NCCL_LIBDIR)/libnccl.so.2),)
BENCH_ALL += $(BENCH_REALTARGET)
endif

# Built like the stand-ins (tests/build.mk): entries start with push %rbp, .dynsym only.
$(BENCH_LIB): bench/libcudart_bench.c bench/libcudart_bench.map bench/bench.mk
	@mkdir -p $(@D)
	$(call msg,CC-SO,$@)
	$(Q)$(TESTS_CC) $(STANDIN_CFLAGS) $(STANDIN_ENTRY_CFLAGS) $(STANDIN_LDFLAGS) -o $@ $< \
		-Wl,-soname,libcudart.so.13 -Wl,--version-script=bench/libcudart_bench.map

$(BENCH_MANYSYMS): bench/manysyms.S bench/bench.mk
	@mkdir -p $(@D)
	$(call msg,CC-SO,$@)
	$(Q)$(TESTS_CC) -shared -Wl,--build-id -o $@ $<

$(BENCH_PAIRLOOP): bench/pairloop.c $(BENCH_LIB) bench/bench.mk
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(TESTS_CC) $(SCENARIO_CFLAGS) -O2 -o $@ $< $(BENCH_LIB) \
		-Wl,--disable-new-dtags -Wl,-rpath,'$$ORIGIN/../lib' -ldl

# The same loop built without frame pointers (the later flag wins): what --unwind auto copies.
$(BENCH_PAIRLOOP_NOFP): bench/pairloop.c $(BENCH_LIB) bench/bench.mk
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(TESTS_CC) $(SCENARIO_CFLAGS) -O2 -fomit-frame-pointer -o $@ $< $(BENCH_LIB) \
		-Wl,--disable-new-dtags -Wl,-rpath,'$$ORIGIN/../lib' -ldl

# PyTorch block pairs through the tests' stand-in allocator (dlopen()ed by path at run time).
$(BENCH_TORCHLOOP): bench/pairloop.c bench/bench.mk
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(TESTS_CC) $(SCENARIO_CFLAGS) -O2 -DPAIRLOOP_TORCH -o $@ $< -ldl

$(BENCH_REALTARGET): bench/realtarget.c bench/bench.mk
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(TESTS_CC) $(SCENARIO_CFLAGS) -o $@ $< $(CUDA_LIB64)/libcudart.so.13 \
		$(CUDA_NCCL_LIBDIR)/libnccl.so.2 -Wl,--disable-new-dtags \
		-Wl,-rpath,$(CUDA_LIB64):$(CUDA_NCCL_LIBDIR)

$(BENCH_OUT)/bench.bpf.o: bench/bench.bpf.c bench/bench.h bpf/gpuleak.h $(VMLINUX) $(LIBBPF_A)
	@mkdir -p $(@D)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) $(WARN) -Ivmlinux/$(ARCH) -Ibpf \
		$(LIBBPF_INC) -Ibench -idirafter $(BPF_MULTIARCH) -c $< -o $@

$(BENCH_SKEL): $(BENCH_OUT)/bench.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name bench_bpf > $@.tmp && mv $@.tmp $@

$(GLBENCH): bench/glbench.c bench/bench.h $(BENCH_SKEL) $(LIB_OBJ) $(LIBBPF_A)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Ibench -I$(BENCH_OUT) $< $(LIB_OBJ) $(LDLIBS) -o $@

# Not part of `make test`. BENCH_ARGS passes options to bench/bench.py (--quick: short runs).
bench: deps
	@$(MAKE) --no-print-directory gpuleak $(BENCH_ALL) $(CAPTURE_GEN) standins
	@$(PYTHON) bench/bench.py $(BENCH_ARGS)
