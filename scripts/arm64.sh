#!/usr/bin/env bash
# arm64, proven by building and booting.  Cross-builds shmguard for arm64
# (scripts/cross/aarch64-linux-gnu.ini) in build-arm64/, then checks it:
# 1. the shim, the command, the test programs are arm64 ELF files, and
#    the BPF objects are built (against bpf/vmlinux/arm64/vmlinux.h);
# 2. under qemu-aarch64 user mode (binfmt_misc) on this machine's kernel:
#    the unit suite (meson test --suite unit: the Criterion tests of the
#    core, the shim's record and tracking, the auditor's engine, and the
#    checks of the build's files), with Debian's arm64 Criterion unpacked
#    into build-arm64-criterion/ (apt cannot install it beside the amd64
#    one); then the example pipeline (examples/shmpipe, a producer and a
#    consumer, every fourth of 40 requests aborted by its client, chunks
#    put after the abort) leaves its aborted requests' names without the
#    shim, and none under it, preloaded or started by `shmguard run`;
#    then the kernel matrix's shim and `ls` checks (scripts/kernels.sh
#    --kernels host).  `sweep --dead` cannot be checked there: QEMU answers a
#    program's reads of its own /proc/self/stat itself, with a start time
#    of its own reckoning, which the kernel's for the same pid is not (so
#    the unit suite leaves out the one case that compares the two,
#    orphan/gather_checks_the_inode_and_the_processes);
# 3. the kernel matrix in Debian's arm64 kernels 6.1 and 6.12 booted under
#    qemu-system-aarch64 (-M virt, TCG): every check, the auditor's
#    within 1%, sweep --dead and node mode included.
#
#   scripts/arm64.sh [--kernels 6.1,6.12] [--no-boot]
#
# --kernels  the arm64 kernels to boot (default 6.1,6.12)
# --no-boot  steps 1 and 2 only
#
# Installs what it needs first (scripts/deps.sh arm64), and registers
# qemu-aarch64 with binfmt_misc when it is not (Debian's
# /usr/lib/binfmt.d/qemu-aarch64.conf, as systemd-binfmt would at boot).
# Needs root.  The last line says PASS or FAIL, with each step's seconds.
# Exit status: 0 every check passed, 1 one did not, 2 bad usage, 3 not root.
set -euo pipefail
cd "$(dirname "$0")/.."

kernels=6.1,6.12 boot=1
while [ $# -gt 0 ]; do
	case $1 in
	--kernels) kernels=${2:?}; shift ;;
	--no-boot) boot=0 ;;
	*) sed -n '/^#   scripts/,/^# --no-boot/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
	esac
	shift
done
if [ "$(id -u)" -ne 0 ]; then
	echo "arm64: needs root (binfmt_misc, the kernel matrix)" >&2
	exit 3
fi

out=build-arm64
status=0 times=''
t0=$SECONDS
step() { times="$times${times:+, }$1 $((SECONDS - t0)) s"; t0=$SECONDS; }
fail() { echo "arm64: FAIL $*" >&2; status=1; }

scripts/deps.sh arm64
step deps

