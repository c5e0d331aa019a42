#!/bin/sh
# The kernel matrix's checks (scripts/kernels.sh), run by busybox sh as the
# initramfs's /init inside a Debian kernel under QEMU, or on the host in a
# chroot of the same tree with a mount namespace of its own.  Each check
# prints one line on stdout (the serial console):
#   SGK check NAME PASS|FAIL|SKIP what was seen
# and facts about the kernel as "SGK fact NAME VALUE"; "SGK done" ends a run
# that was not cut short.  /sgk.env (written by kernels.sh) names the checks
# to run (SGK_CHECKS) and extra `shmguard audit` options (SGK_AUDIT_ARGS).
# Everything happens in a private /dev/shm, so the checks may sweep it whole.
# The build tree's layout (sg/cli/shmguard finds sg/shim/libshmguard.so).
PATH=/bin:/sg/cli:/sg/tests:/sg/examples:/sg
export PATH
SGK_CHECKS="facts abort ls dead audit gate"
SGK_AUDIT_ARGS=
audit_in=
# shellcheck disable=SC1091 # written by kernels.sh
[ -r /sgk.env ] && . /sgk.env

# On the host (SGK_HOST=1) this /dev/shm lives in our own mount namespace:
# processes sweep cannot read (a sandbox's init) cannot be using its files.
sweep_args=
[ -n "${SGK_HOST:-}" ] && sweep_args=--ignore-unreadable

PATTERNS='{req}_{int}_{int};shm_{req}_{int}_{int}_lockfile.lock'
W=/tmp/sgk            # scratch: fifos, outputs, reports
AD=$W/abort           # abort markers, off the shm root as the auditor wants

mounts() {
	mkdir -p /proc /sys /dev /tmp
	[ -e /proc/self ] || mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	mount -t devtmpfs devtmpfs /dev 2>/dev/null
	mkdir -p /dev/shm
	mount -t tmpfs -o mode=1777 tmpfs /dev/shm
	mount -t tmpfs tmpfs /tmp
	mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
	mount -t bpf bpf /sys/fs/bpf 2>/dev/null
	mkdir -p "$AD"
}

say() { echo "SGK $*"; }
result() { say check "$@"; }

# Seconds since boot, to the hundredth.
now() { read -r up _ </proc/uptime && echo "$up"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f s", b - a }'; }

# wait_for SECONDS COMMAND...: polls COMMAND every 0.05 s until it succeeds.
wait_for() {
	n=$(($1 * 20))
	shift
	while ! "$@"; do
		n=$((n - 1))
		[ "$n" -gt 0 ] || return 1
		sleep 0.05
	done
}

gone() { for f; do [ ! -e "$f" ] || return 1; done; }
# alive PID: not exited (an exited child stays a zombie until waited for).
alive() {
	state=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)
	[ -n "$state" ] && [ "$state" != Z ]
}
# until_ready SECONDS FILE WORD [PID]: waits for a line WORD in FILE, written
# by PID (default $pid); gives up when PID has ended without writing it.
until_ready() {
	n=$(($1 * 20)) who=${4:-$pid}
	while ! grep -q "^$3\$" "$2" 2>/dev/null; do
		alive "$who" || grep -q "^$3\$" "$2" 2>/dev/null || return 1
		n=$((n - 1))
		[ "$n" -gt 0 ] || return 1
		sleep 0.05
	done
}
err_of() { tr '\n' ' ' <"$1" | cut -c1-200; }
bytes_of() { echo $(($(stat -c %b "$1" 2>/dev/null || echo 0) * 512)); }
# leak_truth DIR PREFIX: the bytes leakgen's aborted requests (2 and 5 of
# 6, every third aborted) left in DIR: their files' st_blocks.
leak_truth() {
	t=0
	for i in 2 5; do
		for f in "$2${i}_0_0" "$2${i}_0_1" "$2${i}_0_2" "shm_$2${i}_0_0_lockfile.lock"; do
			t=$((t + $(bytes_of "$1/$f")))
		done
	done
	echo "$t"
}
# jint FILE KEY: an integer member of a JSON report's top object (indented 2).
jint() { sed -n "s/^  \"$2\": \(-\{0,1\}[0-9]*\),\{0,1\}\$/\1/p" "$1" 2>/dev/null; }
# jstr FILE KEY: a top-level string of a report (escapes left as they are).
jstr() { sed -n "s/^  \"$2\": \"\(.*\)\",\{0,1\}\$/\1/p" "$1" 2>/dev/null; }
# via FILE: ", probe NAME" when the report names the auditor's probe.
via() {
	probe=$(jstr "$1" probe)
	freed=$(jstr "$1" freed_probe)
	[ -z "$probe" ] || echo ", probe $probe${freed:+, frees by $freed}"
}

