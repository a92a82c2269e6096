#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Install everything gpuleak needs to build, test and benchmark on a fresh Debian 12 machine.
# Idempotent: a second run does nothing but check. Runs apt-get and npm as root.
#
# Real Dawn (WebGPU) for the tests and the demo comes from npm into $GPULEAK_DEPS (default
# /var/cache/gpuleak), one folder per package@version, never into the repository:
#   npm/bun-webgpu-linux-x64@0.1.7   libwebgpu_wrapper.so: Dawn with the wgpu* C API exported
#   npm/webgpu@0.6.2                 dawn.node: Dawn for Node, wgpu* only in .symtab
#   npm/webgpu@0.1.1                 libdawn_proc.so of 2020: webgpu.h with char const * labels
#   npm/onnxruntime-node@1.30.0      libonnxruntime.so.1: Dawn linked in without any symbols
#   npm/@huggingface/transformers@4.3.2  transformers.js, on its own onnxruntime-node 1.30.0
#                                    (the same libonnxruntime.so.1, binary in the package)
#   npm/@tensorflow/tfjs-backend-webgpu@4.22.0  TensorFlow.js's WebGPU backend, with its exact
#                                    peer @tensorflow/tfjs-core@4.22.0 (run on webgpu@0.6.2)
# None runs an install script (--ignore-scripts: webgpu's only clears a macOS attribute,
# onnxruntime-node's would download more binaries, sharp's only checks its prebuilt binary).
# About 40 s and 1 GB, once.
#
# The fleet endpoint's tests scrape it with curl, lint it with promtool, parse it with
# Prometheus' own Python client, and run a real Prometheus server on it (Debian's prometheus
# package has both binaries). Only the binaries are wanted: the package's service is neither
# started by the install nor enabled at boot (see install_quiet_services).
#
# Mesa 25 (mesa-vulkan-drivers) comes from bookworm-backports too: its lavapipe (software
# Vulkan) runs onnxruntime's WebGPU execution provider, whose Dawn has only a Vulkan backend,
# on a machine without a GPU (tests/test_ort.py); bookworm's Mesa 22.3 is rejected by Dawn
# (no shader*ArrayDynamicIndexing). libcapstone-dev: the x86-64 decoder gpuleak's recovery of
# Dawn's entry points runs initializer code with (user/probe/dawn_procs.c).
#
# bpftool 7.5 comes from bookworm-backports (with libbpf-dev 1.4.6, which gpuleak no longer
# builds with: it links its own, see ensure_libbpf). The backports suite is added by reusing
# the URIs of the machine's own Debian source, so a mirror configured by the image keeps
# working.
set -euo pipefail

# librsvg2-bin and fonts-dejavu-core: the tests render --svg to PNG (rsvg-convert) and look
# at it; without a font its text would not be drawn. bpftrace: the peer `make bench`
# compares gpuleak's cost with (bench/bench.py). clang-format: make format-check (make test).
# systemtap-sdt-dev: <sys/sdt.h>, the USDT probes of the stand-in PyTorch (tests/standin).
# python3.11: Debian's interpreter, whose SDT probes the USDT tests trace.
# qemu-system-x86 and busybox-static: make vmtest boots Debian's other kernels (below) under
# qemu with a busybox initramfs (scripts/vmtest.sh).
# libdw-dev: elfutils' DWARF library, whose call frame information readers --unwind dwarf
# unwinds with (user/symbols/cfi.c). strace: kills gpuleak at its Nth syscall of a kind, at
# every stage of its startup (tests/test_conduct.py: no process it held is left stopped).
want_pkgs=(clang clang-format llvm make gcc pkg-config libelf-dev libdw-dev zlib1g-dev libbpf-dev
	   bpftool python3-jsonschema
	   libclang-rt-14-dev librsvg2-bin fonts-dejavu-core python3 curl util-linux
	   python3-prometheus-client prometheus bpftrace groff-base libcapstone-dev strace
	   systemtap-sdt-dev python3.11 qemu-system-x86 busybox-static)
quiet=${GPULEAK_DEPS_QUIET:-0}
say() { [ "$quiet" = 1 ] || echo "install-deps: $*" >&2; }
warn() { echo "install-deps: warning: $*" >&2; }

