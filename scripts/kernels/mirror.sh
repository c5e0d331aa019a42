# Sourced by scripts/kernels.sh (and its test): where this machine gets
# Debian's packages from, and how (its proxy), so that the kernel matrix's
# private apt setup fetches through the same mirror and proxy instead of a
# host name written into the tree.

# apt_mirror [ETC_APT]: the first URI of the machine's apt sources (default
# /etc/apt) that serves a Debian release suite (a codename or stable,
# testing...: not -security, not a third party's "nodistro"), from the
# deb822 files sources.list.d/*.sources, else from the one-line sources.list
# and sources.list.d/*.list.  Prints nothing when there is none.
apt_mirror() {
	local etc=${1:-/etc/apt} uri=
	local releases='^(buster|bullseye|bookworm|trixie|forky|duke|sid|oldoldstable|oldstable|stable|testing|unstable)$'
	local -a deb822=() oneline=()

	shopt -s nullglob
	deb822=("$etc"/sources.list.d/*.sources)
	oneline=("$etc"/sources.list.d/*.list)
	shopt -u nullglob
	[ ! -f "$etc/sources.list" ] || oneline=("$etc/sources.list" "${oneline[@]}")
	if [ ${#deb822[@]} -gt 0 ]; then
		# Stanzas are separated by blank lines; a field may continue on
		# lines that begin with a blank; '#' starts a comment line.
		uri=$(awk -v releases="$releases" '
			function stanza_end() {
				if (enabled != "no" && types ~ /(^| )deb( |$)/ && good_suite && uris != "") {
					split(uris, u, " ")
					print u[1]
					found = 1
					exit
				}
				field = ""; types = ""; uris = ""; enabled = ""; good_suite = 0
			}
			function value(v,   n, w, i) {
				gsub(/^[ \t]+|[ \t]+$/, "", v)
				if (field == "types") types = types " " v
				else if (field == "uris") uris = uris " " v
				else if (field == "enabled") enabled = tolower(v)
				else if (field == "suites") {
					n = split(v, w, " ")
					for (i = 1; i <= n; i++)
						if (w[i] ~ releases) good_suite = 1
				}
			}
			FNR == 1 && NR > 1 { stanza_end() }
			/^#/ { next }
			/^[ \t]*$/ { stanza_end(); next }
			/^[ \t]/ { value($0); next }
			{
				field = tolower(substr($0, 1, index($0, ":") - 1))
				value(substr($0, index($0, ":") + 1))
			}
			END { if (!found) stanza_end() }
		' "${deb822[@]}")
	fi
	if [ -z "$uri" ] && [ ${#oneline[@]} -gt 0 ]; then
		# deb [options] URI SUITE COMPONENTS...
		uri=$(awk -v releases="$releases" '
			/^[ \t]*deb[ \t]/ {
				sub(/^[ \t]*deb[ \t]+/, "")
				if ($0 ~ /^\[/) sub(/^\[[^]]*\][ \t]*/, "")
				if ($2 ~ releases) { print $1; exit }
			}
		' "${oneline[@]}")
	fi
	case $uri in
	cdrom:*) uri= ;;
	esac
	[ -z "$uri" ] || echo "${uri%/}"
}

# apt_proxy_config: the machine's Acquire::*::Proxy settings as apt.conf
# lines (apt-config reads its real configuration: APT_CONFIG unset).
apt_proxy_config() {
	env -u APT_CONFIG apt-config dump 2>/dev/null | grep -E '^Acquire::[a-z]+::Proxy(::[^ ]+)? ' || true
}
