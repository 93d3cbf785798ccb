#!/usr/bin/env bash
# Smoke tests of mcpgen's Windows build under Wine (not part of CI): what
# the README's Platforms table says was checked under Wine. Needs wine64
# (Debian: apt-get install wine64) and, unless WINE_SHIM names a built one,
# mingw-w64 (gcc-mingw-w64-x86-64-win32) for the ProcessPrng shim that Go
# 1.22+ needs and Wine 8.0 lacks. Everything goes in a fresh temp dir and
# Wine prefix, removed at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
wine=${WINE:-$(command -v wine64 || command -v wine || echo /usr/lib/wine/wine64)}
tmp=$(mktemp -d)
wineserver=${WINESERVER:-$(dirname "$wine")/wineserver}
# The wine server leaves on its own once its last process has; wait for
# that before removing its prefix.
trap '"$wineserver" -w 2>/dev/null || true; rm -rf "$tmp"' EXIT
export WINEPREFIX=$tmp/prefix WINEDEBUG=-all
fails=0
pass() { printf 'PASS  %s\n' "$*"; }
fail() { printf 'FAIL  %s\n' "$*"; fails=$((fails + 1)); }
# check NAME CMD...: CMD's status says.
check() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name"; fi; }
w() { timeout 120 "$wine" "$@"; }
winpath() { printf 'Z:%s' "${1//\//\\}"; }

echo "wine: $("$wine" --version)"
GOOS=windows GOARCH=amd64 go build -o "$tmp/mcpgen.exe" ./cmd/mcpgen
GOOS=windows GOARCH=amd64 go test -c -o "$tmp/proc.test.exe" ./internal/proc
GOOS=windows GOARCH=amd64 go test -c -o "$tmp/launcher.test.exe" ./launcher
"$wine" cmd /c exit 0 >/dev/null 2>&1 || true # makes the prefix
shim=${WINE_SHIM:-$tmp/bcryptprimitives.dll}
if [ -z "${WINE_SHIM:-}" ]; then
  x86_64-w64-mingw32-gcc -O2 -shared -o "$shim" e2e/wine/bcryptprimitives.c -ladvapi32
fi
cp "$shim" "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
home=$WINEPREFIX/drive_c/users/$(id -un)
mcpgen=$(winpath "$tmp/mcpgen.exe")

# init, validate, emit for every provider.
mkdir "$tmp/ws" && cd "$tmp/ws"
check "init" w "$tmp/mcpgen.exe" init
check "validate" w "$tmp/mcpgen.exe" validate
check "emit claude-desktop --write: %APPDATA%\\Claude" sh -c \
  "timeout 120 '$wine' '$tmp/mcpgen.exe' emit --provider claude-desktop --workspace ws-1 --write 2>/dev/null && grep -q '\"files\"' '$home/AppData/Roaming/Claude/claude_desktop_config.json'"
check "emit codex --write: %USERPROFILE%\\.codex" sh -c \
  "timeout 120 '$wine' '$tmp/mcpgen.exe' emit --provider codex --workspace ws-1 --write 2>/dev/null && grep -q 'mcp_servers.files' '$home/.codex/config.toml'"
check "emit claude --scope user --write" sh -c \
  "timeout 120 '$wine' '$tmp/mcpgen.exe' emit --provider claude --scope user --write 2>/dev/null && grep -q '\"files\"' '$home/.claude.json'"

# serve: one JSON-RPC exchange on stdin.
rpc() { # rpc SERVER CALL...: the answers to initialize, then to each call
  { printf '%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"wine","version":"1"}}}' \
      '{"jsonrpc":"2.0","method":"notifications/initialized"}'
    local i=1; for c in "${@:2}"; do printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}\n' $i "$c"; i=$((i + 1)); done
  } | WORKSPACE_DIR=$(winpath "$tmp/ws") timeout 120 "$wine" "$tmp/mcpgen.exe" serve "$1" 2>&1
}
echo hello > notes.txt
out=$(rpc files '{"name":"read_file","arguments":{"path":"notes.txt"}}' '{"name":"read_file","arguments":{"path":"../x"}}')
check "serve files: read_file" grep -q '"id":1,"result":{"content":\[{"type":"text","text":"hello' <<<"$out"
check "serve files: .. refused" grep -q '"id":2,.*outside the workspace' <<<"$out"

printf '@echo off\r\necho 1=%%1 all=%%*\r\n' > echoargs.cmd
printf '@echo off\r\nif not exist bin mkdir bin\r\ncopy /y %s bin\\srv.exe >nul\r\n' "$mcpgen" > build.cmd
cat > mcpgen.toml <<TOML
version = 1

[servers.files]
builtin = "files"

[servers.bat]
env = { PATH = '$(winpath "$tmp/ws");C:\windows\system32' }

[servers.bat.tools.say]
description = "a batch file, found by PATHEXT"
run = ["echoargs", "{text}"]
args.text = { type = "string" }

[servers.inner]
command = '$mcpgen'
args = ["serve", "files"]

[servers.built]
build = ["./build.cmd"]
command = "./bin/srv"
args = ["serve", "files"]
TOML
out=$(rpc bat '{"name":"say","arguments":{"text":"a&echo.INJECTED"}}' '{"name":"say","arguments":{"text":"%PATH%"}}')
# cmd.exe would run "echo.INJECTED" had the & reached it unquoted: the
# batch file's whole output is its one argument, twice.
check "declared tool: a batch file by PATHEXT, its argument whole, nothing injected" \
  grep -qF '"id":1,"result":{"content":[{"type":"text","text":"1=\"a&echo.INJECTED\" all=\"a&echo.INJECTED\"\r\n"}]}}' <<<"$out"
check "declared tool: % refused for a batch file" grep -q '"id":2,.*holds a %' <<<"$out"
out=$(rpc inner '{"name":"read_file","arguments":{"path":"notes.txt"}}')
check "serve: a command server as a child in a job" grep -q '"id":1,"result":{"content":\[{"type":"text","text":"hello' <<<"$out"
check "build: a batch build step, then every server probed" w "$tmp/mcpgen.exe" build
cd "$repo"

# The Windows-only tests. Under Wine 8.0, Go 1.26's os.RemoveAll fails, so
# a test whose only failure is the cleanup of t.TempDir passes here.
wintests() { # wintests BINARY PATTERN
  local out name status lines
  out=$(cd "$tmp" && timeout 300 "$wine" "$1" -test.v -test.run "$2" 2>&1 || true)
  # For each test that ran: a pass, or a failure whose only words are the
  # cleanup's.
  while read -r status name; do
    lines=$(awk -v t="$name" '
      $0 ~ "^=== RUN +" t "$" { on = 1; next }
      /^=== RUN/ { on = 0 }
      on && /^    [^ -]/ && !/TempDir RemoveAll cleanup/ { print }' <<<"$out")
    if [ "$status" = PASS ] || [ -z "$lines" ]; then pass "$name"; else fail "$name"; echo "$lines"; fi
  done < <(sed -n 's/^--- \(PASS\|FAIL\): \([^ ]*\) .*/\1 \2/p' <<<"$out")
}
wintests proc.test.exe 'TestJob|TestPrepareBatch|TestLookPathWindows|TestBatchCommandLine'
wintests launcher.test.exe 'TestLock$|TestRuntimeDirPrivate|TestRuntimeDirRefusesOpen|TestDirRules|TestCheckPrivateACL'

echo
if [ "$fails" -gt 0 ]; then echo "$fails failed"; exit 1; fi
echo "all passed"
