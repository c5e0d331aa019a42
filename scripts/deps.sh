#!/usr/bin/env bash
# Install the Debian 12 packages shmguard needs to build, test and demonstrate,
# but only those that are missing: a machine that has them all is left alone.
# Extra package names (what a benchmark compares against) may follow.
set -euo pipefail

packages=(
	meson ninja-build pkg-config gcc g++ libc6-dev clang llvm
	libbpf-dev bpftool libelf-dev zlib1g-dev
	libjansson-dev libmicrohttpd-dev libcriterion-dev systemtap-sdt-dev
	python3 attr util-linux bc valgrind librsvg2-bin
	prometheus curl python3-junitparser
	qemu-system-x86 busybox-static
	libpcre2-dev nginx python3-yaml postgresql
	"$@"
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "shmguard: installing missing packages: ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
	sudo=sudo
else
	sudo=
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
