#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The check of issue 16 on a machine with a GPU and a PyTorch wheel (<= 5 min): are
# PyTorch's USDT probes in the wheel's libc10_cuda.so, and what does gpuleak report on a
# short torch loop that keeps one tensor per step and frees another, with the caching
# allocator's default segments and with expandable segments. Run as root from the
# repository root after `make`; PYTHON names an interpreter that imports torch (default
# python3). Everything it prints goes to $OUT (default ./gpu-check-pytorch) too.
#
# Not run yet: no GPU machine was lent to the task that wrote it (docs/pytorch.md).
set -u
PYTHON=${PYTHON:-python3}
OUT=${OUT:-gpu-check-pytorch}
GPULEAK=${GPULEAK:-./gpuleak}
mkdir -p "$OUT" || exit 1

say() { printf '== %s\n' "$*" | tee -a "$OUT/log"; }

say "torch and its libraries"
lib=$(timeout 60 "$PYTHON" -c 'import os, torch; print(os.path.dirname(torch.__file__) + "/lib")') ||
	{ say "no torch under $PYTHON"; exit 1; }
timeout 60 "$PYTHON" -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())' 2>&1 |
	tee -a "$OUT/log"
say "readelf -n libc10_cuda.so (pytorch:malloc / pytorch:free notes?)"
readelf -n "$lib/libc10_cuda.so" 2>&1 | grep -A3 stapsdt | tee "$OUT/notes.txt" | head -20 | tee -a "$OUT/log"
readelf -S "$lib/libc10_cuda.so" | grep -E 'stapsdt|probes' | tee -a "$OUT/log"
nm -D "$lib/libc10.so" | grep reportMemoryUsage | tee -a "$OUT/log"
say "gpuleak probes on libc10_cuda.so"
timeout 60 "$GPULEAK" probes --lib "$lib/libc10_cuda.so" 2>&1 | grep -i pytorch | tee -a "$OUT/log"

# 20 steps: keep a 1 MiB tensor (the leak, in keep_one), make and drop an 8 MiB one.
cat > "$OUT/loop.py" <<'EOF'
import torch
keep = []
def keep_one():
    keep.append(torch.empty(1 << 18, device="cuda"))    # 1 MiB: kept, a leak
def scratch():
    t = torch.empty(1 << 21, device="cuda")              # 8 MiB: freed into the cache
    del t
weights = torch.empty(1 << 24, device="cuda")           # 64 MiB before the first step
torch.cuda.synchronize()
for _ in range(20):
    keep_one()
    scratch()
    torch.cuda.synchronize()
s = torch.cuda.memory_stats()
print("torch allocated", s["allocated_bytes.all.current"], "requested",
      s["requested_bytes.all.current"], "reserved", s["reserved_bytes.all.current"])
EOF

for conf in default expandable_segments:True; do
	say "gpuleak run --step sync, PYTORCH_CUDA_ALLOC_CONF=$conf"
	if [ "$conf" = default ]; then unset PYTORCH_CUDA_ALLOC_CONF
	else PYTORCH_CUDA_ALLOC_CONF=$conf; export PYTORCH_CUDA_ALLOC_CONF; fi
	tag=$(echo "$conf" | tr -c 'a-z\n' _)
	timeout 120 "$GPULEAK" run --step sync --json "$OUT/$tag.ndjson" -- "$PYTHON" "$OUT/loop.py" \
		>"$OUT/$tag.txt" 2>"$OUT/$tag.err"
	echo "exit $?" | tee -a "$OUT/log"
	grep -E 'torch allocated|PyTorch caching|^ +[0-9]+ +[0-9.]+ [KMG]iB|pytorch:malloc|cache, not a leak' \
		"$OUT/$tag.txt" | head -20 | tee -a "$OUT/log"
	tail -3 "$OUT/$tag.err" | tee -a "$OUT/log"
done
say "done: what to put in the note is in $OUT/log"
