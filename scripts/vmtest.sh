#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Runs one command inside another kernel: boots one of Debian's kernels (fetched by
# scripts/install-deps.sh into /var/cache/gpuleak/kernels/SERIES) under qemu, with this
# machine's root shared read-only (9p) under an overlay whose writes go to a tmpfs, chroots
# into it and runs the command in the current directory, which the guest sees at the same path.
#
#   scripts/vmtest.sh [--timeout SECONDS] [--mem MIB] SERIES COMMAND...
#
# The command's output (stdout and stderr) comes back on the guest's second serial port and is
# printed as it comes; the script exits with the command's exit status. 77: the kernel is not
# there (install-deps could not fetch it: the caller reports a skip). 124: the guest did not
# finish in time (it is killed; the last console lines are printed). 125: the guest ended
# without saying the command's exit status (a panic, a failed mount: the console says which).
#
# No KVM here: qemu runs in TCG, single-threaded (multi-threaded TCG hit an early-boot oops in
# about 1 of 20 boots here), with qboot (fastest to boot) and 1 vCPU. The generic -amd64
# kernels have virtio, 9p and overlayfs as modules: the initramfs carries them decompressed
# and its init insmods them in dependency order (modules.dep). The initramfs is two cpio
# archives, the small per-run one first (5.10 and 6.1 reject an uncompressed archive that
# follows a compressed one: "invalid magic"; both are uncompressed here anyway).
set -euo pipefail

timeout_s=600
mem_mib=4096
while [ $# -gt 0 ]; do
	case $1 in
	--timeout) timeout_s=$2; shift 2 ;;
	--mem) mem_mib=$2; shift 2 ;;
	--) shift; break ;;
	-*) echo "vmtest: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
