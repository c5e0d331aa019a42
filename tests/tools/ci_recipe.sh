#!/bin/sh
# The CI gate exactly as README.md and docs/github-workflow.yml give it,
# taken from those files, run on a fresh machine's /dev/shm (a private
# mount namespace with an empty tmpfs): a load test that leaks one aborted
# request's file must fail the gate (1), one that leaks nothing pass (0),
# and the abort directory the run made must be gone afterwards (one that
# was there before is kept).
#
#   ci_recipe.sh SHMGUARD SOURCE_DIR      (root, BPF; exit 77: skipped)
set -eu

shmguard=$1
src=$2

. "$src/tests/tools/skip.sh"
[ "$(id -u)" = 0 ] || skip "needs root (BPF, a private mount namespace)"

# The shell command that starts with 'sudo' and names 'shmguard audit', with
# its continuation lines, as the file spells it.
extract() {
	awk '
		{ group = group $0 "\n" }
		/\\$/ { next }
		group ~ /sudo/ && group ~ /shmguard audit/ { printf "%s", group; exit }
		{ group = "" }
	' "$1"
}

work=$(mktemp -d /tmp/sg-ci-recipe.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/scripts"
ln -s "$shmguard" "$work/bin/shmguard"
# sudo as a root user's: its options (--preserve-env=...) mean nothing here.
cat >"$work/bin/sudo" <<'EOF'
#!/bin/sh
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
exec "$@"
EOF
chmod +x "$work/bin/sudo"

# A load test: request req1 writes 64 KiB and its client aborts it. With
# "leak", nothing removes the file; otherwise the pipeline consumed it
# before the abort. The marker is written by 'shmguard abort', which reads
# SHMGUARD_ABORT_DIR from the auditor.
loadtest() {
	cat <<EOF
#!/bin/sh
set -e
head -c 65536 /dev/zero >/dev/shm/req1_0_0
[ "$1" = leak ] || rm /dev/shm/req1_0_0
shmguard abort req1
sleep 3
EOF
}

fails=0
for source in README.md docs/github-workflow.yml; do
	cmd=$(extract "$src/$source")
	case $cmd in
	*"shmguard audit"*"--abort-dir /dev/shm/shmguard-abort"*) ;;
	*) echo "FAIL: no 'sudo shmguard audit ... --abort-dir /dev/shm/shmguard-abort' command in $source" >&2
	   exit 1 ;;
	esac
	for mode in leak clean kept; do
		loadtest "$mode" >"$work/loadtest.sh"
		cp "$work/loadtest.sh" "$work/scripts/loadtest.sh"
		chmod +x "$work/loadtest.sh" "$work/scripts/loadtest.sh"
		want=0
		[ "$mode" != leak ] || want=1
		status=0
		# A fresh /dev/shm: nothing there, no abort directory.
		unshare -m --propagation private sh -c '
			mount -t tmpfs -o mode=1777 sg-ci-recipe /dev/shm || exit 99
			[ "$3" != kept ] || mkdir /dev/shm/shmguard-abort
			cd "$1" && PATH="$1/bin:$PATH" && export PATH
			eval "$2" >"$1/out" 2>&1 || status=$?
			if [ "$3" = kept ]; then
				[ -d /dev/shm/shmguard-abort ] || { echo "the abort directory was removed" >>"$1/out"; exit 98; }
			elif [ -e /dev/shm/shmguard-abort ]; then
				echo "the abort directory was left" >>"$1/out"; exit 98
			fi
			exit ${status:-0}
		' sh "$work" "$cmd" "$mode" || status=$?
		[ "$status" != 99 ] || skip "cannot mount a tmpfs on /dev/shm in a private mount namespace"
		if [ "$status" = 3 ]; then
			cat "$work/out" >&2
			skip "no tracing here (BPF)"
		fi
		if [ "$status" != "$want" ]; then
			echo "FAIL: $source's command, load test '$mode': exit $status, expected $want" >&2
			echo "  $cmd" >&2
			sed 's/^/  | /' "$work/out" >&2
			fails=$((fails + 1))
		else
			echo "ok: $source's command, load test '$mode': exit $status"
		fi
	done
done
[ "$fails" = 0 ]
