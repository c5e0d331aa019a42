#!/usr/bin/env bash
# The kernel matrix: shmguard's checks (scripts/kernels/checks.sh) in
# Debian's cloud kernels 5.10 (bullseye), 6.1 (bookworm) and 6.12
# (bookworm-backports), each booted under QEMU (TCG) with an initramfs made
# from a build tree, and on the host kernel directly (a chroot of the same
# tree in a mount namespace of its own).  Each check prints one line,
# PASS/FAIL/SKIP and what it saw; this script compares them with the
# expectations below and prints a kernel x check table.
#
# The build tree's architecture chooses the kernels: an x86-64 build boots
# Debian's cloud-amd64 kernels (qemu-system-x86_64), an arm64 build
# (scripts/arm64.sh) its cloud-arm64 ones (qemu-system-aarch64 -M virt),
# with Debian's arm64 busybox-static and bpftool in the initramfs; an arm64
# build's host run is the host kernel under qemu-aarch64 user mode (binfmt),
# which has no bpf(2): the shim's and the command line's checks alone.
#
#   scripts/kernels.sh [--build DIR] [--kernels 5.10,6.1,6.12,host]
#                      [--checks facts,abort,ls,dead,audit,freed,freed-burst,gate,pidns,node,watch,watch-kprobe]
#                      [--audit-args 'ARGS'] [--jobs N] [--timeout S]
#                      [--refresh] [--markdown]
#
# --build DIR   the build tree to test (default build/; it must be built)
# --kernels     default 5.10,6.1,6.12,host; 6.1,6.12 for an arm64 build
# --audit-args  extra options for every `shmguard audit` in the checks
# --jobs N      kernels run at once (default 4: all of them)
# --timeout S   bound on each kernel's run, boot included (default 150)
# --refresh     look for newer kernel packages even if some are cached
# --markdown    the table as docs/kernels.md shows it
#
# Kernels are cached in $SHMGUARD_KERNEL_CACHE (default
# /var/cache/shmguard-kernels), fetched when missing with `apt-get download`
# through a private apt configuration kept in the cache: only the machine's
# Debian mirror (the first URIs: of its deb822 sources, else its
# sources.list; $SHMGUARD_KERNEL_MIRROR instead) and its proxy settings are
# taken from its own apt setup (scripts/kernels/mirror.sh).  Needs root (the host run
# uses namespaces and chroot), qemu-system-x86, busybox-static, bpftool and
# clang (scripts/deps.sh; an arm64 build: scripts/deps.sh arm64).
#
# Exit status: 0 every result is what the table below expects; 1 a result
# is not (a failure, or an unexpected pass: remove its line); 2 bad usage;
# 3 the matrix cannot run here (not root, no kernels).
set -euo pipefail
caller_dir=$PWD
cd "$(dirname "$0")/.."

# What each kernel gets today, in one place: the checks expected to FAIL,
# and why.  Every other result must PASS.  When a feature lands for a
# kernel, delete its line here: until then an unexpected PASS fails the run.
expected_failures='
host  probe-fentry  this machine refuses fentry programs (EPERM)
host  probe-kprobe  the kernel here is built without kprobes
host  watch-kprobe  the kernel here is built without kprobes
host  freed  this machine refuses fentry and has no kprobes: freed files wait for the review
arm64/6.1  probe-fentry  arm64 attaches fentry programs from Linux 6.4 (direct calls from ftrace): ENOTSUPP here, the auditor takes kprobes
'
# (An arm64 build's lines are marked arm64/KERNEL.)

usage() { sed -n '/^#   scripts/,/^# --markdown/s/^# \{0,1\}//p' "$0" >&2; exit 2; }

build='' kernels='' checks=facts,abort,ls,dead,audit,freed,freed-burst,gate,probe-fentry,probe-kprobe,probe-syscalls,pidns,node,watch,watch-kprobe audit_args=''
jobs=4 timeout=150 refresh=0 markdown=0
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=${2:?}; shift ;;
	--kernels) kernels=${2:?}; shift ;;
	--checks) checks=${2:?}; shift ;;
	--audit-args) audit_args=${2?}; shift ;;
	--jobs) jobs=${2:?}; shift ;;
	--timeout) timeout=${2:?}; shift ;;
	--refresh) refresh=1 ;;
	--markdown) markdown=1 ;;
	*) usage ;;
	esac
	shift
