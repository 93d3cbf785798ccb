#!/usr/bin/env bash
# bench.sh: the official TypeScript SDK client (e2e/clients/bench.mjs) against one
# server, straight, through `mcpgen connect SERVER` (the launcher's hub) and
# through `mcpgen connect` (the workspace gateway, on the hub), side by side
# in one run. Not run by CI; numbers are noisy on a small machine:
# compare them within a run, as ratios.
#
#   eval "$(e2e/clients/install.sh)"     # from the repository root
#   e2e/testdata/share/bench.sh [CALLS] [ROUNDS] [SERVER]
#
# CALLS per client (default 5000); ROUNDS repeats every configuration,
# alternating straight and shared (default 3); SERVER is "echo" (the test
# server next to this script, on the wire, fast) or "everything" (the
# reference server-everything). MCPGEN=path uses a built mcpgen instead of
# building one. BASE=REVISION (main, say) adds the same configurations
# through the mcpgen of that revision (its hub and its gateway), built from
# `git archive`, with a launcher of its own, in the same rounds: before and
# after, side by side.
#
# Configurations: one client (--concurrency 1); one client with eight calls
# in flight (--concurrency 8); eight clients at once (eight bench.mjs
# processes, --concurrency 1 each): through the launcher they share one
# server process, straight each has its own. The gateway serves the one
# server, whose tool keeps its name. For eight clients the aggregate is the
# sum of each client's calls/s (they run side by side).
set -euo pipefail
calls="${1:-5000}" rounds="${2:-3}" server="${3:-echo}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
: "${MCP_BENCH:?run eval \"\$(e2e/clients/install.sh)\" from the repository root first}"

tmp="$(mktemp -d /tmp/mcpgen-bench.XXXXXX)"
launcher="" baselauncher=""
cleanup() {
  for l in "$launcher" "$baselauncher"; do
    if [ -n "$l" ] && kill -0 "$l" 2>/dev/null; then
      kill -TERM "$l"; wait "$l" || true
    fi
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

mcpgen="${MCPGEN:-}"
if [ -z "$mcpgen" ]; then
  mcpgen="$tmp/mcpgen"
  (cd "$root" && go build -o "$mcpgen" ./cmd/mcpgen)
fi
base="${BASE:-}"
if [ -n "$base" ]; then
  mkdir "$tmp/base"
  git -C "$root" archive "$base" | tar -x -C "$tmp/base"
  (cd "$tmp/base" && go build -o "$tmp/mcpgen-base" ./cmd/mcpgen)
fi

case "$server" in
  echo)
    direct=(node "$here/server.mjs")
    tool=echo args='{"message":"hello $i"}' ;;
  everything)
    direct=(node "$SERVER_EVERYTHING" stdio)
    tool=echo args='{"message":"hello $i"}' ;;
  *) echo "unknown server $server: echo or everything" >&2; exit 2 ;;
esac
argsToml=$(printf '"%s", ' "${direct[@]:1}")
cat >"$tmp/mcpgen.toml" <<TOML
version = 1
[workspace]
dir = "$tmp"
[servers.$server]
command = "node"
args = [${argsToml%, }]
TOML
export MCPGEN_RUNTIME_DIR="$tmp/run" MCPGEN_STATE_DIR="$tmp/state"
# launch BINARY WORKSPACE: a launcher in the background, ready; its pid in $started
launch() {
  "$1" launch --workspace "$2" --manifest "$tmp/mcpgen.toml" --log-format text 2>"$tmp/launch-$2.log" &
  started=$!
  for _ in $(seq 100); do
    "$1" status --workspace "$2" --json 2>/dev/null | grep -q '"state": "ready"' && break
    sleep 0.1
  done
}
launch "$mcpgen" bench; launcher=$started
shared=("$mcpgen" connect --workspace bench "$server")
gateway=("$mcpgen" connect --workspace bench)
if [ -n "$base" ]; then
  launch "$tmp/mcpgen-base" bench-base; baselauncher=$started
  based=("$tmp/mcpgen-base" connect --workspace bench-base "$server")
  basegw=("$tmp/mcpgen-base" connect --workspace bench-base)
fi

