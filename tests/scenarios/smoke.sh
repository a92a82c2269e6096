#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Runs every scenario once without a tracer, plain and with SCENARIO_SYNC=1, and checks exit
# status and stdout: the end-to-end tests build on exactly this behaviour.
# Usage: smoke.sh BINDIR
# realnccl runs when it was built (NVIDIA's libnccl.so.2 was there); realdriver when
# GPULEAK_REAL_LIBCUDA names a real libcuda.so.1 (scripts/install-deps.sh), as user nobody.
set -u

bindir=${1:?usage: smoke.sh BINDIR}
fails=0
as=() # run the scenario through this, e.g. setpriv
errf=$(mktemp)
trap 'rm -f "$errf"' EXIT

fail() {
	echo "smoke: $*" >&2
	fails=$((fails + 1))
}

# run NAME WANT_RC WANT_STDOUT INPUT [ENV=VAL ...] -- ARGS...
run() {
	local name=$1 want_rc=$2 want_out=$3 input=$4 out rc
	local -a envs=()

	shift 4
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		envs+=("$1")
		shift
	done
	shift
	out=$(printf '%b' "$input" | "${as[@]}" env "${envs[@]}" "$bindir/$name" "$@" 2>"$errf")
	rc=$?
	# "ready <pid>": the pid varies.
	out=$(printf '%s' "$out" | sed 's/^ready [0-9][0-9]*$/ready PID/')
	if [ "$rc" != "$want_rc" ]; then
		fail "$name $*: exit $rc, want $want_rc; stderr: $(cat "$errf")"
	elif [ "$out" != "$(printf '%b' "$want_out")" ]; then
		fail "$name $*: stdout '$out', want '$want_out'"
	fi
}

vmm_modes="clean leak_handle release_while_mapped release_then_unmap leak_range double_map
	   double_map_live"
nccl_modes="clean leak abort all split register memalloc config window threads group errors
	    memfree hoststeps"
scenarios=("basic 5 2 4096" "leak3" "apis" "fail" "prealloc 3" "threads 10" "loop 3 4096"
	   "dlopen" "realcudart" "driver_alloc" "runtime_over_driver" "reloc 3 4096"
	   "shutdown 4 4096 free" "shutdown 4 4096 reset" "shutdown 4 4096 exit 2" "torchlike 3")
for m in $vmm_modes; do scenarios+=("vmm $m"); done
for m in $nccl_modes; do scenarios+=("nccl_comm $m"); done
[ -x "$bindir/realnccl" ] && scenarios+=("realnccl")
for s in "${scenarios[@]}"; do
	# shellcheck disable=SC2086
	set -- $s
	if [ "$1" = dlopen ]; then
		run "$1" 0 'loaded\ndone' '' -- "${@:2}"
		run "$1" 0 'ready PID\nloaded\ndone' 'go\nloaded\nbye\n' SCENARIO_SYNC=1 -- "${@:2}"
	else
		run "$1" 0 'done' '' -- "${@:2}"
		run "$1" 0 'ready PID\ndone' 'go\nbye\n' SCENARIO_SYNC=1 -- "${@:2}"
	fi
done
if [ -x "$bindir/static_cudart" ]; then
	run static_cudart 0 'done' '' --
	run static_cudart 0 'ready PID\ndone' 'go\nbye\n' SCENARIO_SYNC=1 --
fi

# WebGPU on real Dawn, when install-deps fetched it (Null backend).
if [ -x "$bindir/wgpu" ]; then
	for s in "basic 5 2 1 4096" "addref 4096" "inflight 4096 wait" "inflight 4096 nowait" \
		 "devices 4096" "labels 4096" "textures" "errors 4096" "inflight 4096 spontaneous"; do
		# shellcheck disable=SC2086
		set -- $s
		want='done'
		[ "$s" = "inflight 4096 spontaneous" ] &&
			want='callback inside wgpuQueueOnSubmittedWorkDone\ndone'
		run wgpu 0 "$want" '' -- "$@"
		run wgpu 0 "ready PID\n$want" 'go\nbye\n' SCENARIO_SYNC=1 -- "$@"
	done
	run wgpu_decode 0 'done' '' -- 3
	run wgpu_decode 0 'ready PID\ndone' 'go\nbye\n' SCENARIO_SYNC=1 -- 3
	for e in destroy free exit; do
		run wgpu_shutdown 0 'done' '' -- 3 1 "$e"
	done
	run wgpu 2 '' '' -- basic 1 2 0 4096					# usage: K + R > N
