#!/usr/bin/env bash
# scripts/deps.sh's profiles: the demonstration installs what building and
# running it take, and no server, emulator or test tool; the test command
# installs all of that and the rest; the benchmarks' profile installs that
# and their peers and counters, which the tests do not need; the arm64
# profile what building takes and the cross build's, which no other
# profile installs (they add an architecture to the machine's dpkg).
# Usage: test_deps_profiles.sh DEPS_SH
set -euo pipefail
demo=$("$1" --list demo)
test=$("$1" --list test)
bench=$("$1" --list bench)
arm64=$("$1" --list arm64)
failed=0
for p in meson clang libbpf-dev libjansson-dev libmicrohttpd-dev libpcre2-dev; do
	grep -qx "$p" <<<"$demo" || { echo "FAIL  demo lacks $p, which the build needs"; failed=1; }
done
for p in nginx postgresql prometheus qemu-system-x86 valgrind libcriterion-dev lintian; do
	grep -qx "$p" <<<"$demo" && { echo "FAIL  demo installs $p, which only the tests need"; failed=1; }
	grep -qx "$p" <<<"$test" || { echo "FAIL  test lacks $p"; failed=1; }
done
while read -r p; do
	grep -qx "$p" <<<"$test" || { echo "FAIL  test lacks $p, which demo installs"; failed=1; }
done <<<"$demo"
for p in bpftrace linux-perf strace; do
	grep -qx "$p" <<<"$bench" || { echo "FAIL  bench lacks $p"; failed=1; }
	grep -qx "$p" <<<"$test" && { echo "FAIL  test installs $p, which only the benchmarks need"; failed=1; }
done
while read -r p; do
	grep -qx "$p" <<<"$bench" || { echo "FAIL  bench lacks $p, which test installs"; failed=1; }
done <<<"$test"
for p in gcc-aarch64-linux-gnu qemu-user-static qemu-system-arm libbpf-dev:arm64 libjansson-dev:arm64; do
	grep -qx "$p" <<<"$arm64" || { echo "FAIL  arm64 lacks $p"; failed=1; }
	grep -qx "$p" <<<"$bench" && { echo "FAIL  bench installs $p, which only the arm64 build needs"; failed=1; }
done
while read -r p; do
	grep -qx "$p" <<<"$arm64" || { echo "FAIL  arm64 lacks $p, which demo installs"; failed=1; }
done <<<"$demo"
grep -q ':arm64$' <<<"$bench" && { echo "FAIL  bench installs arm64 packages"; failed=1; }
[ "$("$1" --list test extra-package | tail -n1)" = extra-package ] || { echo "FAIL  extra packages are not added"; failed=1; }
[ $failed = 1 ] || echo "ok    demo: $(wc -l <<<"$demo") packages, test: $(wc -l <<<"$test"), bench: $(wc -l <<<"$bench"), arm64: $(wc -l <<<"$arm64")"
exit $failed
