#!/usr/bin/env bash
# Fuzzing with libFuzzer (clang, AddressSanitizer, UndefinedBehaviorSanitizer)
# of everything that parses outside input: name patterns, SHMGUARD_* values,
# tags and marker names, ownership journals, the auditor's events.  Corpora: tests/fuzz/corpus/.
#   scripts/fuzz.sh --seconds N [TARGET...]   each target for N seconds
#   scripts/fuzz.sh --runs N [TARGET...]      each target for N executions
# Targets: patterns config tag journal audit_events (default: all).  Builds and
# findings go to $FUZZ_OUT (default build-fuzz/); a finding fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh libclang-rt-14-dev

limit=(-max_total_time=10)
case "${1:-}" in
--seconds) limit=(-max_total_time="$2"); shift 2 ;;
--runs) limit=(-runs="$2"); shift 2 ;;
esac
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(patterns config tag journal audit_events)

out=$(realpath -m "${FUZZ_OUT:-build-fuzz}")
# A clang build of its own: the targets and the code they reach are built by
# meson (tests/fuzz/meson.build) with coverage instrumentation and sanitizers.
if [ ! -f "$out/build.ninja" ]; then
	CC=clang meson setup "$out" -Dfuzz=enabled -Dtests=disabled \
		-Db_sanitize=address,undefined -Db_lundef=false >/dev/null
fi
# ninja, not `meson compile TARGET`: ninja first brings build.ninja up to
# date, so a target added since the build was configured is found.
if ! ninja -C "$out" "${targets[@]/#/tests/fuzz/fuzz_}" >"$out/compile.log" 2>&1; then
	cat "$out/compile.log" >&2
	echo "fuzz.sh: building the targets failed" >&2
	exit 1
fi
for t in "${targets[@]}"; do
	work="$out/corpus_$t"
	mkdir -p "$work"
	echo "== fuzz_$t ${limit[*]}"
	# New inputs go to the scratch corpus; the repo's seeds are only read.
	status=0
	(cd "$out" && ASAN_OPTIONS=detect_leaks=1 "./tests/fuzz/fuzz_$t" "${limit[@]}" -print_final_stats=1 \
		"corpus_$t" "$OLDPWD/tests/fuzz/corpus/$t") >"$out/fuzz_$t.log" 2>&1 || status=$?
	grep -E "^(stat::number_of_executed_units|Done|==.*ERROR|SUMMARY|artifact)" "$out/fuzz_$t.log" || true
	if [ "$status" -ne 0 ]; then
		echo "fuzz.sh: fuzz_$t found a problem (exit $status); its log: $out/fuzz_$t.log" >&2
		exit 1
	fi
done