# A scratch apt in $1 for what is fetched but never installed: its own sources (deb822, read
# from stdin: redirect, never pipe, since it sets apt_o in the calling shell), lists and cache, so the machine's apt configuration stays as it is. Sets the
# array apt_o to the options that select it, and updates its lists (a suite that fails to
# update need not matter: the lookups that follow decide).
apt_scratch() {
	local tmp=$1

	mkdir -p "$tmp/parts" "$tmp/lists/partial" "$tmp/cache/archives/partial"
	cat > "$tmp/parts/gpuleak.sources"
	apt_o=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$tmp/parts"
	       -o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache"
	       -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
	       -o "APT::Sandbox::User=root")
	apt-get "${apt_o[@]}" update -qq >"$tmp/log" 2>&1 || true
}

# Downloads package $2 into the scratch apt $1: version $3 when on offer (empty: the newest),
# else the newest with a warning; $4 says where it was looked for. Prints the .deb's path;
# non-zero, having said why, when it could not.
apt_fetch_deb() {
	local tmp=$1 pkg=$2 want=$3 where=$4 vers ver

	# Versions on offer, newest first ("apt-cache show" succeeds on unknown versions).
	vers=$(apt-cache "${apt_o[@]}" madison "$pkg" 2>/dev/null |
		awk -F'|' '{gsub(/ /, "", $2); print $2}')
	if [ -z "$vers" ]; then
		warn "no $pkg in $where. $(tail -n 1 "$tmp/log")"
		return 1
	fi
	ver=$want
	if ! grep -qxF "$ver" <<<"$vers"; then
		ver=$(head -n 1 <<<"$vers")
		[ -z "$want" ] || warn "$pkg $want not in $where; taking $ver"
	fi
	(cd "$tmp" && apt-get "${apt_o[@]}" download -qq "$pkg=$ver" >"$tmp/log" 2>&1) ||
		{ warn "apt-get download $pkg=$ver failed: $(tail -n 1 "$tmp/log")"; return 1; }
	ls "$tmp/${pkg}_"*.deb
}

# NVIDIA's real driver library for the end-to-end tests (scenario realdriver): Debian's libcuda1
# from the non-free component, fetched with apt-get download and unpacked with dpkg-deb -x,
# never installed (the package pulls in dkms and kernel headers). apt runs with a private
# sources list and state directory, so the machine's apt configuration stays as it is. The
# library ends up at $libcuda_dir/libcuda.so.1 (a symlink into the unpacked tree), readable by
# everyone: the test runs it as nobody, since as root the driver creates /dev/nvidiactl.
# A mirror without the package is no reason to fail the install: warn, and the test that
# needs it reports itself skipped.
libcuda_dir=${GPULEAK_LIBCUDA_DIR:-/var/cache/gpuleak/libcuda1}
libcuda_version=535.261.03-1 # what TARGETS.md measured; the newest 535 if the mirror lacks it

# Prints the deb822 sources of the machine's Debian mirror, components replaced by non-free.
libcuda_sources() {
	local f=/etc/apt/sources.list.d/debian.sources uri

	if [ -f "$f" ]; then
		sed 's/^Components:.*/Components: non-free/' "$f"
		return
	fi
	uri=""
	[ -f /etc/apt/sources.list ] &&
		uri=$(awk '$1=="deb" && $3=="bookworm"{print $2; exit}' /etc/apt/sources.list)
	printf 'Types: deb\nURIs: %s\nSuites: bookworm bookworm-updates\nComponents: non-free\n' \
	       "${uri:-http://deb.debian.org/debian}"
	printf 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
}

