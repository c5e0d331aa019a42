# Sourced after podman-env.sh.  pm_build_images BUILD_DIR SOURCE_DIR: the images of
# contrib/container/Containerfile, made without a registry (podman import
# of a root filesystem of the build's binaries, tests/containers/make-rootfs.sh),
# tagged :test in the podman of podman-env.sh (`pm`):
#   localhost/shmguard:test        the command line, the shim, shmguard-preflight
#                                  and shmguard-sidecar
#   localhost/shmguard-shim:test   the shim alone (with busybox for the copy)
#   localhost/sg-workload:test     a server image that knows nothing of
#                                  shmguard: examples/shmpipe and leakgen, with
#                                  the glibc files every glibc image has (the
#                                  shim needs libpthread.so.0 and libdl.so.2)
PM_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

pm_image() { # NAME ENTRYPOINT FILE[:DEST]...   (ENTRYPOINT as JSON, as in the Containerfile)
	local name=$1 entrypoint=$2 fs=$PM_DIR/fs-$1
	shift 2
	"$PM_HERE/make-rootfs.sh" "$fs" "$@" &&
		tar -C "$fs" -cf "$fs.tar" . &&
		pm import -q --change "ENTRYPOINT $entrypoint" --change "ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin" "$fs.tar" "localhost/$name:test" >/dev/null &&
		rm -rf "$fs" "$fs.tar"
}

pm_build_images() {
	local build=$1 src=$2 shim=/usr/lib/shmguard/libshmguard.so
	# The Containerfile's shim entrypoint: copied, then renamed over the old one.
	local install='/bin/busybox cp '"$shim"' "$0/.libshmguard.so.new" && /bin/busybox mv -f "$0/.libshmguard.so.new" "$0/libshmguard.so"'
	# The command's modules (cli/cli_module.h) beside it, where it looks first.
	local modules=() m
	for m in "$build"/cli/shmguard-*.so; do
		[ -e "$m" ] && modules+=("$m:/usr/bin/${m##*/}")
	done
	pm_image shmguard '["/usr/bin/shmguard"]' "$build/cli/shmguard:/usr/bin/shmguard" "${modules[@]}" \
		"$build/shim/libshmguard.so:$shim" \
		"$src/contrib/shmguard-preflight:/usr/bin/shmguard-preflight" \
		"$src/contrib/shmguard-sidecar:/usr/bin/shmguard-sidecar" &&
	pm_image shmguard-shim "$(python3 -c 'import json, sys; print(json.dumps(["/bin/busybox", "sh", "-c", sys.argv[1]]))' "$install")" \
		"$build/shim/libshmguard.so:$shim" &&
	pm_image sg-workload '["/bin/sh"]' "$build/examples/shmpipe:/usr/bin/shmpipe" "$build/tests/leakgen:/usr/bin/leakgen" \
		"$build/shim/libshmguard.so:-"
}
