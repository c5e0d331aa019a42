#!/usr/bin/env bash
# Install the Debian 12 packages shmguard needs, but only those that are
# missing: a machine that has them all is left alone.
#
#   scripts/deps.sh [--list] [demo|test|bench] [PACKAGE]...
#
# demo: what building shmguard and running scripts/demo.sh take, nothing
#       more (no server is installed, let alone started);
# test: that, and everything scripts/test.sh runs against: the test
#       framework, the servers the integration tests drive (nginx,
#       PostgreSQL, Prometheus), QEMU for the kernel matrix, the packaging
#       tools of the install test.  The default.
# bench: that, and what the benchmarks (scripts/bench.sh, bench-audit.sh)
#       compare against or count with: bpftrace, perf, strace.
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
# The manifests rendered with kustomize (kubectl kustomize) and validated
# against the Kubernetes API schema with node (tests/tools/check_manifests.py).
# A kubectl or an npm installed already (another vendor's package owns
# their names) serves as well.
command -v kubectl >/dev/null || test+=(kubernetes-client)
command -v npm >/dev/null || test+=(npm)
# The programs whose orphans sweep --dead reclaims (tests/integration/test_orphans.c).
test+=(openmpi-bin python3-mpi4py gstreamer1.0-tools gstreamer1.0-plugins-bad)
# The benchmarks' peers and counters (instructions: perf, or valgrind's
# callgrind, which the tests install, where the machine has no counters).
bench=(bpftrace linux-perf strace)
list=0
if [ "${1:-}" = --list ]; then
	list=1
	shift
fi
profile=test
case ${1:-} in
demo | test | bench) profile=$1; shift ;;
esac
packages=("${build[@]}")
[ "$profile" = demo ] || packages+=("${test[@]}")
[ "$profile" != bench ] || packages+=("${bench[@]}")
packages+=("$@")
if [ $list = 1 ]; then
	printf '%s\n' "${packages[@]}"
	exit 0
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "shmguard: installing missing packages ($profile): ${missing[*]}" >&2
	if [ "$(id -u)" -ne 0 ]; then
		sudo=sudo
	else
		sudo=
	fi
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Kubernetes API schema of the manifests' offline validation: the npm
# package kubernetes-models, at the versions tests/tools/k8s-schema's
# package-lock.json pins, into that directory's node_modules.
schema=$(cd "$(dirname "$0")/../tests/tools/k8s-schema" && pwd)
if [ "$profile" != demo ] && [ ! -d "$schema/node_modules/kubernetes-models" ]; then
	echo "shmguard: installing the Kubernetes API schema (npm ci in $schema)" >&2
	npm ci --prefix "$schema" --no-audit --no-fund >/dev/null
fi
