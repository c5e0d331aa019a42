#!/usr/bin/env bash
# The PostgreSQL row of the shim's figures (docs/performance.md; run by
# scripts/bench.sh): pgbench's select-only TPS on a throwaway cluster where
# every query runs in a parallel worker (forced parallel mode) and every
# parallel query makes a /dev/shm/PostgreSQL.N segment (posix DSM).  The
# postmaster starts alternately without and with libshmguard.so preloaded;
# backends and parallel workers are its fork children, so they inherit it.
# Medians of each side, their ratio (the target: TPS within 1%).
#   scripts/bench-pgbench.sh [ROUNDS]   (runs a side, default 5)
# PG_SECONDS: length of each pgbench run (default 5: about a minute in all).
# As root the server runs as the postgres user (postgres refuses root).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh # scripts/deps.sh installs postgresql too

rounds=${1:-5}
seconds=${PG_SECONDS:-5}
shim=$PWD/build/shim/libshmguard.so
prefix="bench-pgbench-$$-"
abort_dir="/dev/shm/${prefix}abort"
. scripts/bench-common.sh # shimmed, median

# The newest installed PostgreSQL.
pg_bin=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
if [ ! -x "$pg_bin/pgbench" ]; then
	echo "bench-pgbench: no PostgreSQL in /usr/lib/postgresql (scripts/deps.sh installs it)" >&2
	exit 1
fi
pg_version=$(basename "$(dirname "$pg_bin")")
# PostgreSQL 16 renamed the setting that forces parallel plans.
if [ "$pg_version" -ge 16 ]; then force_parallel=debug_parallel_query; else force_parallel=force_parallel_mode; fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/${prefix}XXXXXX")
data=$tmp/data
segments=() # the PostgreSQL.N names our postmasters mapped
if [ "$(id -u)" -eq 0 ]; then
	chown postgres: "$tmp"
	as_pg() { (cd "$tmp" && setpriv --reuid=postgres --regid=postgres --init-groups "$@"); }
else
	as_pg() { (cd "$tmp" && "$@"); }
fi
cleanup() {
	if [ -f "$data/postmaster.pid" ]; then
		as_pg "$pg_bin/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	# A postmaster that died uncleanly leaves its segments behind.
	for s in "${segments[@]}"; do
		[ -e "/dev/shm/$s" ] && echo "bench-pgbench: removing $s, left by the server" >&2 && rm -f "/dev/shm/$s"
	done
	rm -rf "$tmp" "/dev/shm/$prefix"*
}
trap cleanup EXIT
fail() {
	echo "bench-pgbench: $*" >&2
	[ -f "$tmp/log" ] && tail -n 20 "$tmp/log" >&2
	exit 1
}

pg() { as_pg "$pg_bin/$1" "${@:2}"; }
sql() { pg psql -X -q -At -v ON_ERROR_STOP=1 -h "$tmp" -U postgres -d postgres -c "$1"; }
start() { "$@" "$pg_bin/pg_ctl" -D "$data" -l "$tmp/log" -w start >/dev/null || fail "the server did not start"; }
stop() { pg pg_ctl -D "$data" -m fast -w stop >/dev/null || fail "the server did not stop"; }

pg initdb -D "$data" -U postgres -A trust --no-sync >/dev/null
cat >>"$data/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$tmp'
fsync = off
dynamic_shared_memory_type = posix
min_dynamic_shared_memory = 0
$force_parallel = on
parallel_setup_cost = 0
parallel_tuple_cost = 0
min_parallel_table_scan_size = 0
max_parallel_workers_per_gather = 2
EOF
start as_pg
pg pgbench -h "$tmp" -U postgres -i -s 2 -q postgres >/dev/null 2>&1 || fail "pgbench -i failed"
stop

# One timed run under a freshly started postmaster (SIDE: without or with);
# its TPS in tps.  It proves what it measures: the shim is mapped in the
# postmaster exactly when it should be, DSM segments are /dev/shm files, and
# pgbench's query runs in a parallel worker (hence makes such a segment).
run() {
	local side=$1 pid maps out dsm
	if [ "$side" = with ]; then start shimmed as_pg; else start as_pg; fi
	pid=$(head -n 1 "$data/postmaster.pid")
	maps=$(cat "/proc/$pid/maps")
	if [ "$side" = with ]; then
		grep -qF "$shim" <<<"$maps" || fail "$shim is not mapped in the shimmed postmaster (pid $pid)"
	else
		! grep -q libshmguard <<<"$maps" || fail "libshmguard is mapped in the postmaster that should run without it"
	fi
	mapfile -t dsm < <(grep -o 'PostgreSQL\.[0-9]*$' <<<"$maps" | sort -u)
	[ ${#dsm[@]} -gt 0 ] || fail "the postmaster maps no /dev/shm/PostgreSQL.N segment: posix DSM is not in use"
	segments+=("${dsm[@]}")
	out=$(pg pgbench -h "$tmp" -U postgres -S -c "$(nproc)" -j "$(nproc)" -T "$seconds" postgres 2>&1) ||
		fail "pgbench failed: $out"
	grep -q '^number of failed transactions: 0 ' <<<"$out" || fail "pgbench had failed transactions: $out"
	tps=$(awk '/^tps = / { print $3 }' <<<"$out")
	# pgbench -S's query, with the same settings.
	out=$(sql "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT abalance FROM pgbench_accounts WHERE aid = 42")
	grep -q 'Workers Launched: [1-9]' <<<"$out" || fail "pgbench's query does not run in a parallel worker: $out"
	stop
	for s in "${dsm[@]}"; do
		[ ! -e "/dev/shm/$s" ] || fail "the stopped server left /dev/shm/$s"
	done
}

without=()
with=()
for ((i = 0; i < rounds; i++)); do
	run without
	without+=("$tps")
	run with
	with+=("$tps")
done
a=$(printf '%s\n' "${without[@]}" | median)
b=$(printf '%s\n' "${with[@]}" | median)
echo "PostgreSQL $pg_version pgbench -S, forced parallel queries" \
	"($rounds alternating runs a side of $seconds s, $(nproc) clients; medians):"
printf '  TPS without shim %8.1f   (runs: %s)\n' "$a" "$(printf '%.0f ' "${without[@]}" | sed 's/ $//')"
printf '  TPS with shim    %8.1f   (runs: %s)\n' "$b" "$(printf '%.0f ' "${with[@]}" | sed 's/ $//')"
printf '  with / without   %8.3f   (target: within 1%%)\n' "$(echo "$b / $a" | bc -l)"
