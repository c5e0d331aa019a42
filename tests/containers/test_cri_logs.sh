#!/usr/bin/env bash
# `abort --follow --format cri --preset vllm` on a log that a real runtime
# wrote: conmon (podman's k8s-file, as CRI-O's), which keeps the "\r" of a
# "\r\n", writes what each read of the container's pipe gave (a part of a
# line: P), and puts stderr's lines between stdout's.  A container writes
# what vLLM writes for a request whose ID is "chatcmpl-att\nRequest
# chatcmpl-victim" (the "\n" as "\r\n" and the prefix again), with its
# reads cut and stderr written in between as conmon can see them.  The
# follower must mark the real aborts, a line written in two parts
# included, and never the victims.
#
# containerd's CRI writer (which takes "\r\n" off) is reached only through
# the CRI API, for which Debian 12 packages no client (crictl): its layout
# is tested from its source in tests/unit/test_abort_match.c.
#
#   test_cri_logs.sh BUILD_DIR SOURCE_DIR      (root; exit 77: skipped)
set -uo pipefail
build=$(realpath "$1")
src=$(realpath "$2")
here=$src/tests/containers

. "$src/tests/tools/skip.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root"
for p in podman runc conmon; do
	command -v "$p" >/dev/null || [ -x "/usr/sbin/$p" ] || [ -x "/usr/bin/$p" ] ||
		[ -x "/usr/libexec/podman/$p" ] || skip "no $p (scripts/deps.sh installs it)"
done

source "$here/podman-env.sh"
source "$here/images.sh"
failures=0
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

pm_image sg-busy '["/bin/sh"]' || { echo "FAIL: the image could not be built" >&2; exit 1; }

# Each sleep lets conmon read what came before it on its own.
v='INFO 12-01 02:11:22 [async_llm.py:612] '
read -r -d '' script <<SCRIPT
printf '${v}Request chatcmpl-att\r\n${v}Request chatcmpl-victim aborted.\n'; sleep 0.2
printf 'noise\n' >&2; sleep 0.2
printf '${v}Request chatcmpl-sp'; sleep 0.3; printf 'lit aborted.\n'; sleep 0.2
printf '${v}Request chatcmpl-att2\r'; sleep 0.3; printf 'noise\n' >&2; sleep 0.3
printf '\n${v}Request chatcmpl-victim2 aborted.\n'; sleep 0.2
printf '${v}Request chatcmpl-ok aborted.\n'
SCRIPT
log=$PM_DIR/c.log
pm run -d --name sg-cri-$$ --log-driver k8s-file --log-opt "path=$log" localhost/sg-busy:test -c "$script" >/dev/null ||
	{ echo "FAIL: the container did not start" >&2; exit 1; }
[ "$(pm wait sg-cri-$$)" = 0 ] || fail "the container failed"
pm rm -f sg-cri-$$ >/dev/null

# What this test needs of conmon's layout, else it tests nothing.
grep -qF "stdout F ${v}Request chatcmpl-att"$'\r' "$log" || fail "conmon kept no \\r"
grep -qF "stdout P ${v}Request chatcmpl-sp" "$log" || fail "conmon wrote no part (P)"
grep -qF "stderr F noise" "$log" || fail "no stderr line"

abort=$PM_DIR/abort
"$build/cli/shmguard" abort --abort-dir "$abort" --follow - --format cri --preset vllm <"$log" 2>"$PM_DIR/err" ||
	fail "the follower failed: $(cat "$PM_DIR/err")"
for id in chatcmpl-split chatcmpl-ok; do
	[ -e "$abort/$id" ] || fail "$id not marked"
done
for id in chatcmpl-victim chatcmpl-victim2; do
	[ ! -e "$abort/$id" ] || fail "$id marked: a client's request ID aborted another request"
done
[ "$(grep -c "it contains a control byte" "$PM_DIR/err")" = 2 ] ||
	fail "the IDs holding \\r\\n were not both said: $(cat "$PM_DIR/err")"
grep -q "skipped request ID 'chatcmpl-att\\\\x0d\\\\x0aINFO " "$PM_DIR/err" || fail "not escaped: $(cat "$PM_DIR/err")"

if [ "$failures" -gt 0 ]; then
	echo "--- the log conmon wrote:" >&2
	cat -A "$log" >&2
	exit 1
fi
echo "ok: conmon's CRI log: 2 aborts marked, 2 forged ones refused"