# Returns non-zero, having said why, when the library could not be fetched.
fetch_libcuda() (
	local tmp deb lib start_ms

	start_ms=$(date +%s%3N)
	tmp=$(mktemp -d) || return 1
	trap 'rm -rf "$tmp"' EXIT
	mkdir -p "$tmp/x"
	apt_scratch "$tmp" < <(libcuda_sources)
	deb=$(apt_fetch_deb "$tmp" libcuda1 "$libcuda_version" \
		"the mirror's non-free component") || return 1
	dpkg-deb -x "$deb" "$tmp/x" || { warn "could not unpack $deb"; return 1; }
	lib=$(cd "$tmp/x" && find . -name 'libcuda.so.[0-9]*.*' -type f | head -n 1)
	[ -n "$lib" ] || { warn "$deb holds no libcuda.so.<version>"; return 1; }
	rm -rf "$libcuda_dir.new" && mkdir -p "$libcuda_dir.new" &&
		mv "$tmp/x" "$libcuda_dir.new/root" &&
		ln -s "root/${lib#./}" "$libcuda_dir.new/libcuda.so.1" &&
		dpkg-deb -f "$deb" Version > "$libcuda_dir.new/VERSION" &&
		chmod -R a+rX "$libcuda_dir.new" && rm -rf "$libcuda_dir" &&
		mv "$libcuda_dir.new" "$libcuda_dir" ||
		{ warn "could not fill $libcuda_dir"; return 1; }
	chmod a+rx "$(dirname "$libcuda_dir")"
	say "libcuda1 $(cat "$libcuda_dir/VERSION") unpacked: $libcuda_dir/libcuda.so.1" \
	    "($(($(date +%s%3N) - start_ms)) ms)"
)

ensure_libcuda() {
	if [ -e "$libcuda_dir/libcuda.so.1" ]; then
		say "real libcuda.so.1 present: $libcuda_dir" \
		    "($(cat "$libcuda_dir/VERSION" 2>/dev/null))"
	elif [ "$(id -u)" -ne 0 ]; then
		warn "no real libcuda.so.1 in $libcuda_dir; run as root to fetch it" \
		    "(the realdriver test is skipped without it)"
	else
		fetch_libcuda ||
			warn "no real libcuda.so.1; the realdriver test will be skipped"
	fi
}

# Debian's kernels for the kernel matrix (make vmtest, scripts/vmtest.sh): fetched with apt-get
# download through a private sources list and state directory and unpacked with dpkg-deb -x,
# never installed. One folder per series under $kernels_dir: root/ (boot/vmlinuz-KVER and
# lib/modules/KVER), KVER (uname -r in the guest) and PACKAGE (name=version). The generic
# -amd64 flavour, not -cloud-amd64: only it ships 9p (docs/kernels.md). A series already
# there is not looked at again (delete its folder to take a newer one); one that cannot be
# fetched is warned about, and its vmtest reports itself skipped.
kernels_dir=${GPULEAK_KERNELS_DIR:-/var/cache/gpuleak/kernels}
# series|the suites it comes from|the newest package of theirs whose name matches is taken
kernel_series=(
	'6.1|bookworm bookworm-updates bookworm-security|^linux-image-6\.1\.0-[0-9]+-amd64$'
	'6.12|bookworm-backports|^linux-image-6\.12\.[0-9]+\+deb12(\.[0-9]+)?-amd64$'
	'6.18|trixie-backports|^linux-image-6\.18\.[0-9]+\+deb13(\.[0-9]+)?-amd64$'
	'5.10|bullseye bullseye-security|^linux-image-5\.10\.0-[0-9]+-amd64$'
)

# Prints the deb822 sources of the machine's Debian mirror (and its security mirror) for
# every suite above.
kernel_sources() {
	local uri="" suri="" f=/etc/apt/sources.list.d/debian.sources

	if [ -f "$f" ]; then
		uri=$(awk '/^URIs:/{u=$2} /^Suites:.*bookworm( |$)/{print u; exit}' "$f")
		suri=$(awk '/^URIs:/{u=$2} /^Suites:.*-security/{print u; exit}' "$f")
	fi
	[ -z "$uri" ] && [ -f /etc/apt/sources.list ] &&
		uri=$(awk '$1=="deb" && $3=="bookworm"{print $2; exit}' /etc/apt/sources.list)
	printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\n%s\n\n' \
	       "${uri:-http://deb.debian.org/debian}" \
	       "bookworm bookworm-updates bookworm-backports trixie-backports bullseye" \
	       "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
	printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\n%s\n' \
	       "${suri:-http://deb.debian.org/debian-security}" \
	       "bookworm-security bullseye-security" \
	       "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
}