# start NAME COMMAND...: runs COMMAND in the background with stdin from a fifo
# (held open on fd 3 until finish) and stdout/stderr in $W/NAME.out/.err.
start() {
	name=$1
	shift
	mkfifo "$W/$name.in"
	"$@" <"$W/$name.in" >"$W/$name.out" 2>"$W/$name.err" &
	pid=$!
	exec 3>"$W/$name.in"
}
# finish: closes the workload's stdin, waits for it; its status in $status.
finish() {
	exec 3>&-
	wait "$pid"
	status=$?
}

facts() {
	say fact kernel "$(uname -r)"
	shmguard doctor >$W/doctor.out 2>&1
	sed 's/^/SGK doctor /' $W/doctor.out
	if grep -q 'keeps user xattrs' $W/doctor.out; then
		say fact xattr yes
	else
		say fact xattr "no: $(grep -o 'refuses user xattrs ([^)]*)' $W/doctor.out)"
	fi
	if [ -r /sys/kernel/btf/vmlinux ]; then
		say fact btf yes
	else
		say fact btf no
	fi
	if ls /sys/kernel/tracing/events/timestamp/ctime_ns_xchg >/dev/null 2>&1; then
		say fact ctime_tp yes
	else
		say fact ctime_tp no
	fi
	# kprobes: can a kprobe event be defined at all (what attaching needs)?
	if echo 'p:sgk_probe vfs_unlink' >>/sys/kernel/tracing/kprobe_events 2>/dev/null; then
		echo '-:sgk_probe' >>/sys/kernel/tracing/kprobe_events
		say fact kprobe_events yes
	else
		say fact kprobe_events no
	fi
	# Which BPF program types the kernel loads (load only; attaching is the
	# auditor's business), one tiny program each, built by kernels.sh.
	loads='' refused=''
	for o in /sg/bpf/*.o; do
		kind=${o##*/}
		kind=${kind%.o}
		if bpftool prog load "$o" "/sys/fs/bpf/sgk_$kind" >$W/bpftool.err 2>&1; then
			loads="$loads${loads:+,}$kind"
			rm -f "/sys/fs/bpf/sgk_$kind"
		else
			why=$(grep -o 'load failed: [A-Za-z ]*' $W/bpftool.err | head -n1 | cut -d' ' -f3-)
			refused="$refused${refused:+,}$kind(${why:-?})"
		fi
	done
	say fact bpf_loads "${loads:--}"
	say fact bpf_refused "${refused:--}"
}

