#!/usr/bin/env bash
# Install shmguard as a user would and use it from the installed files:
# 1. `meson install` into a fresh prefix; the installed `shmguard run` must
#    preload the installed shim by itself, `shmguard doctor` must pass, and
#    the demonstration must fail the gate without the shim and pass under it;
# 2. the Debian packages (dpkg-buildpackage -b) of a copy of the tree: the
#    shim's package must not depend on the auditor's libraries, the shim is
#    in its private directory, the documentation and examples are shipped,
#    and lintian finds no error and no warning;
# 3. the systemd units as shipped: `systemd-analyze verify` in a root made of
#    both packages (and this machine's units), and `systemd-analyze
#    security` at 5.0 or lower for each.
# Prints one line per check; exits 1 when one fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test

work=$(mktemp -d /tmp/shmguard-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=0
check() { # check WHAT STATUS
	if [ "$2" -eq 0 ]; then echo "install: ok    $1"; else echo "install: FAIL  $1"; failed=1; fi
}

prefix=$work/prefix
meson setup "$work/build" --prefix="$prefix" -Dtests=disabled -Dman=enabled >/dev/null
meson compile -C "$work/build" >/dev/null
meson install -C "$work/build" >/dev/null
libdir=$(meson introspect "$work/build" --buildoptions | python3 -c \
	'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "libdir"))')
# From here on every check prints ok or FAIL: a failing command must not end
# the run before it has said which check failed.
set +e
for f in bin/shmguard bin/shmguard-preflight bin/shmguard-sidecar "$libdir/shmguard/libshmguard.so" include/shmguard.h \
	libexec/shmguard/shmpipe share/man/man1/shmguard.1 share/man/man1/shmguard-preflight.1 \
	share/man/man1/shmguard-sidecar.1 share/man/man7/libshmguard.7; do
	[ -e "$prefix/$f" ]; check "installed $f" $?
done

# The installed command finds the installed shim, with nothing set.
maps=$(env -u SHMGUARD_LIB "$prefix/bin/shmguard" run -- cat /proc/self/maps)
grep -qF "$prefix/$libdir/shmguard/libshmguard.so" <<<"$maps"
check "shmguard run preloads $prefix/$libdir/shmguard/libshmguard.so" $?

status=0
"$prefix/bin/shmguard" doctor >"$work/doctor" 2>&1 || status=$?
check "shmguard doctor from the prefix" $status
[ $status -eq 0 ] || cat "$work/doctor"
grep -q "^shim .* ok   $prefix/$libdir/shmguard/libshmguard.so " "$work/doctor"
check "shmguard doctor names the installed shim" $?

if [ "$(id -u)" -eq 0 ]; then
	# From a tree with no build/ in it: the installed files alone.
	mkdir -p "$work/demo-tree/scripts"
	cp scripts/demo.sh "$work/demo-tree/scripts/"
	status=0
	"$work/demo-tree/scripts/demo.sh" --installed "$prefix" >"$work/demo" 2>&1 &
	pid=$!
	wait $pid || status=$?
	check "demonstration from the prefix: exit status 0 ($status)" $status
	[ "$(grep -c '^verdict: FAIL' "$work/demo")" -eq 1 ] && [ "$(grep -c '^verdict: PASS' "$work/demo")" -eq 1 ] &&
		grep -q '^exit status 1$' "$work/demo" && grep -q '^exit status 0$' "$work/demo"
	status=$?
	check "demonstration from the prefix: FAIL as shipped, PASS under the shim" $status
	! grep -q 'No such file\|command not found' "$work/demo" &&
		[ -z "$(find /dev/shm -maxdepth 1 -name "demo-$pid-*" -o -maxdepth 1 -name "shm_demo-$pid-*")" ]
	check "demonstration from the prefix: its cleanup leaves nothing in /dev/shm" $?
	[ $status -eq 0 ] || cat "$work/demo"
fi

# The Debian packages, built from a copy of the tree (dpkg-buildpackage writes
# its results next to the source directory).
mkdir "$work/deb" "$work/deb/src"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$work/deb/src"
status=0
(cd "$work/deb/src" && dpkg-buildpackage -us -uc -b) >"$work/deb/log" 2>&1 || status=$?
check "dpkg-buildpackage -us -uc -b" $status
[ $status -eq 0 ] || tail -30 "$work/deb/log"
for pkg in libshmguard shmguard; do
	deb=$(ls "$work"/deb/${pkg}_*.deb 2>/dev/null | head -1)
	[ -n "$deb" ]; check "package $pkg built" $?
	[ -n "$deb" ] || continue
	dpkg-deb -c "$deb" | awk '{print $6}' >"$work/deb/$pkg.files"
done
if [ -f "$work/deb/libshmguard.files" ] && [ -f "$work/deb/shmguard.files" ]; then
	grep -q '^\./usr/lib/[^/]*/shmguard/libshmguard\.so$' "$work/deb/libshmguard.files"
	check "libshmguard holds the shim, in /usr/lib/<triplet>/shmguard/" $?
	for f in README.md docs/usage.md docs/github-workflow.yml contrib/systemd/shmguard-audit.service \
		contrib/kubernetes/vllm-shmguard.yaml contrib/kubernetes/shmguard-node.yaml \
		contrib/prometheus/shmguard-alerts.yml contrib/grafana/shmguard-dashboard.json \
		contrib/container/Containerfile docs/threat-model.md; do
		grep -qx "\./usr/share/doc/shmguard/$f" "$work/deb/shmguard.files"; check "shmguard ships /usr/share/doc/shmguard/$f" $?
	done
	for m in shmguard shmguard-preflight shmguard-sidecar; do
		grep -q "/man1/$m\.1\.gz\$" "$work/deb/shmguard.files"; check "shmguard ships $m(1)" $?
	done
	grep -q "/man7/libshmguard\.7\.gz\$" "$work/deb/libshmguard.files"; check "libshmguard ships libshmguard(7)" $?
	grep -q '/bin/shmguard$' "$work/deb/shmguard.files"; check "shmguard holds the command" $?
	deps=$(dpkg-deb -f "$work"/deb/libshmguard_*.deb Depends)
	! grep -qE 'libbpf|libjansson|libelf' <<<"$deps"; check "libshmguard depends on no auditor library ($deps)" $?
	deps=$(dpkg-deb -f "$work"/deb/shmguard_*.deb Depends)
	grep -q 'libshmguard (=' <<<"$deps"; check "shmguard depends on libshmguard of its version" $?
fi
# Errors and warnings fail (an override in debian/*.lintian-overrides must
# give its reason); what lintian said is shown either way.
status=0
lintian --fail-on error,warning "$work"/deb/*.changes \
	>"$work/deb/lintian" 2>&1 || status=$?
check "lintian: no error, no warning" $status
grep -v -e "^N:" -e "running with root privileges" "$work/deb/lintian" | sed 's/^/install:       /' || true

# The units, as the package ships them, in a root of their own: verify needs
# the commands they run, the manual pages they name and the system's units.
root=$work/root
units=$root/usr/share/doc/shmguard/contrib/systemd
mkdir -p "$root/etc/systemd/system" "$root/lib/systemd"
for deb in "$work"/deb/libshmguard_*.deb "$work"/deb/shmguard_*.deb; do dpkg-deb -x "$deb" "$root"; done
cp -a /lib/systemd/system "$root/lib/systemd/"
names=()
for u in "$units"/*.service; do
	cp "$u" "$root/etc/systemd/system/"
	names+=("${u##*/}")
done
[ ${#names[@]} -ge 3 ]; check "the package ships the systemd units (${names[*]})" $?
status=0
MANPATH=$root/usr/share/man systemd-analyze verify --root="$root" "${names[@]}" >"$work/verify" 2>&1 || status=$?
check "systemd-analyze verify: ${names[*]}" $status
[ $status -eq 0 ] || sed 's/^/install:       /' "$work/verify"
for u in "${names[@]}"; do
	status=0
	systemd-analyze security --offline=yes --threshold=50 "$units/$u" >"$work/security" 2>&1 || status=$?
	check "systemd-analyze security $u: $(grep -o 'exposure level for [^:]*: [0-9.]* [A-Z]*' "$work/security" |
		sed 's/.*: //') (at most 5.0)" $status
	[ $status -eq 0 ] || grep '✗' "$work/security" | sed 's/^/install:       /'
done
exit $failed