# Fetches the series named as arguments; returns non-zero when any could not be.
fetch_kernels() (
	local tmp spec series suites suite re pkg ver deb kver mods rc=0 start_ms

	tmp=$(mktemp -d) || return 1
	trap 'rm -rf "$tmp"' EXIT
	apt_scratch "$tmp" < <(kernel_sources)
	for spec in "${kernel_series[@]}"; do
		IFS='|' read -r series suites re <<<"$spec"
		[[ " $* " == *" $series "* ]] || continue
		start_ms=$(date +%s%3N)
		# The names in these suites' package lists (which apt may keep compressed).
		pkg=$(for f in "$tmp"/lists/*_dists_*_main_binary-amd64_Packages*; do
			suite=${f##*_dists_}
			suite=${suite%%_main_*}
			[[ " $suites " == *" $suite "* ]] || continue
			/usr/lib/apt/apt-helper cat-file "$f" 2>/dev/null
		      done | sed -n 's/^Package: //p' | grep -E "$re" | sort -V | tail -n 1)
		if [ -z "$pkg" ]; then
			warn "no package for Linux $series in $suites ($re);" \
			     "its vmtest will be skipped"
			rc=1
			continue
		fi
		rm -f "$tmp"/*.deb
		if ! deb=$(apt_fetch_deb "$tmp" "$pkg" "" "$suites"); then
			warn "the Linux $series vmtest will be skipped"
			rc=1
			continue
		fi
		ver=$(dpkg-deb -f "$deb" Version)
		rm -rf "$tmp/x" "$kernels_dir/$series.new"
		mkdir -p "$tmp/x" "$kernels_dir/$series.new"
		if ! dpkg-deb -x "$deb" "$tmp/x"; then
			warn "could not unpack $deb; the Linux $series vmtest will be skipped"
			rc=1
			continue
		fi
		# trixie's packages have merged /usr: usr/lib/modules.
		mods=$tmp/x/lib/modules
		[ -d "$mods" ] || mods=$tmp/x/usr/lib/modules
		kver=$(ls "$mods" 2>/dev/null | head -n 1)
		if [ -z "$kver" ] || [ ! -f "$tmp/x/boot/vmlinuz-$kver" ]; then
			warn "$deb has no boot/vmlinuz or lib/modules; Linux $series skipped"
			rc=1
			continue
		fi
		mkdir -p "$kernels_dir/$series.new/root/lib"
		mv "$tmp/x/boot" "$kernels_dir/$series.new/root/boot"
		mv "$mods" "$kernels_dir/$series.new/root/lib/modules"
		echo "$kver" > "$kernels_dir/$series.new/KVER"
		echo "$pkg=$ver" > "$kernels_dir/$series.new/PACKAGE"
		chmod -R a+rX "$kernels_dir/$series.new"
		rm -rf "$kernels_dir/$series" "$tmp/x"
		mv "$kernels_dir/$series.new" "$kernels_dir/$series"
		say "Linux $series: $pkg $ver unpacked into $kernels_dir/$series" \
		    "($(($(date +%s%3N) - start_ms)) ms)"
	done
	return $rc
)

ensure_kernels() {
	local spec series
	local -a missing_k=()

	for spec in "${kernel_series[@]}"; do
		series=${spec%%|*}
		[ -f "$kernels_dir/$series/KVER" ] || missing_k+=("$series")
	done
	if [ ${#missing_k[@]} -eq 0 ]; then
		say "vmtest kernels present: $kernels_dir ($(cd "$kernels_dir" &&
			cat ./*/PACKAGE | tr '\n' ' '))"
	elif [ "$(id -u)" -ne 0 ]; then
		warn "no kernel for Linux ${missing_k[*]} in $kernels_dir; run as root to fetch" \
		     "(their vmtests are skipped without)"
	else
		mkdir -p "$kernels_dir" && chmod a+rx "$kernels_dir" "$(dirname "$kernels_dir")"
		fetch_kernels "${missing_k[@]}" ||
			warn "some vmtest kernels are missing; their vmtests will be skipped"
	fi
}

# PyTorch's own snapshot reader, torch/cuda/_memory_viz.py (stdlib only; runs on bookworm's
# Python 3.11), which tests/test_memory_viz.py runs on what --memory-viz writes: Debian trixie's
# python3-torch, fetched and unpacked as libcuda1 is (private sources list and state, nothing
# installed, the machine's apt configuration untouched). Only the one file is kept, at
# $torch_viz_dir/_memory_viz.py, with the package's version in VERSION. ~11 MB downloaded once.
torch_viz_dir=${GPULEAK_TORCH_VIZ_DIR:-/var/cache/gpuleak/torch-memory-viz}
torch_version=2.6.0+dfsg-7 # what TARGETS.md measured; the newest on the mirror otherwise