done
# A relative --build is the caller's, not this repository's.
case $build in /* | '') ;; *) build=$caller_dir/$build ;; esac
build=${build:-build}
checks=${checks//,/ }
case "$jobs$timeout" in *[!0-9]*) usage ;; esac

if [ "$(id -u)" -ne 0 ]; then
	echo "kernels: needs root (namespaces for the host run, the kernel cache)" >&2
	exit 3
fi
# The build's programs go into the initramfs at the same relative paths;
# the auditor's module beside the command, where it looks first.
programs='cli/shmguard cli/shmguard-auditor.so shim/libshmguard.so tests/shmtool tests/leakgen examples/shmpipe'
for f in $programs; do
	[ -x "$build/$f" ] || { echo "kernels: $build/$f is missing: build first (scripts/build.sh)" >&2; exit 2; }
done
build=$(cd "$build" && pwd)
# The build's architecture, from its shmguard's ELF header (e_machine).
case $(od -An -tu2 -j18 -N2 "$build/cli/shmguard" | tr -d ' ') in
62) arch=amd64 multiarch=x86_64-linux-gnu ;;
183) arch=arm64 multiarch=aarch64-linux-gnu ;;
*)
	echo "kernels: $build/cli/shmguard is built for a machine this matrix boots no kernel of" >&2
	exit 2
	;;
esac
if [ -z "$kernels" ]; then
	[ "$arch" = amd64 ] && kernels=5.10,6.1,6.12,host || kernels=6.1,6.12
fi
IFS=, read -ra kernels <<<"$kernels"
# An arm64 build's kernels are cached beside the x86-64 ones, and named
# so in the expectations (arm64/KERNEL).
kdir() { [ "$arch" = amd64 ] && echo "$cache/$1" || echo "$cache/$arch-$1"; }
xkey() { [ "$arch" = amd64 ] && echo "$1" || echo "$arch/$1"; }
work=$build/kernels
# One run at a time per build tree (another may be running on the same one).
exec 8>"$build/kernels.lock"
if ! flock -n 8; then
	echo "kernels: waiting for another run on $build" >&2
	flock 8
fi
rm -rf "$work"
mkdir -p "$work"

# ---- kernels: newest linux-image-SERIES*-cloud-amd64 from a private apt setup

cache=${SHMGUARD_KERNEL_CACHE:-/var/cache/shmguard-kernels}
apt_dir=$cache/apt
export APT_CONFIG=$apt_dir/apt.conf

# shellcheck source=kernels/mirror.sh
. scripts/kernels/mirror.sh

private_apt() {
	mkdir -p "$apt_dir"/{lists/partial,archives/partial,cache,parts,preferences.d}
	local key=/usr/share/keyrings/debian-archive-keyring.gpg suite mirror
	mirror=${SHMGUARD_KERNEL_MIRROR:-$(apt_mirror)}
	if [ -z "$mirror" ]; then
		echo "kernels: no Debian mirror in this machine's apt sources (/etc/apt/sources.list.d/*.sources," \
			"/etc/apt/sources.list): set SHMGUARD_KERNEL_MIRROR=URI" >&2
		exit 3
	fi
	echo "kernels: fetching through $mirror" >&2
	for suite in bookworm bookworm-backports bullseye; do
		echo "deb [signed-by=$key arch=$arch] $mirror $suite main"
	done >"$apt_dir/sources.list"
	: >"$apt_dir/status"
	# APT_CONFIG is read first, so the machine's apt.conf(.d), sources,
	# preferences, lists, caches and dpkg status are all replaced.
	cat >"$apt_dir/apt.conf" <<-EOF
		Dir::Etc::main "/dev/null";
		Dir::Etc::parts "$apt_dir/parts";
		Dir::Etc::SourceList "$apt_dir/sources.list";
		Dir::Etc::SourceParts "/dev/null";
		Dir::Etc::Preferences "/dev/null";
		Dir::Etc::PreferencesParts "$apt_dir/preferences.d";
		Dir::State::Lists "$apt_dir/lists";
		Dir::State::status "$apt_dir/status";
		Dir::Cache "$apt_dir/cache";
		Dir::Cache::Archives "$apt_dir/archives";
		Dir::Cache::pkgcache "";
		Dir::Cache::srcpkgcache "";
		APT::Sandbox::User "root";
		Acquire::Languages "none";
		APT::Architecture "$arch";
		APT::Architectures { "$arch"; };
		$(apt_proxy_config)
	EOF
	apt-get -qq update
}

# fetch_kernel SERIES: $(kdir SERIES)/{vmlinuz,config,package}.
fetch_kernel() {
	local series=$1 dir re name deb
	dir=$(kdir "$1")
	re="^linux-image-${series//./\\.}[.-].*-cloud-$arch\$"
	name=$(apt-cache pkgnames linux-image- | grep -E "$re" | sort -V | tail -n1)
	[ -n "$name" ] || { echo "kernels: no package matches $re" >&2; return 1; }
	if [ "$(cat "$dir/package" 2>/dev/null)" = "$name" ]; then
		return 0
	fi
	echo "kernels: fetching $name" >&2
	rm -rf "$dir.new"
	mkdir -p "$dir.new/x"
	(cd "$dir.new" && apt-get -qq download "$name")
	deb=$(echo "$dir.new"/*.deb)
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dir.new/x" ./boot
	mv "$dir.new"/x/boot/vmlinuz-* "$dir.new/vmlinuz"
	mv "$dir.new"/x/boot/config-* "$dir.new/config"
	echo "$name" >"$dir.new/package"
	dpkg-deb -f "$deb" Version >"$dir.new/version"
	rm -rf "$dir.new/x" "$deb" "$dir"
	mv "$dir.new" "$dir"
}

# fetch_userland: $(kdir userland)/, busybox-static, bpftool and libcap2
# of this architecture unpacked, and their versions in packages.
fetch_userland() {
	local dir deb
	dir=$(kdir userland)
	echo "kernels: fetching $arch busybox-static, bpftool, libcap2" >&2
	rm -rf "$dir.new"
	mkdir -p "$dir.new/debs"
	(cd "$dir.new/debs" && apt-get -qq download busybox-static bpftool libcap2)
	for deb in "$dir.new"/debs/*.deb; do
		dpkg-deb -x "$deb" "$dir.new"
		dpkg-deb -f "$deb" Package Version | paste -sd' ' >>"$dir.new/packages"
	done
	rm -rf "$dir.new/debs" "$dir.new/usr/share" "$dir"
	mv "$dir.new" "$dir"
}

fetch_kernels() {
	local k missing=()
	for k in "${kernels[@]}"; do
		[ "$k" = host ] && continue
		if [ "$refresh" = 1 ] || [ ! -f "$(kdir "$k")/vmlinuz" ]; then
			missing+=("$k")
		fi
	done
	# An arm64 initramfs takes Debian's arm64 busybox and bpftool (with
	# bpftool's one library that the arm64 build's own do not bring).
	if [ "$arch" != amd64 ] && { [ "$refresh" = 1 ] || [ ! -x "$(kdir userland)/bin/busybox" ]; }; then
		missing+=(userland)
	fi
	[ ${#missing[@]} -gt 0 ] || return 0
	mkdir -p "$cache"
	# Another run (another build tree) may be fetching into the same cache.
	exec 9>"$cache/lock"
	flock 9
	private_apt
	for k in "${missing[@]}"; do
		if [ "$k" = userland ]; then
			fetch_userland
		else
			fetch_kernel "$k"
		fi
	done
	rm -rf "$apt_dir/lists" # 95 MB that the next fetch downloads again anyway
	exec 9>&-
}

# ---- the initramfs: the build's programs, their libraries, busybox, the checks

root=$work/root

# list_libs ELF: what ldd prints for it; for arm64, the arm64 loader's own
# list under qemu-aarch64 (user mode), the libraries unpacked from Debian's
# packages into $(kdir userland) found too.
list_libs() {
	if [ "$arch" = amd64 ]; then
		ldd "$1"
	else
		local u
		u=$(kdir userland)
		qemu-aarch64-static /lib/ld-linux-aarch64.so.1 \
			--library-path "$u/lib/$multiarch:$u/usr/lib/$multiarch" --list "$1"
	fi
}

# add ELF...: copies each program and the libraries it needs (with the
# loader), at their paths (the unpacked packages' at theirs inside).
add_libs() {
	local f lib u
	u=$(kdir userland)
	for f; do
		for lib in $(list_libs "$f" | awk '/=>/ { print $3 } /^\t\// { print $1 }'); do
			case $lib in
			"$u"/*)
				mkdir -p "$root$(dirname "${lib#"$u"}")"
				cp -L "$lib" "$root${lib#"$u"}"
				;;
			*) [ -e "$root$lib" ] || cp -L --parents "$lib" "$root" ;;
			esac
		done
	done
}

make_initramfs() {
	local f kind busybox=/bin/busybox bpftool run=()
	bpftool=$(command -v bpftool)
	if [ "$arch" != amd64 ]; then
		busybox=$(kdir userland)/bin/busybox bpftool=$(kdir userland)/usr/sbin/bpftool
		run=(qemu-aarch64-static)
	fi
	mkdir -p "$root"/{bin,sg/bpf,sg/cli,sg/shim,sg/tests,sg/examples,proc,sys,dev,tmp}
	cp "$busybox" "$root/bin/busybox"
	for f in $("${run[@]}" "$busybox" --list); do
		[ "$f" = busybox ] || ln -s busybox "$root/bin/$f"
	done
	for f in $programs; do
		cp "$build/$f" "$root/sg/$f"
		add_libs "$root/sg/$f"
	done
	cp "$bpftool" "$root/sg/"
	add_libs "$root/sg/bpftool"
	for kind in tracepoint raw_tp kprobe fentry tp_btf lsm; do
		clang -O2 -target bpf "-I/usr/include/$multiarch" "-DKIND_$kind" \
			-c scripts/kernels/progtypes.bpf.c -o "$root/sg/bpf/$kind.o"
	done
	cp scripts/kernels/checks.sh "$root/checks.sh"
	{
		echo "SGK_CHECKS='$checks'"
		echo "SGK_AUDIT_ARGS='${audit_args//\'/\'\\\'\'}'"
	} >"$root/sgk.env"
	cat >"$root/init" <<-'EOF'
		#!/bin/sh
		# The kernel's first process: when it started is the boot time.
		mount -t proc proc /proc
		read -r up _ </proc/uptime
		echo "SGK fact boot_s $up"
		/bin/sh /checks.sh
		poweroff -f
	EOF
	chmod +x "$root/init" "$root/checks.sh"
	(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null) >"$work/initramfs.cpio"
}

# ---- running: one log per kernel in $work/KERNEL.log

# Seconds since $1 (an $EPOCHREALTIME), to the hundredth.
seconds_since() {
	local us=$((${EPOCHREALTIME/./} - ${1/./}))
	printf '%d.%02d' $((us / 1000000)) $((us % 1000000 / 10000))
}

# Copies the console, adding when (seen from here) the guest's /init began.
stamp_boot() {
	local t0=$1 line
	while IFS= read -r line; do
		printf '%s\n' "$line"
		[[ $line != *"SGK fact boot_s"* ]] || echo "SGK fact boot_wall_s $(seconds_since "$t0")"
	done
}

run_one() {
	local k=$1 log=$work/$1.log t0=$EPOCHREALTIME status=0
	if [ "$k" = host ]; then
		# The tree is bound on itself, so that the chroot's / is a mount
		# (unshare --mount-proc in the pidns check makes it private).
		# shellcheck disable=SC2016 # expanded by that shell
		timeout -k 5 "$timeout" unshare --mount --propagation private sh -c \
			'mount --bind "$1" "$1" && exec chroot "$1" /bin/env SGK_HOST=1 /bin/sh /checks.sh' sh "$root" \
			>"$log" 2>&1 </dev/null 8>&- || status=$?
	elif [ "$arch" = arm64 ]; then
		# TCG; pauth-impdef: QEMU's own pointer authentication, much
		# faster to emulate than the architected one.
		timeout -k 5 "$timeout" qemu-system-aarch64 -M virt -accel tcg,thread=multi -cpu max,pauth-impdef=on \
			-m 512 -smp 1 -nodefaults -display none -no-reboot -serial stdio -monitor none \
			-kernel "$(kdir "$k")/vmlinuz" -initrd "$work/initramfs.cpio" \
			-append "console=ttyAMA0 quiet panic=-1" 2>&1 </dev/null 8>&- |
			stamp_boot "$t0" >"$log" || status=$?
	else
		# TCG (KVM here stops on some guest instructions); without cx16:
		# QEMU 7.2's cmpxchg16b made 6.12's slab allocator double-fault
		# now and then (seen at boot and in bpftool, with -smp 1 or 2).
		# no_timer_check: on a loaded host, 5.10 and 6.1 found the emulated
		# timer too slow at boot and panicked.
		timeout -k 5 "$timeout" qemu-system-x86_64 -accel tcg,thread=multi -cpu max,cx16=off -m 512 -smp 1 \
			-nodefaults -display none -no-reboot -serial stdio -monitor none \
			-kernel "$(kdir "$k")/vmlinuz" -initrd "$work/initramfs.cpio" \
			-append "console=ttyS0 quiet panic=-1 no_timer_check" 2>&1 </dev/null 8>&- |
			stamp_boot "$t0" >"$log" || status=$?
	fi
	echo "SGK fact wall_s $(seconds_since "$t0")" >>"$log"
	echo "SGK fact exit_status $status" >>"$log"
}

# ---- evaluating

declare -A result detail fact expectation
for line in $(echo "$expected_failures" | awk 'NF && !/^#/ { print $1 "|" $2 }'); do
	expectation[${line/|//}]=$(echo "$expected_failures" | awk -v k="${line%|*}" -v c="${line#*|}" \
		'$1 == k && $2 == c { $1 = $2 = ""; sub(/^ +/, ""); print }')
done

# SGK lines anywhere in a line: the console starts with escape codes.
collect() {
	local k=$1 kind name rest
	while read -r kind name rest; do
		case $kind in
		check) result[$k/$name]=${rest%% *} detail[$k/$name]=${rest#* } ;;
		fact) fact[$k/$name]=$rest ;;
		esac
	done < <(tr -d '\r' <"$work/$k.log" | grep -ao 'SGK \(check\|fact\) .*' | cut -d' ' -f2-)
}

# verdict KERNEL CHECK: pass, xfail, skip, FAIL or XPASS (the last two fail
# the run).  No result at all (a guest that crashed or hung) is a FAIL even
# where a failure is expected: it is not the failure the table explains.
verdict() {
	local r=${result[$1/$2]:-none} want=${expectation[$(xkey "$1")/$2]:-}
	case $r/${want:+x} in
	PASS/) echo pass ;;
	PASS/x) echo XPASS ;;
	FAIL/x) echo xfail ;;
	SKIP/*) echo skip ;;
	*) echo FAIL ;;
	esac
}

fetch_kernels
make_initramfs
echo "kernels: initramfs $(($(stat -c %s "$work/initramfs.cpio") / 1024)) KiB from $build; checks: $checks" >&2

t0=$SECONDS
for k in "${kernels[@]}"; do
	if [ "$k" != host ] && [ ! -f "$(kdir "$k")/vmlinuz" ]; then
		echo "kernels: no kernel $k" >&2
		exit 3
	fi
	run_one "$k" &
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n || true
	done
done
wait
total=$((SECONDS - t0))

# The table docs/kernels.md shows: kernel x check, then the facts.
# shellcheck disable=SC2016 # the backquotes are Markdown's
declare -A label=([abort]='shim abort sweep' [ls]='`ls` attribution' [dead]='`sweep --dead`'
	[audit]='`audit` KiB/abort' [freed]='freed files leave at once'
	[freed-burst]='a burst of frees loses nothing' [gate]='gate exit codes' [pidns]='`audit` in a pid namespace'
	[node]="node mode: a pod's /dev/shm" [watch]='`watch`: programs without the shim'
	[watch-kprobe]='`watch --probe kprobe`')
declare -A suite=([5.10]=bullseye [6.1]=bookworm [6.12]=bookworm-backports)
arch_label='' user_mode=''
[ "$arch" = amd64 ] || arch_label=" $arch" user_mode=", $arch under qemu-aarch64 user mode"
markdown_table() {
	local k c v cell types head='| kernel |' rule='|---|'
	for c in $checks; do
		[ "$c" = facts ] && continue
		head="$head ${label[$c]:-$c} |" rule="$rule---|"
	done
	if [[ " $checks " == *" facts "* ]]; then
		head="$head tmpfs user xattrs | BTF | ctime tracepoints | kprobes | BPF program types that load |"
		rule="$rule---|---|---|---|---|"
	fi
	echo "$head"
	echo "$rule"
	for k in "${kernels[@]}"; do
		if [ "$k" = host ]; then
			printf '| host (%s%s) |' "$(uname -r)" "$user_mode"
		else
			printf '| %s%s (%s, %s) |' "$k" "$arch_label" "${suite[$k]}" "$(cat "$(kdir "$k")/version")"
		fi
		for c in $checks; do
			[ "$c" = facts ] && continue
			v=$(verdict "$k" "$c")
			case $v in
			pass) cell=yes ;;
			xfail) cell="no: ${expectation[$(xkey "$k")/$c]%%:*}" ;;
			XPASS) cell='yes (unexpected)' ;;
			skip) cell="skipped: ${detail[$k/$c]}" ;;
			*) cell="**FAIL**: ${detail[$k/$c]:-no result}" ;;
			esac
			printf ' %s |' "$cell"
		done
		if [[ " $checks " == *" facts "* ]]; then
			cell=${fact[$k/xattr]:-?} types=${fact[$k/bpf_loads]:-?}
			printf ' %s | %s | %s | %s | %s |' "${cell%%:*}" "${fact[$k/btf]:-?}" \
				"${fact[$k/ctime_tp]:-?}" "${fact[$k/kprobe_events]:-?}" "${types//,/, }"
		fi
		echo
	done
}

status=0
for k in "${kernels[@]}"; do
	collect "$k"
	[ "$k" = host ] && name="host $(uname -r)$user_mode" || name="$k$arch_label $(cat "$(kdir "$k")/version")"
	case ${fact[$k/exit_status]:-?} in
	0) how= ;;
	124 | 137) how=", cut short by --timeout $timeout" ;;
	*) how=", exit status ${fact[$k/exit_status]:-?}" ;;
	esac
	panic=$(tr -d '\r' <"$work/$k.log" | grep -ao 'Kernel panic - .*\|PANIC: .*' | head -n1 || true)
	[ -z "$panic" ] || how="$how, the guest kernel failed: $panic"
	# (The guest's own uptime at /init is in the log, but its clock is
	# not to be trusted under TCG on a loaded host: it ran fast or slow.)
	boot="QEMU start to /init ${fact[$k/boot_wall_s]:-?} s, "
	[ "$k" != host ] || boot=
	echo "== $name: ${boot}whole run ${fact[$k/wall_s]:-?} s$how"
	for c in $checks; do
		[ "$c" = facts ] && continue
		v=$(verdict "$k" "$c")
		case $v in FAIL | XPASS) status=1 ;; esac
		d=${detail[$k/$c]:-no result line: see $work/$k.log}
		case $v in
		xfail) d="$d (expected: ${expectation[$(xkey "$k")/$c]})" ;;
		XPASS) d="$d (expected to fail: ${expectation[$(xkey "$k")/$c]}: remove that line from scripts/kernels.sh)" ;;
		esac
		printf '   %-6s %-6s %s\n' "$c" "$v" "$d"
	done
	if [[ " $checks " == *" facts "* ]]; then
		printf '   facts  xattr %s; btf %s; ctime tracepoints %s; kprobe events %s; BPF loads %s; refuses %s\n' \
			"${fact[$k/xattr]:-?}" "${fact[$k/btf]:-?}" "${fact[$k/ctime_tp]:-?}" "${fact[$k/kprobe_events]:-?}" \
			"${fact[$k/bpf_loads]:-?}" "${fact[$k/bpf_refused]:-?}"
	fi
done
echo "kernels: ${#kernels[@]} kernel(s) in $total s; logs in $work"
if [ "$markdown" = 1 ]; then
	echo
	markdown_table
fi

exit "$status"