# ---- Criterion for arm64, in a sysroot of its own: libcriterion3:arm64
# needs a libnanomsg5:arm64 of another version than the machine's amd64
# one, so apt would replace the amd64 Criterion.  Its package and the
# libraries it needs that the machine has not for arm64 are downloaded
# and unpacked; its .pc file points there, without the private
# requirements (static linking only) it has no .pc files for.
sysroot=$PWD/build-arm64-criterion
libdir=$sysroot/usr/lib/aarch64-linux-gnu
if [ ! -f "$libdir/pkgconfig/criterion.pc" ]; then
	rm -rf "$sysroot"
	mkdir -p "$sysroot/debs"
	# shellcheck disable=SC2046 # one package name a word
	(cd "$sysroot/debs" && apt-get -qq -o APT::Sandbox::User=root download libcriterion-dev:arm64 $(
		apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
			--no-replaces --no-enhances --no-pre-depends libcriterion3:arm64 | grep -v '^[ <]' | sort -u |
			while read -r p; do
				dpkg-query -W -f='${Status}' "${p%:arm64}:arm64" 2>/dev/null | grep -q ' ok installed' ||
					echo "${p%:arm64}:arm64"
			done))
	for deb in "$sysroot"/debs/*.deb; do
		dpkg-deb -x "$deb" "$sysroot"
	done
	sed -i "s|^prefix=/usr\$|prefix=$sysroot/usr|; /^Requires.private:/d; /^Libs.private:/d" "$libdir/pkgconfig/criterion.pc"
	rm -rf "$sysroot/debs"
fi

# ---- 1. the cross build (its programs find the sysroot's libraries by
# their RPATH, which, unlike a RUNPATH, serves Criterion's own too)
if [ -f "$out/build.ninja" ] && ! grep -q 'dependency criterion found: YES' "$out/meson-logs/meson-log.txt"; then
	rm -rf "$out"
fi
if [ ! -f "$out/build.ninja" ]; then
	link="-Wl,-rpath-link,$libdir -Wl,--disable-new-dtags,-rpath,$libdir"
	meson setup "$out" --cross-file scripts/cross/aarch64-linux-gnu.ini -Dtests=enabled \
		-Dpkg_config_path="$libdir/pkgconfig" -Dc_link_args="$link" -Dcpp_link_args="$link" >/dev/null
fi
meson compile -C "$out" >/dev/null
step build
# e_machine 183: EM_AARCH64.
for f in shim/libshmguard.so cli/shmguard examples/shmpipe tests/shmtool tests/leakgen; do
	[ "$(od -An -tu2 -j18 -N2 "$out/$f" | tr -d ' ')" = 183 ] || fail "$out/$f is not an arm64 ELF file"
done
for f in bpf/audit.bpf.o bpf/audit_freed.bpf.o; do
	[ -s "$out/$f" ] || fail "$out/$f was not built"
done
echo "arm64: built in $out: the shim, the command, the auditor and its BPF objects, the test programs"

# ---- 2. qemu-aarch64 user mode
binfmt=/proc/sys/fs/binfmt_misc
if [ ! -e "$binfmt/qemu-aarch64" ]; then
	mountpoint -q "$binfmt" || mount -t binfmt_misc binfmt_misc "$binfmt"
	cat /usr/lib/binfmt.d/qemu-aarch64.conf >"$binfmt/register"
	echo "arm64: registered qemu-aarch64 with binfmt_misc"
fi

# The unit suite but its checks of contrib/'s files, which are the same on
# every architecture (and need the test profile's promtool and PyYAML).
mapfile -t unit < <(meson test -C "$out" --list --suite unit 2>/dev/null | sed -n 's|^shmguard:unit / ||p' |
	grep -vx 'contrib_prometheus\|manifests')
CRITERION_TEST_PATTERN='!(orphan/gather_checks_the_inode_and_the_processes)' \
	meson test -C "$out" --print-errorlogs --logbase arm64-unit "${unit[@]}" || fail "the unit suite"
awk '/Synthesis: Tested:/ { for (i = 1; i <= NF; i++) { if ($i == "Passing:") p += $(i + 1); if ($i == "Failing:") f += $(i + 1) } }
	END { printf "arm64: user mode: the unit suite'"'"'s Criterion cases: %d passed, %d failed\n", p, f }' \
	"$out/meson-logs/arm64-unit.txt"

# The pipeline: the names its aborted requests leave in /dev/shm, without
# the shim, preloaded, and by shmguard run.  Only this run's names
# (prefix) are looked at and removed.
prefix=sga-$$-
abort_dir=/dev/shm/${prefix}abort
patterns='{req}_{int}_{int};shm_{req}_{int}_{int}_lockfile.lock'
left() { find /dev/shm -maxdepth 1 \( -name "${prefix}[0-9]*" -o -name "shm_${prefix}[0-9]*" \) | wc -l; }
clean() { find /dev/shm -maxdepth 1 \( -name "${prefix}*" -o -name "shm_${prefix}*" \) -print0 | xargs -0r rm -rf; }
trap clean EXIT
pipeline() {
	"$@" "$out/examples/shmpipe" --prefix "$prefix" --requests 40 --abort-every 4 --late-puts \
		--abort-dir "$abort_dir" >/dev/null || fail "the pipeline failed: $*"
}
pipeline env
without=$(left)
clean
pipeline env SHMGUARD_PATTERNS="$patterns" SHMGUARD_ABORT_DIR="$abort_dir" LD_PRELOAD="$PWD/$out/shim/libshmguard.so"
preloaded=$(left)
clean
pipeline "$out/cli/shmguard" run --patterns "$patterns" --abort-dir "$abort_dir" --
run=$(left)
clean
if [ "$without" -eq 0 ] || [ "$preloaded" -ne 0 ] || [ "$run" -ne 0 ]; then
	fail "the pipeline's aborted requests left $without names without the shim, $preloaded preloaded," \
		"$run under shmguard run (expected some, then none, none)"
else
	echo "arm64: user mode: the pipeline's aborts left $without names without the shim, none under it (preloaded, shmguard run)"
fi
scripts/kernels.sh --build "$out" --kernels host --checks abort,ls || status=1
step user-mode

# ---- 3. Debian's arm64 kernels under qemu-system-aarch64
if [ "$boot" = 1 ]; then
	# TCG on the loaded 2-CPU VM, both at once: 56 to 117 s a kernel.
	scripts/kernels.sh --build "$out" --kernels "$kernels" --timeout 600 || status=1
	step "boot $kernels"
fi

if [ "$status" = 0 ]; then
	echo "arm64: PASS ($times)"
else
	echo "arm64: FAIL ($times)"
fi
exit "$status"