if [ $# -lt 2 ]; then
	echo "usage: scripts/vmtest.sh [--timeout SECONDS] [--mem MIB] SERIES COMMAND..." >&2
	exit 2
fi
series=$1
shift

kernels_dir=${GPULEAK_KERNELS_DIR:-/var/cache/gpuleak/kernels}
kdir=$kernels_dir/$series
if [ ! -f "$kdir/KVER" ]; then
	echo "vmtest: no Linux $series kernel in $kdir (scripts/install-deps.sh fetches it)" >&2
	exit 77
fi
for tool in qemu-system-x86_64 xz; do
	command -v "$tool" >/dev/null ||
		{ echo "vmtest: $tool is missing (scripts/install-deps.sh)" >&2; exit 77; }
done
busybox=/bin/busybox
# Static: the initramfs has no libc (ldd fails on a static executable).
if [ ! -x "$busybox" ] || ldd "$busybox" >/dev/null 2>&1; then
	echo "vmtest: no static busybox at $busybox (busybox-static)" >&2
	exit 77
fi
qboot=/usr/share/qemu/qboot.rom
kver=$(cat "$kdir/KVER")
vmlinuz=$kdir/root/boot/vmlinuz-$kver
moddir=$kdir/root/lib/modules/$kver

work=$(mktemp -d /tmp/gpuleak-vmtest.XXXXXX)
qpid=""
cleanup() {
	[ -n "$qpid" ] && kill -KILL "$qpid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the kernel's part of the initramfs: busybox and the modules ----
# Modules wanted, by name; each one's dependencies (the depends= of its .modinfo: the package
# has no modules.dep, depmod makes that at install) are loaded first. A module the kernel has
# built in (modules.builtin) needs nothing.
want_mods=(virtio_pci virtio_rng 9pnet_virtio 9p overlay)
base=$work/base.cpio
declare -A mod_file=()
declare -a order=()

# Reads where each module of the kernel is, by its name ('-' and '_' are one).
index_mods() {
	local f n
	while IFS= read -r f; do
		n=${f##*/}
		n=${n%%.ko*}
		mod_file[${n//-/_}]=$f
	done < <(find "$moddir/kernel" -name '*.ko*')
}

# Prints a module file's contents, decompressed.
mod_cat() {
	case $1 in
	*.ko.xz) xz -dc "$1" ;;
	*.ko.zst) zstd -qdc "$1" ;;
	*.ko.gz) gzip -dc "$1" ;;
	*) cat "$1" ;;
	esac
}

# Appends module $1 to $order after its dependencies, each once.
add_mod() {
	local n=${1//-/_} f dep deps
	for dep in "${order[@]}"; do [ "$dep" = "$n" ] && return 0; done
	f=${mod_file[$n]:-}
	if [ -z "$f" ]; then
		grep -qE "/${n//_/[-_]}\.ko" "$moddir/modules.builtin" 2>/dev/null ||
			echo "vmtest: Linux $series has no module $n (going on without)" >&2
		return 0
	fi
	deps=$(mod_cat "$f" | tr '\0' '\n' | sed -n 's/^depends=//p' | head -n 1)
	for dep in ${deps//,/ }; do
		add_mod "$dep"
	done
	order+=("$n")
}

make_base() {
	local root=$work/base m
	mkdir -p "$root/bin" "$root/mods"
	cp "$busybox" "$root/bin/busybox"
	index_mods
	for m in "${want_mods[@]}"; do
		add_mod "$m"
	done
	for m in "${order[@]}"; do
		mod_cat "${mod_file[$m]}" > "$root/mods/$m.ko"
		echo "$m.ko" >> "$root/mods/order"
	done
	cat > "$root/init" <<'INIT'
#!/bin/busybox sh
# The guest's init: modules, the host's root (9p, read-only) under an overlay with a tmpfs
# upper, the kernel's file systems inside it, then the command (/vmtest/run) in a chroot.
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /proc /sys /dev /host /rw /newroot
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
say() { echo "vmtest-init: $*" > /dev/ttyS0; }
fail() { say "$*"; echo "VMTEST-FAILED $*" > /dev/ttyS1; reboot -f; }
for m in $(cat /mods/order); do
	insmod "/mods/$m" || fail "insmod $m failed"
done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 hostroot /host ||
	fail "mounting the host's root (9p) failed"
mount -t tmpfs -o mode=0755 rw /rw
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/host,upperdir=/rw/upper,workdir=/rw/work /newroot ||
	fail "overlay over the host's root failed"
n=/newroot
mount -t proc proc $n/proc
mount -t sysfs sysfs $n/sys
mount -t devtmpfs devtmpfs $n/dev
mkdir -p $n/dev/pts $n/dev/shm
mount -t devpts devpts $n/dev/pts
mount -t tmpfs tmpfs $n/dev/shm
mount -t tmpfs tmpfs $n/run
mount -t tmpfs -o mode=1777 tmpfs $n/tmp
mount -t tracefs tracefs $n/sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs $n/sys/kernel/debug
mount -t tracefs tracefs $n/sys/kernel/debug/tracing 2>/dev/null
mount -t bpf bpf $n/sys/fs/bpf
mount -t cgroup2 cgroup2 $n/sys/fs/cgroup
ip link set lo up 2>/dev/null
hostname vmtest
stty -F /dev/ttyS1 raw -echo 2>/dev/null
cp /vmtest/run $n/run/vmtest-run
echo VMTEST-BEGIN > /dev/ttyS1
chroot $n /bin/sh /run/vmtest-run > /dev/ttyS1 2>&1 < /dev/null
echo "VMTEST-EXIT $?" > /dev/ttyS1
sync
reboot -f
INIT
	chmod +x "$root/init"
	(cd "$root" && find . | LC_ALL=C sort | "$busybox" cpio -o -H newc 2>/dev/null) > "$base"
}

# ---- the per-run part: the command, where it runs, what it is told ----
make_run() {
	local root=$work/run q="" a
	mkdir -p "$root/vmtest"
	for a in "$@"; do q+=" $(printf '%q' "$a")"; done
	{
		echo '# written by scripts/vmtest.sh'
		echo "cd $(printf '%q' "$PWD") || exit 125"
		echo 'export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
		echo 'export HOME=/root LANG=C.UTF-8 TERM=dumb'
		# Whatever runs inside must not start another guest (tests/test_vmtest.py).
		echo "export GPULEAK_IN_VMTEST=$(printf '%q' "$series")"
		echo "exec$q"
	} > "$root/vmtest/run"
	(cd "$root" && find . | LC_ALL=C sort | "$busybox" cpio -o -H newc 2>/dev/null) > "$work/run.cpio"
}

make_base
make_run "$@"
cat "$work/run.cpio" "$base" > "$work/initrd"

console=$work/console.log
out=$work/out.log
: > "$console"
: > "$out"
start=$(date +%s)
# panic=-1: a panic reboots at once, and -no-reboot makes that qemu's exit.
qemu-system-x86_64 -nodefaults -no-user-config -nographic -display none -no-reboot \
	-accel tcg,thread=single -cpu max -smp 1 -m "$mem_mib" -bios "$qboot" \
	-kernel "$vmlinuz" -initrd "$work/initrd" \
	-append "console=ttyS0 panic=-1 quiet loglevel=4 rdinit=/init random.trust_cpu=on" \
	-serial "file:$console" -serial "file:$out" -device virtio-rng-pci \
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
	-nic none > "$work/qemu.log" 2>&1 &
qpid=$!

# Print the command's output as it comes (from VMTEST-BEGIN on), until qemu exits or the
# time is up.
shown=0
print_new() {
	local n
	n=$(wc -l < "$out")
	if [ "$n" -gt "$shown" ]; then
		sed -n "$((shown + 1)),${n}p" "$out" | tr -d '\r' |
			grep -v -e '^VMTEST-BEGIN$' -e '^VMTEST-EXIT ' || true
		shown=$n
	fi
}
timed_out=0
while kill -0 "$qpid" 2>/dev/null; do
	print_new
	if [ $(($(date +%s) - start)) -ge "$timeout_s" ]; then
		timed_out=1
		kill -KILL "$qpid" 2>/dev/null
		break
	fi
	sleep 1
done
wait "$qpid" 2>/dev/null && qrc=0 || qrc=$?
qpid=""
print_new
# A last line without its newline.
[ -n "$(tail -c 1 "$out")" ] && { tail -n 1 "$out" | tr -d '\r'; echo; }
elapsed=$(($(date +%s) - start))

last_console() {
	echo "vmtest: the last console lines of Linux $series ($kver):" >&2
	tr -d '\r' < "$console" | tail -n "${1:-40}" | sed 's/^/  | /' >&2
	[ -s "$work/qemu.log" ] && sed 's/^/  qemu: /' "$work/qemu.log" >&2
	return 0
}
if [ "$timed_out" = 1 ]; then
	echo "vmtest: Linux $series ($kver): no end after ${timeout_s}s; the guest was killed" >&2
	last_console
	exit 124
fi
rc=$(tr -d '\r' < "$out" | sed -n 's/^VMTEST-EXIT \([0-9]*\)$/\1/p' | tail -n 1)
if [ -z "$rc" ]; then
	echo "vmtest: Linux $series ($kver): the guest ended (qemu status $qrc) after" \
	     "${elapsed}s without the command's exit status" >&2
	last_console
	exit 125
fi
echo "vmtest: Linux $series ($kver): exit status $rc after ${elapsed}s" >&2
exit "$rc"