# The shim's abort sweep: a process under the shim creates segments for two
# requests; `shmguard abort` marks one; exactly its segments go.
check_abort() {
	p=sgk-ab-
	start abort shmguard run --patterns "$PATTERNS" --abort-dir "$AD" -- \
		shmtool shm "/${p}a_0_0" 4096 , shm "/${p}a_0_1" 8192 , shm "/${p}b_0_0" 4096 , wait
	if ! until_ready 30 $W/abort.out ready; then
		result abort FAIL "the workload did not start: $(err_of $W/abort.err)"
	else
		t0=$(now)
		shmguard abort --abort-dir "$AD" "${p}a"
		if ! wait_for 10 gone "/dev/shm/${p}a_0_0" "/dev/shm/${p}a_0_1"; then
			result abort FAIL "request a's segments still there 10 s after its marker"
		elif [ ! -e "/dev/shm/${p}b_0_0" ]; then
			result abort FAIL "request b's segment went too"
		else
			result abort PASS "request a's 2 segments unlinked $(since "$t0") after the marker, request b's kept"
		fi
	fi
	finish
	rm -f /dev/shm/"$p"*
}

# ls attribution: a file made under the shim shows its request and creator.
tag_has() { case $tag in *"$1"*) return 0 ;; esac; return 1; }
check_ls() {
	p=sgk-ls-
	shmguard run --patterns "$PATTERNS" --abort-dir "$AD" -- shmtool shm "/${p}r_0_0" 4096 2>$W/ls.err &
	creator=$!
	wait $creator
	shmguard ls --json >$W/ls.json 2>>$W/ls.err
	# One line per file, then that file's tag.
	tag=$(tr -d ' \n' <$W/ls.json | sed 's/{"path"/\n&/g' | grep "\"path\":\"/dev/shm/${p}r_0_0\"" |
		grep -o '"tag":\(null\|{[^}]*}\)')
	if [ -z "$tag" ]; then
		result ls FAIL "the file is not listed: $(err_of $W/ls.err)"
	elif tag_has "\"request\":\"${p}r\"" && { tag_has "\"creator_pid\":$creator," || tag_has "\"creator_pid\":$creator}"; }; then
		result ls PASS "request ${p}r, creator $creator"
	else
		result ls FAIL "listed as $tag, not request ${p}r, creator $creator"
	fi
	rm -f /dev/shm/"$p"*
}

# sweep --dead: the file of a creator killed with SIGKILL is reclaimed; the
# file of a live one (kept waiting on fd 4) is kept.
check_dead() {
	p=sgk-dead-
	mkfifo $W/live.in
	shmguard run --patterns "$PATTERNS" --abort-dir "$AD" -- shmtool shm "/${p}live_0_0" 4096 , wait \
		<$W/live.in >$W/live.out 2>&1 &
	live=$!
	exec 4>$W/live.in
	start dead shmguard run --patterns "$PATTERNS" --abort-dir "$AD" -- shmtool shm "/${p}k_0_0" 8192 , wait
	if ! until_ready 30 $W/dead.out ready || ! until_ready 30 $W/live.out ready "$live"; then
		result dead FAIL "the workloads did not start: $(err_of $W/dead.err)"
	else
		kill -9 "$pid"
		wait "$pid"
		shmguard sweep --dead $sweep_args >$W/sweep.out 2>&1
		if [ -e "/dev/shm/${p}k_0_0" ]; then
			why=$(grep -h "${p}k_0_0" $W/sweep.out | cut -c1-200)
			result dead FAIL "the killed creator's file is still there: ${why:-not a candidate ($(tail -n1 $W/sweep.out))}"
		elif [ ! -e "/dev/shm/${p}live_0_0" ]; then
			result dead FAIL "the live creator's file was swept too"
		else
			result dead PASS "the killed creator's file reclaimed, a live creator's kept ($(tail -n1 $W/sweep.out))"
		fi
	fi
	exec 3>&- 4>&-
	wait "$pid" "$live" 2>/dev/null
	rm -f /dev/shm/"$p"*
}

