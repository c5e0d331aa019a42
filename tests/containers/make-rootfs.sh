#!/usr/bin/env bash
# make-rootfs.sh DIR FILE[:DEST|:-]...: a root filesystem for `podman import`,
# the offline stand-in for contrib/container/Containerfile (no registry is
# reachable in the tests): busybox for /bin/sh and the tools, then each FILE
# at DEST (default: its own path; "-": not the file, only its libraries) with
# the shared libraries ldd lists for it, at their own paths.  The ELF interpreter and libc come from this machine.
set -euo pipefail
dir=$1
shift
mkdir -p "$dir"/{bin,usr/bin,usr/lib,lib64,tmp,dev/shm,proc,sys,etc}
cp /bin/busybox "$dir/bin/busybox"
for tool in sh cat ls sleep kill mkdir rm test echo cp mv stat true sed sort tail head tr; do
	ln -sf busybox "$dir/bin/$tool"
done
copy() { # SRC DEST
	mkdir -p "$dir$(dirname "$2")"
	cp -L "$1" "$dir$2"
}
for spec in "$@"; do
	src=${spec%%:*}
	dest=${spec#*:}
	[ "$dest" = "$spec" ] && dest=$src
	[ "$dest" = - ] || copy "$src" "$dest"
	# "libx.so => /path (addr)" and "/lib64/ld-linux-x86-64.so.2 (addr)";
	# nothing for a script.
	for lib in $(ldd "$src" 2>/dev/null | grep -o '/[^ ]*' || true); do
		[ -e "$dir$lib" ] || copy "$lib" "$lib"
	done
done