# cpu PID: the nanoseconds that process has run, all its threads (Linux).
cpu() {
  local total=0 t
  for t in /proc/"$1"/task/*/schedstat; do
    read -r t _ <"$t" && total=$((total + t))
  done 2>/dev/null
  echo "$total"
}

# one LABEL CONCURRENCY CMD...: one client, its JSON in $tmp/LABEL.N.json;
# for a client of a launcher, the launcher's CPU time in $tmp/LABEL.N.cpu.
n=0
one() {
  local label="$1" conc="$2"; shift 2
  n=$((n + 1))
  local pid=""
  case "$label" in
    shared-* | gateway-*) pid=$launcher ;;
    base-* | basegw-*) pid=$baselauncher ;;
  esac
  local before=0
  [ -z "$pid" ] || before=$(cpu "$pid")
  node "$MCP_BENCH" --calls "$calls" --concurrency "$conc" --tool "$tool" --args "$args" -- "$@" >"$tmp/$label.$n.json"
  [ -z "$pid" ] || echo $(($(cpu "$pid") - before)) >"$tmp/$label.$n.cpu"
}
# eight LABEL CMD...: eight clients at once
eight() {
  local label="$1"; shift
  n=$((n + 1))
  local pids=()
  for k in $(seq 8); do
    node "$MCP_BENCH" --calls "$calls" --concurrency 1 --tool "$tool" --args "$args" -- "$@" >"$tmp/$label.$n.$k.json" &
    pids+=($!)
  done
  wait "${pids[@]}"
}

for r in $(seq "$rounds"); do
  one direct-c1 1 "${direct[@]}";   one shared-c1 1 "${shared[@]}";   one gateway-c1 1 "${gateway[@]}"
  [ -z "$base" ] || { one base-c1 1 "${based[@]}"; one basegw-c1 1 "${basegw[@]}"; }
  one direct-c8 8 "${direct[@]}";   one shared-c8 8 "${shared[@]}";   one gateway-c8 8 "${gateway[@]}"
  [ -z "$base" ] || { one base-c8 8 "${based[@]}"; one basegw-c8 8 "${basegw[@]}"; }
  eight direct-8x "${direct[@]}";   eight shared-8x "${shared[@]}";   eight gateway-8x "${gateway[@]}"
  [ -z "$base" ] || { eight base-8x "${based[@]}"; eight basegw-8x "${basegw[@]}"; }
done

python3 - "$tmp" "$calls" "$rounds" "$server" "$base" <<'PY'
import glob, json, os, statistics, sys
tmp, calls, rounds, server, base = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
def load(label):
    runs = {}
    for f in glob.glob(os.path.join(tmp, label + ".*.json")):
        run = os.path.basename(f).split(".")[1]
        runs.setdefault(run, []).append(json.load(open(f)))
    return list(runs.values())
med = lambda xs: statistics.median(xs)
print(f"server {server}, {calls} calls per client, {rounds} rounds (medians of the rounds)")
print(f"{'configuration':<34}{'p50 ms':>9}{'p99 ms':>9}{'calls/s':>11}")
rows = {}
configs = [("direct-c1", "straight, 1 client"), ("shared-c1", "mcpgen connect, 1 client"),
           ("gateway-c1", "gateway, 1 client"),
           ("direct-c8", "straight, 1 client x 8 in flight"), ("shared-c8", "mcpgen connect, 8 in flight"),
           ("gateway-c8", "gateway, 8 in flight"),
           ("direct-8x", "straight, 8 clients (8 servers)"), ("shared-8x", "mcpgen connect, 8 clients (1 server)"),
           ("gateway-8x", "gateway, 8 clients (1 server)")]
if base:
    configs += [("base-c1", f"{base}: connect, 1 client"), ("base-c8", f"{base}: connect, 8 in flight"),
                ("base-8x", f"{base}: connect, 8 clients"),
                ("basegw-c1", f"{base}: gateway, 1 client"), ("basegw-c8", f"{base}: gateway, 8 in flight"),
                ("basegw-8x", f"{base}: gateway, 8 clients")]
for label, name in configs:
    runs = load(label)
    p50 = med([med([c["latencyMs"]["p50"] for c in run]) for run in runs])
    p99 = med([max(c["latencyMs"]["p99"] for c in run) for run in runs])
    cps = med([sum(c["callsPerSec"] for c in run) for run in runs])
    rows[label] = (p50, p99, cps)
    print(f"{name:<34}{p50:>9.3f}{p99:>9.3f}{cps:>11.0f}")
def cpu(label):
    xs = [int(open(f).read()) for f in glob.glob(os.path.join(tmp, label + ".*.cpu"))]
    return med(xs) / 1000 / (int(calls) + 50) if xs and med(xs) > 0 else None
for label, name in [("shared-c1", "this"), ("gateway-c1", "this, gateway"), ("base-c1", base), ("basegw-c1", f"{base}, gateway")]:
    if cpu(label) is not None:
        print(f"launcher CPU per call, 1 client, {name}: {cpu(label):.1f} us (its threads' run time, warm-up included)")
d, s = rows["direct-c1"], rows["shared-c1"]
print(f"added p50, 1 client: {s[0] - d[0]:+.3f} ms (target <= 0.05)")
print(f"8 shared clients vs 1 straight client, aggregate calls/s: {rows['shared-8x'][2] / d[2]:.0%} (target >= 80%)")
print(f"8 shared clients vs 8 straight clients (8 processes): {rows['shared-8x'][2] / rows['direct-8x'][2]:.0%}")
g = rows["gateway-c1"]
print(f"gateway p50 vs hub p50, 1 client: {g[0] / s[0]:.0%} (target <= 120%); added p50 by the gateway: {g[0] - d[0]:+.3f} ms, by the hub: {s[0] - d[0]:+.3f} ms")
print(f"8 gateway clients vs 8 hub clients, aggregate calls/s: {rows['gateway-8x'][2] / rows['shared-8x'][2]:.0%}")
if base:
    b, bg = rows["base-c1"], rows["basegw-c1"]
    print(f"added p50, 1 client, {base}: {b[0] - d[0]:+.3f} ms")
    print(f"gateway p50 vs hub p50, 1 client, {base}: {bg[0] / b[0]:.0%}; added p50 by the gateway: {bg[0] - d[0]:+.3f} ms")
PY
for l in "$launcher" "$baselauncher"; do
  [ -z "$l" ] || { kill -TERM "$l"; wait "$l"; }
done
launcher="" baselauncher=""
