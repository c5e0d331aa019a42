# Sourced after podman-env.sh.  pm_build_images BUILD_DIR SOURCE_DIR: the images of
# contrib/container/Containerfile, made without a registry (podman import
# of a root filesystem of the build's binaries, tests/containers/make-rootfs.sh),
# tagged :test in the podman of podman-env.sh (`pm`):
#   localhost/shmguard:test        the command line, the shim, shmguard-preflight
#   localhost/shmguard-shim:test   the shim alone (with busybox for the copy)
#   localhost/sg-workload:test     a server image that knows nothing of
#                                  shmguard: examples/shmpipe and leakgen
PM_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

pm_image() { # NAME FILE[:DEST]...
	local name=$1 fs=$PM_DIR/fs-$1
	shift
	"$PM_HERE/make-rootfs.sh" "$fs" "$@" &&
		tar -C "$fs" -cf "$fs.tar" . &&
		pm import -q "$fs.tar" "localhost/$name:test" >/dev/null &&
		rm -rf "$fs" "$fs.tar"
}

pm_build_images() {
	local build=$1 src=$2 shim=/usr/lib/shmguard/libshmguard.so
	pm_image shmguard "$build/cli/shmguard:/usr/bin/shmguard" "$build/shim/libshmguard.so:$shim" \
	"$src/contrib/shmguard-preflight:/usr/bin/shmguard-preflight" &&
	pm_image shmguard-shim "$build/shim/libshmguard.so:$shim" &&
	pm_image sg-workload "$build/examples/shmpipe:/usr/bin/shmpipe" "$build/tests/leakgen:/usr/bin/leakgen"
}