fi

# The knobs and the failure path: every unexpected CUDA result ends a scenario with status 1.
run basic 1 '' '' GPULEAK_STANDIN_DEVICES=0 -- 1 0 4096		# cudaErrorNoDevice
run basic 1 '' '' GPULEAK_STANDIN_DEVICE_MEM=1M -- 2 0 1M		# second one: out of memory
run basic 0 'done' '' GPULEAK_STANDIN_DEVICE_MEM=2M -- 2 1 1M
run apis 1 '' '' GPULEAK_STANDIN_DEVICES=1 --			# cudaSetDevice(1)
run fail 0 'done' '' GPULEAK_STANDIN_DEVICE_MEM=16K --
run loop 0 'done' '' GPULEAK_STANDIN_DEVICE_MEM=80M -- 2 4M
run loop 1 '' '' GPULEAK_STANDIN_DEVICE_MEM=64M -- 1 4096		# no room for activations
run basic 2 '' '' -- 1 2 4096						# usage: M > N
run realcudart 1 '' '' -- 0						# codes are 35 here, not 0
run vmm 2 '' '' -- bogus
run shutdown 2 '' '' -- 4 4096 bogus
run vmm 1 '' '' GPULEAK_STANDIN_DEVICE_MEM=1M -- leak_handle		# cuMemCreate: no room
run nccl_comm 1 '' '' GPULEAK_STANDIN_DEVICES=0 -- clean		# no device
run nccl_comm 1 '' '' GPULEAK_STANDIN_DEVICES=1 -- all			# device 1 missing
run nccl_comm 0 'done' '' GPULEAK_STANDIN_NCCL_INITALL_THREADS=1 -- all	# one thread per comm
run nccl_comm 0 'done' '' NCCL_CUMEM_HOST_ENABLE=1 -- clean		# host memory through cuMem
run nccl_comm 0 'done' '' NCCL_CUMEM_HOST_ENABLE=1 -- hoststeps
run nccl_comm 2 '' '' -- bogus
if [ -x "$bindir/realnccl" ]; then
	run realnccl 1 '' '' -- 0 0 0 1					# no GPU: 0 1 1 1
else
	echo "smoke: realnccl skipped: not built (no NVIDIA libnccl.so.2 at build time)"
fi

# NVIDIA's driver, as nobody: as root its cuInit creates /dev/nvidiactl.
real_libcuda=${GPULEAK_REAL_LIBCUDA:-}
run realdriver 2 '' '' GPULEAK_REAL_LIBCUDA= --				# no library named
if [ -z "$real_libcuda" ] || [ ! -e "$real_libcuda" ]; then
	echo "smoke: realdriver skipped: no real libcuda.so.1 at" \
	     "'${real_libcuda:-(GPULEAK_REAL_LIBCUDA unset)}' (scripts/install-deps.sh fetches it)"
else
	if [ "$(id -u)" -eq 0 ]; then
		run realdriver 2 '' '' GPULEAK_REAL_LIBCUDA="$real_libcuda" --	# refuses root
		as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	fi
	if ! "${as[@]}" test -x "$bindir/realdriver" -a -r "$real_libcuda"; then
		echo "smoke: realdriver skipped: user nobody cannot run $bindir/realdriver or read" \
		     "$real_libcuda"
	else
		run realdriver 0 'done' '' GPULEAK_REAL_LIBCUDA="$real_libcuda" --
		run realdriver 0 'ready PID\ndone' 'go\nbye\n' SCENARIO_SYNC=1 \
			GPULEAK_REAL_LIBCUDA="$real_libcuda" --
		run realdriver 1 '' '' GPULEAK_REAL_LIBCUDA="$real_libcuda" -- 0 0 0 0
	fi
	as=()
fi

if [ "$fails" -ne 0 ]; then
	echo "smoke: $fails failure(s)" >&2
	exit 1
fi
echo "smoke: ok"