fetch_torch_viz() (
	local tmp deb f start_ms uri

	start_ms=$(date +%s%3N)
	tmp=$(mktemp -d) || return 1
	trap 'rm -rf "$tmp"' EXIT
	mkdir -p "$tmp/x"
	uri=$(libcuda_sources | awk '/^URIs:/{print $2; exit}')
	# (not piped: apt_scratch sets apt_o in this shell)
	apt_scratch "$tmp" < <(printf 'Types: deb\nURIs: %s\nSuites: trixie\nComponents: main\n%s\n' \
		"${uri:-http://deb.debian.org/debian}" \
		"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg")
	deb=$(apt_fetch_deb "$tmp" python3-torch "$torch_version" "trixie on the mirror") ||
		return 1
	dpkg-deb -x "$deb" "$tmp/x" || { warn "could not unpack $deb"; return 1; }
	f=$(cd "$tmp/x" && find . -path '*/torch/cuda/_memory_viz.py' -type f | head -n 1)
	[ -n "$f" ] || { warn "$deb holds no torch/cuda/_memory_viz.py"; return 1; }
	rm -rf "$torch_viz_dir.new" && mkdir -p "$torch_viz_dir.new" &&
		cp "$tmp/x/${f#./}" "$torch_viz_dir.new/_memory_viz.py" &&
		dpkg-deb -f "$deb" Version > "$torch_viz_dir.new/VERSION" &&
		chmod -R a+rX "$torch_viz_dir.new" && rm -rf "$torch_viz_dir" &&
		mv "$torch_viz_dir.new" "$torch_viz_dir" ||
		{ warn "could not fill $torch_viz_dir"; return 1; }
	say "python3-torch $(cat "$torch_viz_dir/VERSION") unpacked:" \
	    "$torch_viz_dir/_memory_viz.py ($(($(date +%s%3N) - start_ms)) ms)"
)

ensure_torch_viz() {
	if [ -e "$torch_viz_dir/_memory_viz.py" ]; then
		say "PyTorch's _memory_viz.py present: $torch_viz_dir" \
		    "($(cat "$torch_viz_dir/VERSION" 2>/dev/null))"
	elif [ "$(id -u)" -ne 0 ]; then
		warn "no _memory_viz.py in $torch_viz_dir; run as root to fetch it" \
		    "(the memory_viz tests are skipped without it)"
	else
		fetch_torch_viz ||
			warn "no _memory_viz.py; the memory_viz tests will be skipped"
	fi
}

# libbpf itself: Debian's source package, built by make (Makefile: LIBBPF_SRC) and linked
# statically into gpuleak, so that every machine runs the same libbpf whatever its own. 1.7
# rather than bookworm-backports' 1.4: from 1.6 on libbpf maps the kernel's BTF
# (/sys/kernel/btf/vmlinux, Linux 6.16+) where 1.4 reads it 4 KiB at a time into memory it
# then copies (~45 ms of every start here, docs/overhead.md); 1.6 places USDT notes that
# record no .stapsdt.base, 1.7 reads base+index*scale arguments. The source comes from sid
# through a scratch apt (deb-src, checked against the archive's signed index) and is unpacked
# with tar: Debian carries no patches on it. ~1 MB, once.
libbpf_dir=${GPULEAK_LIBBPF_DIR:-/var/cache/gpuleak/libbpf}
libbpf_version=1.7.0-1 # the newest in sid otherwise (with a warning)

