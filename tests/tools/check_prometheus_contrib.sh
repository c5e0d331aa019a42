#!/bin/sh
# The shipped alert rules and dashboard (contrib/prometheus, contrib/grafana)
# as Prometheus reads them: `promtool check rules`, the rules' unit tests
# (`promtool test rules`), and every dashboard query parsed as PromQL, with
# Grafana's variables replaced.  That each metric they name is one the
# auditor exports is tests/unit/test_metrics.c's.  Needs promtool (Debian's
# prometheus, installed by scripts/deps.sh): missing, this fails in CI and
# is skipped (77) elsewhere.
set -eu
contrib=$1
if ! command -v promtool >/dev/null 2>&1; then
	if [ -n "${CI:-}" ]; then
		echo "promtool is missing in CI (scripts/deps.sh installs prometheus)" >&2
		exit 1
	fi
	echo "skipped: needs promtool (Debian package prometheus)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
promtool check rules "$contrib/prometheus/shmguard-alerts.yml"
(cd "$contrib/prometheus" && promtool test rules shmguard-alerts.test.yml)
python3 - "$contrib/grafana/shmguard-dashboard.json" "$tmp/dashboard-rules.yml" <<'PY'
import json, sys
dash = json.load(open(sys.argv[1]))
exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
assert exprs and all("shmguard_" in e for e in exprs), "a panel without a shmguard query"
# Per-pod views (issue 31): namespace and pod variables, and panels by pod
# of the leak per abort, the aborted bytes held and /dev/shm's headroom.
variables = {v["name"]: v for v in dash["templating"]["list"]}
assert "namespace" in variables and "pod" in variables, "no namespace and pod variables"
for metric in ("shmguard_workload_leaked_bytes_total", "shmguard_workload_aborted_held_bytes", "shmguard_root_free_bytes"):
    assert any(metric in e and 'pod=~"$pod"' in e and 'namespace=~"$namespace"' in e for e in exprs), \
        "no panel of %s by pod" % metric
# A variable's label_values(SELECTOR, LABEL): its selector is PromQL too.
for v in variables.values():
    q = v.get("definition", "")
    if q.startswith("label_values("):
        exprs.append(q[len("label_values("):q.rindex(",")])
with open(sys.argv[2], "w") as out:
    out.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, e in enumerate(exprs):
        for var in ("$instance", "$namespace", "$pod"):
            e = e.replace(var, ".*")
        e = e.replace("$__rate_interval", "5m")
        out.write("      - record: dashboard:query%d\n        expr: %s\n" % (i, json.dumps(e)))
PY
promtool check rules "$tmp/dashboard-rules.yml"
