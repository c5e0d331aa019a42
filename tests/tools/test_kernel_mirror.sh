#!/usr/bin/env bash
# scripts/kernels/mirror.sh's apt_mirror on sample apt configurations: the
# kernel matrix must fetch from the machine's own Debian mirror.
# Usage: test_kernel_mirror.sh MIRROR_SH
set -euo pipefail
# shellcheck source=../../scripts/kernels/mirror.sh
. "$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

# expect NAME WANTED: apt_mirror of $work/NAME prints WANTED.
expect() {
	local got
	got=$(apt_mirror "$work/$1")
	if [ "$got" = "$2" ]; then
		echo "ok    $1: '$got'"
	else
		echo "FAIL  $1: '$got', expected '$2'"
		failed=1
	fi
}
etc() { mkdir -p "$work/$1/sources.list.d"; }

# deb822: a third party's file comes first (by name), then the security
# stanza, then the release one; comments and a key with no value between.
etc deb822
cat >"$work/deb822/sources.list.d/a-vendor.sources" <<'S'
Types: deb
URIs: https://vendor.example.com/node
Suites: nodistro
Components: main
S
cat >"$work/deb822/sources.list.d/debian.sources" <<'S'
Types: deb
# a comment
URIs: http://security.example.org/debian-security
Suites: bookworm-security
Components: main

Types: deb deb-src
URIs: http://mirror.example.org/debian/ http://second.example.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
S
expect deb822 http://mirror.example.org/debian

# A disabled stanza, a source-only one, a value on a continuation line.
etc deb822-fields
cat >"$work/deb822-fields/sources.list.d/debian.sources" <<'S'
Types: deb
URIs: http://disabled.example.org/debian
Suites: bookworm
Enabled: no

Types: deb-src
URIs: http://source.example.org/debian
Suites: bookworm

Types: deb
URIs:
 http://continued.example.org/debian
Suites: stable
S
expect deb822-fields http://continued.example.org/debian

# No deb822 file: the one-line format, options in brackets, security first.
etc oneline
cat >"$work/oneline/sources.list" <<'S'
# deb http://commented.example.org/debian bookworm main
deb http://security.example.org/debian-security bookworm-security main
deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://oneline.example.org/debian/ bookworm main
S
expect oneline http://oneline.example.org/debian

# deb822 files without a Debian release fall back to the one-line ones.
etc fallback
cp "$work/deb822/sources.list.d/a-vendor.sources" "$work/fallback/sources.list.d/"
echo 'deb http://listed.example.org/debian bullseye main' >"$work/fallback/sources.list.d/debian.list"
expect fallback http://listed.example.org/debian

# A CD-ROM is no mirror; nothing at all prints nothing.
etc cdrom
echo 'deb cdrom:[Debian GNU/Linux 12]/ bookworm main' >"$work/cdrom/sources.list"
expect cdrom ''
etc empty
expect empty ''
exit $failed
