# Sourced by the container tests: a podman whose whole state is private to
# this run, under a temporary directory removed at exit.  `pm` is podman
# with that state; pm_cleanup (run at exit) removes the pods, the state and
# the shm lock podman leaves in /dev/shm (libpod_lock) and the cgroups
# under libpod_parent, the latter two only if this run created them: the
# suite leaves /dev/shm as it found it.
#
# Needs: podman, runc, catatonit (scripts/deps.sh installs them).

PM_CONF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/containers.conf
PM_DIR=$(mktemp -d /tmp/sg-podman.XXXXXX)
export CONTAINERS_CONF=$PM_CONF
# No user's or system's registries or policies: everything is local.
export CONTAINERS_REGISTRIES_CONF=$PM_DIR/registries.conf
: >"$CONTAINERS_REGISTRIES_CONF"
[ -e /dev/shm/libpod_lock ] && PM_LOCK_WAS_THERE=1 || PM_LOCK_WAS_THERE=0
# cgroupfs puts containers under libpod_parent in every hierarchy.
PM_CGROUPS_NEW=()
for h in /sys/fs/cgroup/*/; do
	[ -d "${h}libpod_parent" ] || PM_CGROUPS_NEW+=("${h}libpod_parent")
done

pm() {
	podman --root "$PM_DIR/root" --runroot "$PM_DIR/run" --tmpdir "$PM_DIR/tmp" \
		--storage-driver overlay "$@"
}

pm_cleanup() {
	pm pod rm -f -a >/dev/null 2>&1
	pm rm -f -a >/dev/null 2>&1
	pm system reset -f >/dev/null 2>&1
	# What overlay left mounted under the root, if a container was killed.
	grep -o " $PM_DIR/[^ ]*" /proc/self/mounts | sort -r | while read -r m; do umount -l "$m"; done
	rm -rf "$PM_DIR"
	[ "$PM_LOCK_WAS_THERE" = 1 ] || rm -f /dev/shm/libpod_lock
	# Only those this run made, and only once empty (rmdir refuses otherwise).
	for c in "${PM_CGROUPS_NEW[@]}"; do
		[ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	return 0
}
trap pm_cleanup EXIT
