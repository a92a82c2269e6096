# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
#   make          build ./gpuleak (generated files under .output/)
#   make demo     install dependencies, build, run the built-in example under gpuleak
#   make test     install dependencies, build (+ ASan/UBSan build), run the test suite
#   make bench    the benchmark (not part of make test)
#   make bench-capture   capture size and `gpuleak report` speed (bench/capture_bench.sh)

OUTPUT := .output
CLANG ?= clang
CC ?= cc
BPFTOOL ?= bpftool
VERSION := 0.1.0

ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
VMLINUX := vmlinux/$(ARCH)/vmlinux.h

# `make V=1` shows the commands.
ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

WARN := -Wall -Wextra -Werror
CFLAGS ?= -O2 -g
CFLAGS += $(WARN) -std=gnu11 -D_GNU_SOURCE -DGPULEAK_VERSION='"$(VERSION)"' \
	  -Ibpf -Iuser -I$(OUTPUT) -fno-omit-frame-pointer
LDLIBS := -lbpf -lelf -lz -lm
SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined

BPF_SRC := bpf/gpuleak.bpf.c
BPF_OBJ := $(OUTPUT)/gpuleak.bpf.o
SKEL := $(OUTPUT)/gpuleak.skel.h
USER_SRC := $(wildcard user/*.c)
USER_HDR := $(wildcard user/*.h) bpf/gpuleak.h
USER_OBJ := $(patsubst user/%.c,$(OUTPUT)/obj/%.o,$(USER_SRC))
ASAN_OBJ := $(patsubst user/%.c,$(OUTPUT)/asan/%.o,$(USER_SRC))

.PHONY: all deps test demo bench bench-capture clean standins check-deps
all: gpuleak

deps:
	@scripts/install-deps.sh

$(OUTPUT) $(OUTPUT)/obj $(OUTPUT)/asan:
	@mkdir -p $@

$(BPF_OBJ): $(BPF_SRC) bpf/gpuleak.h bpf/gpuleak.bpf.h $(VMLINUX) | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) $(WARN) \
		-Ivmlinux/$(ARCH) -Ibpf -c $(BPF_SRC) -o $@

$(SKEL): $(BPF_OBJ)
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name gpuleak_bpf > $@.tmp && mv $@.tmp $@

$(OUTPUT)/obj/%.o: user/%.c $(USER_HDR) $(SKEL) | $(OUTPUT)/obj
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(OUTPUT)/asan/%.o: user/%.c $(USER_HDR) $(SKEL) | $(OUTPUT)/asan
	$(call msg,CC-ASAN,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN) -c $< -o $@

gpuleak: $(USER_OBJ)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

# The build the tests run: same code under AddressSanitizer and UBSan.
$(OUTPUT)/gpuleak-asan: $(ASAN_OBJ)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN) $^ $(LDLIBS) -o $@

-include tests/build.mk

test: deps
	@$(MAKE) --no-print-directory gpuleak $(OUTPUT)/gpuleak-asan standins unit \
		$(CAPTURE_GEN)
	@python3 tests/run_tests.py --gpuleak $(OUTPUT)/gpuleak-asan

demo: deps
	@$(MAKE) --no-print-directory gpuleak standins
	@scripts/demo.sh

clean:
	rm -rf $(OUTPUT) gpuleak

# C unit tests: each links the ASan/UBSan objects it needs (everything but main).
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/unit/%,$(UNIT_SRC))
LIB_ASAN_OBJ := $(filter-out $(OUTPUT)/asan/gpuleak.o,$(ASAN_OBJ))

$(OUTPUT)/tests/unit/%: tests/unit/%.c tests/unit/check.h $(LIB_ASAN_OBJ)
	@mkdir -p $(@D)
	$(call msg,CC-UNIT,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN) $< $(LIB_ASAN_OBJ) $(LDLIBS) -o $@

unit: $(UNIT_BIN)
.PHONY: unit

# Capture benchmark: a generator that writes realistic captures through the real writer.
LIB_OBJ := $(filter-out $(OUTPUT)/obj/gpuleak.o,$(USER_OBJ))
CAPTURE_GEN := $(OUTPUT)/bench/capture_gen

$(CAPTURE_GEN): bench/capture_gen.c $(LIB_OBJ)
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $< $(LIB_OBJ) $(LDLIBS) -o $@

# Callable from `make bench`; needs root for the recorded scenarios (skipped without).
bench-capture: gpuleak $(CAPTURE_GEN) standins
	@bench/capture_bench.sh