# audit_leakgen NAME BUDGET [shmguard run ...]: leakgen (6 requests, every
# third aborted) under `shmguard audit` (run by $audit_in if set); the truth
# is what the aborted requests' files hold (st_blocks) once it is done.
# Sets status, truth, leaked, aborts.
audit_leakgen() {
	name=$1 budget=$2
	shift 2
	lp=sgk-$name-
	# shellcheck disable=SC2086 # SGK_AUDIT_ARGS is a list of options, audit_in a command and its own
	start "$name" $audit_in shmguard audit --patterns "$PATTERNS" --abort-dir "$AD" --grace 0.3 \
		--json "$W/$name.json" --max-kib-per-abort "$budget" $SGK_AUDIT_ARGS -- \
		"$@" leakgen --prefix "$lp" --requests 6 --abort-every 3 --abort-dir "$AD" --wait-stdin
	truth=
	if until_ready 90 "$W/$name.out" 'done'; then
		sleep 1 # past the grace: the auditor has measured
		truth=$(leak_truth /dev/shm "$lp")
	fi
	finish
	leaked=$(jint "$W/$name.json" leaked_bytes)
	aborts=$(jint "$W/$name.json" aborts)
	rm -f /dev/shm/*"$lp"*
}

# The leaking pipeline, without the shim, once for both checks below:
# plain_status, and truth, leaked and aborts as audit_leakgen sets them.
plain_audit() {
	[ -z "${plain_status:-}" ] || return 0
	audit_leakgen audit 0
	plain_status=$status plain_truth=$truth plain_leaked=$leaked plain_aborts=$aborts
}

# judge NAME: the result of check NAME from status, truth, leaked and aborts
# (as audit_leakgen sets them): the report within 1% of the files themselves,
# as in tests/integration/test_audit.c.
judge() {
	if [ -z "$leaked" ]; then
		result "$1" FAIL "no report (exit $status): $(err_of "$W/$1.err")"
	elif [ "$aborts" != 2 ] || [ -z "$truth" ] ||
		[ $(((leaked - truth) * 100)) -gt "$truth" ] || [ $(((truth - leaked) * 100)) -gt "$truth" ]; then
		result "$1" FAIL "reported $leaked bytes over $aborts aborts; truth ${truth:-unknown} bytes over 2"
	else
		kib=$(awk -v b="$leaked" 'BEGIN { printf "%.1f", b / 1024 / 2 }')
		result "$1" PASS "reported $kib KiB/abort ($leaked bytes over 2 aborts); truth $truth bytes$(via "$W/$1.json")"
	fi
}

# What the auditor reports a leaking pipeline leaves per abort, with the
# probe it chooses here.
check_audit() {
	plain_audit
	status=$plain_status truth=$plain_truth leaked=$plain_leaked aborts=$plain_aborts
	judge audit
}

# Freed files leave the auditor's table as their inode is evicted, not at
# the review's next look: in the leaking pipeline's run, the 4 consumed
# requests' 16 files, unlinked by their consumer (fentry or kprobe on
# shmem_evict_inode; a file may still be found by the review first).
check_freed() {
	plain_audit
	evicted=$(jint "$W/audit.json" files_freed_at_eviction)
	reviewed=$(jint "$W/audit.json" files_freed_by_review)
	how=$(jstr "$W/audit.json" freed_probe)
	why=$(jstr "$W/audit.json" freed_probe_unavailable)
	if [ -z "$evicted" ]; then
		result freed FAIL "no report (exit $plain_status): $(err_of "$W/audit.err")"
	elif [ -z "$how" ]; then
		result freed FAIL "frees are left to the review: ${why:-no reason given}"
	elif [ "$evicted" -lt 1 ] || [ $((evicted + reviewed)) != 16 ]; then
		result freed FAIL "$evicted files freed at eviction and $reviewed by the review; 16 were"
	else
		result freed PASS "$evicted of the 16 files freed left at their eviction ($how), $reviewed at the review"
	fi
}

# A burst of frees (5,000 files removed by one rm, a 64 KiB event buffer;
# the files made 200 at a time, so that their creations fit it) loses no
# event that matters: the kernel side stops sending frees while
# the buffer is half full, their records wait for the review, and every
# record leaves the table by the end either way.
check_freed_burst() {
	p=sgk-fb-
	# shellcheck disable=SC2016 # expanded by the command's shell
	start freed-burst shmguard audit --patterns "$PATTERNS" --abort-dir "$AD" --ring-kib 64 \
		--json "$W/freed-burst.json" $SGK_AUDIT_ARGS -- sh -c \
		'i=0; while [ $i -lt 5000 ]; do : >"/dev/shm/$0$i"; i=$((i + 1)); [ $((i % 200)) != 0 ] || sleep 0.05; done
		rm -f /dev/shm/"$0"*' "$p"
	finish
	evicted=$(jint "$W/freed-burst.json" files_freed_at_eviction)
	reviewed=$(jint "$W/freed-burst.json" files_freed_by_review)
	unsent=$(jint "$W/freed-burst.json" frees_left_to_review)
	dropped=$(jint "$W/freed-burst.json" dropped_events)
	if [ -z "$evicted" ]; then
		result freed-burst FAIL "no report (exit $status): $(err_of "$W/freed-burst.err")"
	elif [ "$dropped" != 0 ] || [ $((evicted + reviewed)) != 5000 ]; then
		result freed-burst FAIL "$dropped events dropped; $evicted files freed at eviction and $reviewed by the review, of 5000"
	else
		result freed-burst PASS "0 events dropped; of 5000 files freed, $evicted left at their eviction, $reviewed at the review ($unsent frees not sent)"
	fi
	rm -f /dev/shm/"$p"*
}

# The same with one probe forced (probe-fentry, probe-kprobe, probe-syscalls):
# every probe is proven on the kernels that allow it.
check_probe() {
	default_args=$SGK_AUDIT_ARGS
	SGK_AUDIT_ARGS="$SGK_AUDIT_ARGS --probe ${1#probe-}"
	audit_leakgen "$1" 0
	SGK_AUDIT_ARGS=$default_args
	# fentry and kprobe see frees too, the same way.
	how=$(jstr "$W/$1.json" freed_probe)
	case ${1#probe-}/$how in
	fentry/fentry | kprobe/kprobe | syscalls/*) judge "$1" ;;
	*)
		if [ -z "$leaked" ]; then
			judge "$1"
		else
			result "$1" FAIL "frees not seen by ${1#probe-} but ${how:-the review}"
		fi
		;;
	esac
}

# The auditor in a pid namespace of its own, with its own /proc (a
# container's, a CI job's): the kernel side must number the command's
# processes as that namespace does.
check_pidns() {
	audit_in='unshare -p -f --mount-proc'
	audit_leakgen pidns 0
	audit_in=
	judge pidns
}

# fds_on PID DEV: how many descriptors of PID are on device DEV (stat %d).
fds_on() {
	n=0
	for f in /proc/"$1"/fd/*; do
		[ "$(stat -L -c %d "$f" 2>/dev/null)" != "$2" ] || n=$((n + 1))
	done
	echo "$n"
}
no_fds_on() { [ "$(fds_on "$1" "$2")" = 0 ]; }

# Node mode: the system-wide auditor follows the /dev/shm of every mount
# namespace.  A pod made after it started (mount, pid and ipc namespaces,
# its own tmpfs on /dev/shm, its markers in its own shmguard-abort there)
# leaks two aborted requests: the report must be within 1% of the pod's
# files (st_blocks through its root), and once the pod is gone the auditor
# must hold nothing of its tmpfs (which would keep it in RAM).
check_node() {
	lp=sgk-node-
	# shellcheck disable=SC2086 # SGK_AUDIT_ARGS is a list of options
	start node shmguard audit --patterns "$PATTERNS" --abort-dir "$AD" --grace 0.3 --json "$W/node.json" \
		--interval 0.1 $SGK_AUDIT_ARGS
	auditor=$pid truth='' held=0 freed=no
	mkfifo $W/pod.in
	if wait_for 60 grep -q 'aborts 0' "$W/node.err"; then
		# shellcheck disable=SC2016 # expanded by the pod's shell
		unshare -m -p -i -f sh -c 'mount -t tmpfs tmpfs /dev/shm && mkdir /dev/shm/shmguard-abort && exec "$@"' \
			pod leakgen --prefix "$lp" --requests 6 --abort-every 3 --abort-dir /dev/shm/shmguard-abort \
			--wait-stdin <$W/pod.in >$W/pod.out 2>&1 &
		pod=$!
		exec 4>$W/pod.in
		if until_ready 60 $W/pod.out 'done' "$pod" && wait_for 30 grep -q '(measured 2)' "$W/node.err"; then
			init=$(cut -d' ' -f1 "/proc/$pod/task/$pod/children")
			dev=$(stat -c %d "/proc/$init/root/dev/shm")
			truth=$(leak_truth "/proc/$init/root/dev/shm" "$lp")
			held=$(fds_on "$auditor" "$dev")
		fi
		exec 4>&-
		wait "$pod"
		[ -z "$truth" ] || ! wait_for 10 no_fds_on "$auditor" "$dev" || freed=yes
	fi
	kill -INT "$auditor"
	finish
	leaked=$(jint "$W/node.json" leaked_bytes)
	aborts=$(jint "$W/node.json" aborts)
	if [ -z "$truth" ]; then
		result node FAIL "the pod was not measured (exit $status): $(err_of $W/node.err)"
	elif [ "$aborts" != 2 ] || [ -z "$leaked" ] ||
		[ $(((leaked - truth) * 100)) -gt "$truth" ] || [ $(((truth - leaked) * 100)) -gt "$truth" ]; then
		result node FAIL "reported ${leaked:-no} bytes over ${aborts:-no} aborts; the pod's truth $truth bytes over 2"
	elif [ "$held" = 0 ] || [ "$freed" != yes ]; then
		result node FAIL "the pod's /dev/shm: $held descriptors of the auditor while it ran, let go after: $freed"
	else
		kib=$(awk -v b="$leaked" 'BEGIN { printf "%.1f", b / 1024 / 2 }')
		result node PASS "a pod made during the run: $kib KiB/abort ($leaked bytes over 2 aborts), truth $truth bytes; its tmpfs let go when it ended$(via "$W/node.json")"
	fi
}

# shmguard watch: programs without the shim.  Two of them, each in a cgroup
# of its own, make a file; watch records their creators from the kernel's
# view (cgroup id, start time).  One is killed and its cgroup removed: sweep
# --dead reclaims its file, whose instance is gone, and keeps the other's.
# A reader that opens the live one is recorded as its attacher.
# in_cgroup CGROUP COMMAND...: COMMAND in CGROUP.  Run it with & only: the
# background shell becomes COMMAND, so that $! is its pid.
in_cgroup() {
	cg=$1
	shift
	# shellcheck disable=SC2016 # expanded by that shell
	exec sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@"
}
recorded() { shmguard ls --json 2>/dev/null | grep -c '"creator_state": "alive"' | grep -qx 2; }
attached() { shmguard ls --json 2>/dev/null | tr -d ' \n' | grep -q '"attachers":\[{"pid"'; }
started_or_gone() { grep -q 'recording the creators' "$W/$check.err" || ! kill -0 "$watcher" 2>/dev/null; }
check_watch() {
	check=$1 p=sgk-$1- cg=$W/$1-cg live='' dead=''
	shift
	mkdir -p "$cg"
	if ! mount -t cgroup2 none "$cg" 2>/dev/null || ! mkdir "$cg/sgk-dead" "$cg/sgk-live"; then
		result "$check" FAIL "no cgroup2 to put the programs in"
		return
	fi
	SHMGUARD_STORE_DIR="$W/$check-store"
	export SHMGUARD_STORE_DIR
	start "$check" shmguard watch "$@"
	watcher=$pid
	mkfifo "$W/$check-live.in"
	# Started, or gone (a probe this kernel lacks): no need to wait longer.
	wait_for 60 started_or_gone
	if grep -q 'recording the creators' "$W/$check.err"; then
		in_cgroup "$cg/sgk-live" shmtool open "/dev/shm/${p}live" 4096 wait <"$W/$check-live.in" >"$W/$check-live.out" 2>&1 &
		live=$!
		exec 4>"$W/$check-live.in"
		mkfifo "$W/$check-dead.in"
		in_cgroup "$cg/sgk-dead" shmtool open "/dev/shm/${p}dead" 8192 wait <"$W/$check-dead.in" >"$W/$check-dead.out" 2>&1 &
		dead=$!
		exec 5>"$W/$check-dead.in"
	fi
	if [ -z "${dead:-}" ] || ! until_ready 30 "$W/$check-dead.out" ready "$dead" || ! until_ready 30 "$W/$check-live.out" ready "$live" ||
		! wait_for 30 recorded; then
		result "$check" FAIL "the creators were not recorded: $(err_of "$W/$check.err")"
	elif ! cat "/dev/shm/${p}live" >/dev/null || ! wait_for 30 attached; then
		result "$check" FAIL "a reader of the live file was not recorded as its attacher: $(err_of "$W/$check.err")"
	else
		kill -9 "$dead"
		wait "$dead"
		rmdir "$cg/sgk-dead"
		shmguard sweep --dead $sweep_args >"$W/$check-sweep.out" 2>&1
		if [ -e "/dev/shm/${p}dead" ]; then
			result "$check" FAIL "the dead instance's file is still there: $(grep -h "${p}dead" "$W/$check-sweep.out" | cut -c1-200)"
		elif [ ! -e "/dev/shm/${p}live" ]; then
			result "$check" FAIL "the live instance's file was swept too"
		else
			result "$check" PASS "a program without the shim: its file reclaimed once its cgroup was gone, a live one's kept and its reader recorded, opens by $(sed -n 's/.*who opens them (probe \([a-z]*\)).*/\1/p' "$W/$check.err") ($(tail -n1 "$W/$check-sweep.out"))"
		fi
	fi
	exec 4>&- 5>&-
	wait "$live" 2>/dev/null
	kill "$watcher"
	wait "$watcher" 2>/dev/null
	exec 3>&-
	rmdir "$cg/sgk-live" "$cg/sgk-dead" 2>/dev/null
	umount "$cg"
	unset SHMGUARD_STORE_DIR
	rm -f /dev/shm/"$p"*
}

# The gate: the leaking pipeline over a budget of 0 KiB/abort exits 1; the
# same pipeline under the shim is within it and exits 0.
check_gate() {
	plain_audit
	audit_leakgen gate 0 shmguard run --patterns "$PATTERNS" --abort-dir "$AD" --
	if [ "$plain_status" = 1 ] && [ "$status" = 0 ] && [ "$leaked" = 0 ]; then
		result gate PASS "over budget: exit 1; under the shim (0 bytes left): exit 0"
	else
		result gate FAIL "over budget: exit $plain_status (want 1); under the shim: exit $status (want 0), ${leaked:-no report of} bytes left (want 0): $(err_of $W/gate.err)"
	fi
}

mounts
for c in $SGK_CHECKS; do
	case $c in
	facts) facts ;;
	abort | ls | dead | audit | freed | gate | pidns | node) "check_$c" ;;
	freed-burst) check_freed_burst ;;
	watch) check_watch watch ;;
	watch-kprobe) check_watch watch-kprobe --probe kprobe ;;
	probe-fentry | probe-kprobe | probe-syscalls) check_probe "$c" ;;
	*) result "$c" SKIP "no such check" ;;
	esac
done
say 'done'
