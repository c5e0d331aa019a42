#!/usr/bin/env bash
# Install the Debian 12 packages shmguard needs, but only those that are
# missing: a machine that has them all is left alone.
#
#   scripts/deps.sh [--list] [demo|test|bench|arm64] [PACKAGE]...
#
# demo: what building shmguard and running scripts/demo.sh take, nothing
#       more (no server is installed, let alone started);
# test: that, and everything scripts/test.sh runs against: the test
#       framework, the servers the integration tests drive (nginx,
#       PostgreSQL, Prometheus), QEMU for the kernel matrix, the packaging
#       tools of the install test.  The default.
# bench: that, and what the benchmarks (scripts/bench.sh, bench-audit.sh)
#       compare against or count with: bpftrace, perf, strace.
# arm64: what building takes, and the arm64 cross build and its checks
#       (scripts/arm64.sh): the cross compiler, Debian's arm64 libraries
#       through multiarch (the machine's dpkg is given the arm64
#       architecture), qemu-user-static and qemu-system-arm.  Asked for
#       only by scripts/arm64.sh.
# Extra package names (what a benchmark compares against) may follow.
# --list prints the profile's packages, one a line, and installs nothing.
set -euo pipefail

build=(
	meson ninja-build pkg-config gcc libc6-dev clang llvm
	libbpf-dev bpftool libelf-dev zlib1g-dev
	libjansson-dev libmicrohttpd-dev libpcre2-dev systemtap-sdt-dev
)
test=(
	g++ libcriterion-dev
	python3 attr util-linux bc valgrind librsvg2-bin
	prometheus curl python3-junitparser python3-yaml
	qemu-system-x86 busybox-static
	nginx postgresql
	debhelper dpkg-dev scdoc lintian systemd
)
# The real-runtime tests (tests/containers): podman, with runc as its
# runtime and catatonit for its pause image (tests/containers/containers.conf).
test+=(podman runc catatonit)
# The programs whose orphans sweep --dead reclaims (tests/integration/test_orphans.c).
test+=(openmpi-bin python3-mpi4py gstreamer1.0-tools gstreamer1.0-plugins-bad)
# The benchmarks' peers and counters (instructions: perf, or valgrind's
# callgrind, which the tests install, where the machine has no counters).
bench=(bpftrace linux-perf strace)
# The arm64 cross build (g++ for the tests' C++ program).  Never
# libcriterion-dev:arm64: it cannot be installed beside the amd64 one
# (their libnanomsg5 differ in version); scripts/arm64.sh unpacks it into
# a sysroot of its own.
arm64=(
	gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user-static qemu-system-arm
	libc6-dev:arm64 libbpf-dev:arm64 libelf-dev:arm64 zlib1g-dev:arm64
	libjansson-dev:arm64 libmicrohttpd-dev:arm64 libpcre2-dev:arm64 systemtap-sdt-dev:arm64
)
list=0
if [ "${1:-}" = --list ]; then
	list=1
	shift
fi
profile=test
case ${1:-} in
demo | test | bench | arm64) profile=$1; shift ;;
esac
packages=("${build[@]}")
case $profile in
test) packages+=("${test[@]}") ;;
bench) packages+=("${test[@]}" "${bench[@]}") ;;
arm64) packages+=("${arm64[@]}") ;;
esac
packages+=("$@")
if [ $list = 1 ]; then
	printf '%s\n' "${packages[@]}"
	exit 0
fi

missing=()
for p in "${packages[@]}"; do
	# (A package held at its version is "hold ok installed".)
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q ' ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "shmguard: installing missing packages ($profile): ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
	sudo=sudo
else
	sudo=
fi
if [ "$profile" = arm64 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
	$sudo dpkg --add-architecture arm64
fi
$sudo apt-get update -qq
# --no-remove: a package of another architecture that cannot be installed
# beside one of this machine's must fail here, never replace it.
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends --no-remove "${missing[@]}" >/dev/null