fetch_libbpf() (
	local tmp uri ver orig start_ms

	start_ms=$(date +%s%3N)
	tmp=$(mktemp -d) || return 1
	trap 'rm -rf "$tmp"' EXIT
	uri=$(libcuda_sources | awk '/^URIs:/{print $2; exit}')
	# (not piped: apt_scratch sets apt_o in this shell)
	apt_scratch "$tmp" < <(printf 'Types: deb-src\nURIs: %s\nSuites: sid\nComponents: main\n%s\n' \
		"${uri:-http://deb.debian.org/debian}" \
		"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg")
	ver=$(apt-cache "${apt_o[@]}" showsrc libbpf 2>/dev/null | sed -n 's/^Version: //p' |
		sort -V | tail -n 1)
	if [ -z "$ver" ]; then
		warn "no libbpf source in sid on $uri. $(tail -n 1 "$tmp/log")"
		return 1
	fi
	if apt-cache "${apt_o[@]}" showsrc libbpf 2>/dev/null | grep -qxF "Version: $libbpf_version"
	then
		ver=$libbpf_version
	else
		warn "libbpf $libbpf_version not in sid; taking $ver"
	fi
	(cd "$tmp" && apt-get "${apt_o[@]}" source --download-only -qq "libbpf=$ver" \
		>"$tmp/log" 2>&1) ||
		{ warn "apt-get source libbpf=$ver failed: $(tail -n 1 "$tmp/log")"; return 1; }
	orig=$(ls "$tmp"/libbpf_*.orig.tar.* 2>/dev/null | head -n 1)
	[ -n "$orig" ] || { warn "libbpf=$ver came without an orig tarball"; return 1; }
	rm -rf "$libbpf_dir.new" && mkdir -p "$libbpf_dir.new" &&
		tar -xf "$orig" -C "$libbpf_dir.new" --strip-components=1 &&
		[ -f "$libbpf_dir.new/src/Makefile" ] &&
		echo "$ver" > "$libbpf_dir.new/VERSION" &&
		chmod -R a+rX "$libbpf_dir.new" && rm -rf "$libbpf_dir" &&
		mv "$libbpf_dir.new" "$libbpf_dir" ||
		{ warn "could not unpack $orig into $libbpf_dir"; return 1; }
	say "libbpf $ver source unpacked: $libbpf_dir ($(($(date +%s%3N) - start_ms)) ms)"
)

# Required: gpuleak does not build without it.
ensure_libbpf() {
	if [ -f "$libbpf_dir/src/Makefile" ]; then
		say "libbpf source present: $libbpf_dir ($(cat "$libbpf_dir/VERSION" 2>/dev/null))"
	elif [ "$(id -u)" -ne 0 ] && ! [ -w "$(dirname "$libbpf_dir")" ]; then
		echo "install-deps: no libbpf source in $libbpf_dir; run as root: sudo $0" >&2
		exit 1
	else
		mkdir -p "$(dirname "$libbpf_dir")"
		fetch_libbpf || { echo "install-deps: could not fetch libbpf's source" >&2; exit 1; }
	fi
}

have_libbpf_146() {
	local v
	v=$(dpkg-query -W -f='${Version}' libbpf-dev 2>/dev/null) || return 1
	dpkg --compare-versions "$v" ge "1:1.4" 
}

have_mesa_25() {
	local v
	v=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null) || return 1
	dpkg --compare-versions "$v" ge "25"
}

deps=${GPULEAK_DEPS:-/var/cache/gpuleak}
npm_pkgs=(bun-webgpu-linux-x64@0.1.7 webgpu@0.6.2 webgpu@0.1.1 onnxruntime-node@1.30.0
	  @huggingface/transformers@4.3.2 @tensorflow/tfjs-backend-webgpu@4.22.0)

