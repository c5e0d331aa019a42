#!/usr/bin/env bash
# The auditor over a long run (issue 19 §5): a system-wide `shmguard audit
# --listen` (scraped every 15 s, as Prometheus would) while a load makes
# about 2,000 aborted requests a minute and 300 files a second, created and
# removed (100 requests a second of 3 files; one in three aborted, one
# aborted request in ten leaving its files for 5 s, past the grace; markers
# removed after 30 s, as their TTL would), on a /dev/shm of its own (a
# tmpfs in a mount namespace of its own).  The auditor's RSS is sampled
# every 10 s; after the warm-up (6 minutes, or a quarter of the run, at most
# 10 minutes) its slope is printed in MiB/h, with the abort records the
# metrics say it holds.  Needs root; not run by the tests
# (docs/performance.md has the figures).
#   scripts/soak.sh [--minutes N]   (default 40)
set -euo pipefail
cd "$(dirname "$0")/.."

# A mount namespace of its own with a tmpfs of its own on /dev/shm: the
# auditor follows that root, so other programs' files do not count in its
# RSS (it is still system-wide: every process of the machine is traced).
if [ -z "${SOAK_PRIVATE_SHM:-}" ]; then
	exec unshare --mount --propagation private env SOAK_PRIVATE_SHM=1 "$0" "$@"
fi
mount -t tmpfs -o size=1g,mode=1777 soak /dev/shm

minutes=40
if [ "${1:-}" = --minutes ]; then
	minutes=${2:?--minutes needs a number}
	shift 2
fi
[[ $minutes =~ ^[0-9]+$ && $minutes -ge 2 ]] || { echo "soak.sh: --minutes N, N >= 2" >&2; exit 2; }
scripts/build.sh

cli=build/cli/shmguard
prefix="soak-$$-"
abort_dir="/dev/shm/${prefix}abort"
samples="/tmp/${prefix}rss.txt"
auditor_pid= load_pid=
remove_files() { (shopt -s nullglob && cd /dev/shm && printf '%s\0' "$1"* | xargs -0r rm -rf); }
cleanup() {
	[ -n "$load_pid" ] && kill "$load_pid" 2>/dev/null || true
	[ -n "$auditor_pid" ] && kill -INT "$auditor_pid" 2>/dev/null && wait "$auditor_pid" 2>/dev/null || true
	remove_files "$prefix"
	rm -f "$samples" "/tmp/${prefix}audit.err"
}
trap cleanup EXIT
mkdir -p "$abort_dir"

# --own-namespace: this /dev/shm alone, not every pod's of the machine (node mode).
"$cli" audit --own-namespace --abort-dir "$abort_dir" --patterns "{req}_{int}_{int}" --grace 2 --listen 127.0.0.1:0 \
	>/dev/null 2>"/tmp/${prefix}audit.err" &
auditor_pid=$!
url=
for _ in $(seq 100); do
	url=$(sed -n 's/^shmguard audit: serving metrics on \(http:[^ ]*\)$/\1/p' "/tmp/${prefix}audit.err")
	[ -n "$url" ] && curl -sf --noproxy '*' "$url" >/dev/null && break
	sleep 0.2
done
[ -n "$url" ] || { echo "soak.sh: the auditor did not start:" >&2; cat "/tmp/${prefix}audit.err" >&2; exit 1; }

python3 - "$prefix" "$abort_dir" <<'EOF' &
import os, sys, time
prefix, abort_dir = sys.argv[1], sys.argv[2]
page = b"x" * 4096
leaked, markers = [], []  # (when to remove, paths)
n, start = 0, time.monotonic()
while True:
    second = time.monotonic()
    for _ in range(100):
        req = "%sr%d" % (prefix, n)
        paths = ["/dev/shm/%s_%d_0" % (req, k) for k in range(3)]
        for p in paths:
            fd = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
            os.write(fd, page)
            os.close(fd)
        if n % 3 == 0:  # aborted
            open(os.path.join(abort_dir, req), "w").close()
            markers.append((second + 30, os.path.join(abort_dir, req)))
            if n % 30 == 0:
                leaked.append((second + 5, paths))
            else:
                for p in paths:
                    os.unlink(p)
        else:
            for p in paths:
                os.unlink(p)
        n += 1
    now = time.monotonic()
    while leaked and leaked[0][0] <= now:
        for p in leaked.pop(0)[1]:
            os.unlink(p)
    while markers and markers[0][0] <= now:
        os.unlink(markers.pop(0)[1])
    time.sleep(max(0, second + 1 - time.monotonic()))
EOF
load_pid=$!

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$auditor_pid/status"; }
metric() { curl -sf --noproxy '*' "$url" | awk -v m="$1" '$1 == m { print $2 }'; }
# The warm-up: until the listed window of aborts is full (--abort-detail's
# 1000 that left files take 5 minutes at 200 a minute), a quarter of the run
# if that is longer, at most 10 minutes.
warmup=$((minutes * 60 / 4))
[ "$warmup" -ge 360 ] || warmup=360
[ "$warmup" -le 600 ] || warmup=600
[ "$warmup" -lt $((minutes * 60 - 60)) ] || { echo "soak.sh: --minutes $minutes leaves no time after the warm-up" >&2; exit 2; }
echo "soak: ${minutes} min, warm-up ${warmup} s; auditor pid $auditor_pid, metrics $url"
: >"$samples"
t0=$(date +%s)
next_scrape=0
while :; do
	t=$(($(date +%s) - t0))
	[ "$t" -lt $((minutes * 60)) ] || break
	kill -0 "$load_pid" 2>/dev/null || { echo "soak.sh: the load stopped" >&2; exit 1; }
	rss=$(rss_kib)
	[ "$t" -lt "$warmup" ] || echo "$t $rss" >>"$samples"
	if [ "$t" -ge "$next_scrape" ]; then
		next_scrape=$((t + 15))
		body=$(curl -sf --noproxy '*' "$url")
		[ $((t % 60)) -lt 15 ] && printf 'soak: %4d s  RSS %6d KiB  aborts %s  abort records %s  remembered %s\n' "$t" "$rss" \
			"$(awk '$1 == "shmguard_aborts_total" { print $2 }' <<<"$body")" \
			"$(awk '$1 == "shmguard_abort_records" { print $2 }' <<<"$body")" \
			"$(awk '$1 == "shmguard_aborts_remembered" { print $2 }' <<<"$body")"
	fi
	sleep 10
done
# The least-squares slope of RSS (KiB) over time (s), in MiB an hour.
awk '{ n++; sx += $1; sy += $2; sxx += $1 * $1; sxy += $1 * $2 }
	END {
		if (n < 3) { print "soak: too few samples after the warm-up"; exit 1 }
		slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
		printf "soak: RSS slope after warm-up %.2f MiB/h (%d samples, %.1f to %.1f MiB)\n", slope * 3600 / 1024, n,
			first / 1024, last / 1024
	}
	NR == 1 { first = $2 } { last = $2 }' "$samples"
echo "soak: dropped events $(metric shmguard_dropped_events_total), measured $(metric shmguard_aborts_measured_total)"