have_npm_pkg() {
	local name=${1%@*} version=${1##*@} v
	v=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' \
		"$deps/npm/$1/node_modules/$name/package.json" 2>/dev/null) || return 1
	[ "$v" = "$version" ]
}

install_npm() {
	local pkg missing_npm=()
	for pkg in "${npm_pkgs[@]}"; do
		have_npm_pkg "$pkg" || missing_npm+=("$pkg")
	done
	[ ${#missing_npm[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ] && ! [ -w "$(dirname "$deps")" ] && ! [ -w "$deps" ]; then
		echo "install-deps: missing npm packages (${missing_npm[*]}) in $deps; run as" \
		     "root: sudo $0" >&2
		exit 1
	fi
	command -v npm >/dev/null || apt-get install -y -qq --no-install-recommends npm >/dev/null
	for pkg in "${missing_npm[@]}"; do
		# One prefix per package: npm prunes whatever a prefix's package.json lacks.
		rm -rf "$deps/npm/$pkg"
		mkdir -p "$deps/npm/$pkg"
		say "fetching $pkg from npm into $deps/npm/$pkg"
		npm install --prefix "$deps/npm/$pkg" --no-save --ignore-scripts --no-audit \
			--no-fund --loglevel=error "$pkg" >/dev/null
		have_npm_pkg "$pkg" || { echo "install-deps: npm install $pkg failed" >&2; exit 1; }
	done
}

missing=()
for p in "${want_pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ] && have_libbpf_146 && have_mesa_25; then
	install_npm
	ensure_libbpf
	say "all dependencies present"
	ensure_libcuda
	ensure_kernels
	ensure_torch_viz
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages (${missing[*]:-libbpf-dev>=1.4 or mesa-vulkan-drivers>=25});" \
	     "run as root:" \
	     "sudo $0" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# bookworm-backports (libbpf 1.4, bpftool 7.5, Mesa 25) through a private apt configuration:
# the machine's own sources copied beside a backports stanza into a folder of ours, with
# package lists of our own, so that nothing under /etc/apt changes. Earlier versions of this
# script added /etc/apt/sources.list.d/gpuleak-backports.sources: that file is taken back.
apt_priv=${GPULEAK_DEPS:-/var/cache/gpuleak}/apt
rm -f /etc/apt/sources.list.d/gpuleak-backports.sources
mkdir -p "$apt_priv/sources.list.d" "$apt_priv/lists/partial"
rm -f "$apt_priv"/sources.list.d/*
for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
	[ -f "$f" ] && cp "$f" "$apt_priv/sources.list.d/"
done
if ! grep -rqs "bookworm-backports" /etc/apt/sources.list "$apt_priv/sources.list.d/"; then
	uris=""
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		# First URIs line of the stanza that serves the plain "bookworm" suite.
		uris=$(awk '/^URIs:/{u=$0} /^Suites:.*bookworm( |$)/{print u; exit}' \
			/etc/apt/sources.list.d/debian.sources | sed 's/^URIs:[[:space:]]*//')
	fi
	if [ -z "$uris" ] && [ -f /etc/apt/sources.list ]; then
		uris=$(awk '$1=="deb" && $3=="bookworm"{print $2; exit}' /etc/apt/sources.list)
	fi
	[ -n "$uris" ] || uris="http://deb.debian.org/debian"
	say "using bookworm-backports from $uris (private apt configuration in $apt_priv)"
	cat > "$apt_priv/sources.list.d/gpuleak-backports.sources" <<SRC
Types: deb
URIs: $uris
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
# Every apt-get below: the machine's sources plus backports, our own lists.
apt_opts=(-o "Dir::Etc::SourceParts=$apt_priv/sources.list.d"
	  -o "Dir::State::Lists=$apt_priv/lists")

# Install packages without starting the services they ship (prometheus): a policy-rc.d
# that denies every start, for this install only, as Debian does in chroots; then the
# service is disabled, so a reboot does not start it either.
install_quiet_services() {
	local prc=/usr/sbin/policy-rc.d ours=0 rc=0 had_prom=0

	# A Prometheus someone installed and runs on purpose is left alone.
	dpkg-query -W -f='${Status}' prometheus 2>/dev/null | grep -q "install ok installed" &&
		had_prom=1
	if [ ! -e "$prc" ]; then
		printf '#!/bin/sh\nexit 101\n' > "$prc" && chmod +x "$prc" && ours=1
	fi
	apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends "$@" >/dev/null || rc=$?
	if [ "$ours" = 1 ]; then
		rm -f "$prc"
	fi
	if [ "$had_prom" = 0 ] && command -v systemctl >/dev/null && [ -d /run/systemd/system ]
	then
		systemctl disable --now prometheus.service >/dev/null 2>&1 || true
	fi
	return $rc
}

apt-get "${apt_opts[@]}" update -qq
install_quiet_services "${want_pkgs[@]}"
apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends -t bookworm-backports libbpf-dev \
	bpftool >/dev/null
have_libbpf_146 || { echo "install-deps: libbpf-dev >= 1.4 did not install" >&2; exit 1; }
apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends -t bookworm-backports \
	mesa-vulkan-drivers >/dev/null
have_mesa_25 || { echo "install-deps: mesa-vulkan-drivers >= 25 did not install" >&2; exit 1; }
say "installed: libbpf-dev $(dpkg-query -W -f='${Version}' libbpf-dev)," \
    "bpftool $(dpkg-query -W -f='${Version}' bpftool)," \
    "mesa-vulkan-drivers $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers)"
ensure_libbpf
ensure_libcuda
ensure_torch_viz
install_npm
ensure_kernels
