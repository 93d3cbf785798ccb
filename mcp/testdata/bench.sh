#!/usr/bin/env bash
# bench.sh: round trips through `mcpgen serve files`, side by side in one run
# with the floor (mcp/internal/floor: the least a Go stdio server can do) and
# with the mcpgen of another revision (main by default). The client is the
# official TypeScript SDK ($MCP_BENCH, see e2e/clients).
# Then the memory of each mcpgen under 200k pings whose answers nobody reads
# (mcp/internal/flood).
#
#   eval "$(e2e/clients/install.sh)"
#   mcp/testdata/bench.sh [-r ROUNDS] [-n CALLS] [-b REVISION] [-p PINGS]
#
# Each round runs every target once, in a rotating order; what is printed
# is the median of the rounds' p50s and its ratio to the floor and to the
# base revision. The machine is shared and noisy: read the ratios, and
# compare only figures from the same run. -p 0 skips the flood (the base
# revision may take a gigabyte for it).
set -euo pipefail

rounds=5 calls=2000 base=main pings=200000
while getopts r:n:b:p: opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	n) calls=$OPTARG ;;
	b) base=$OPTARG ;;
	p) pings=$OPTARG ;;
	*) echo "usage: $0 [-r ROUNDS] [-n CALLS] [-b REVISION] [-p PINGS]" >&2; exit 2 ;;
	esac
done
if [[ -z ${MCP_BENCH:-} ]]; then
	echo 'bench.sh: MCP_BENCH is not set: run eval "$(e2e/clients/install.sh)" from the project root first' >&2
	exit 2
fi

root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "building the floor, this tree and $base ($(git -C "$root" rev-parse --short "$base"))" >&2
(cd "$root" && go build -o "$tmp/floor" ./mcp/internal/floor && go build -o "$tmp/flood" ./mcp/internal/flood &&
	go build -o "$tmp/mcpgen-this" ./cmd/mcpgen)
mkdir "$tmp/base"
git -C "$root" archive "$base" | tar -x -C "$tmp/base"
(cd "$tmp/base" && go build -o "$tmp/mcpgen-base" ./cmd/mcpgen)

# The files server, on a workspace with one small file to read.
mkdir "$tmp/ws"
for i in $(seq 1 40); do echo "line $i of a small file that read_file returns whole"; done >"$tmp/ws/README.md"
cat >"$tmp/mcpgen.toml" <<'TOML'
version = 1

[servers.files]
builtin = "files"
read_only = true
TOML
export WORKSPACE_DIR=$tmp/ws

# target NAME: the tool, its arguments and the command, as mcp-bench takes them.
declare -A tool args cmd
tool[ping-floor]=ping cmd[ping-floor]="$tmp/floor"
tool[ping-base]=ping cmd[ping-base]="$tmp/mcpgen-base serve --manifest $tmp/mcpgen.toml files"
tool[ping-this]=ping cmd[ping-this]="$tmp/mcpgen-this serve --manifest $tmp/mcpgen.toml files"
tool[call-floor]=echo args[call-floor]='{"message":"hello $i"}' cmd[call-floor]="$tmp/floor"
tool[call-base]=read_file args[call-base]='{"path":"README.md"}' cmd[call-base]="$tmp/mcpgen-base serve --manifest $tmp/mcpgen.toml files"
tool[call-this]=read_file args[call-this]='{"path":"README.md"}' cmd[call-this]="$tmp/mcpgen-this serve --manifest $tmp/mcpgen.toml files"
targets=(ping-floor ping-base ping-this call-floor call-base call-this)

declare -A p50s
for ((r = 0; r < rounds; r++)); do
	for ((k = 0; k < ${#targets[@]}; k++)); do
		t=${targets[$(((k + r) % ${#targets[@]}))]}
		extra=()
		if [[ -n ${args[$t]:-} ]]; then extra=(--args "${args[$t]}"); fi
		# shellcheck disable=SC2086 # cmd holds a command line
		p50=$(node "$MCP_BENCH" --calls "$calls" --tool "${tool[$t]}" "${extra[@]}" -- ${cmd[$t]} |
			node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).latencyMs.p50))')
		p50s[$t]="${p50s[$t]:-} $p50"
		echo "round $((r + 1)) $t p50 ${p50} ms" >&2
	done
done

# The median of each target's p50s, and the table.
summary=()
for t in "${targets[@]}"; do summary+=("$t=$(echo ${p50s[$t]} | tr ' ' ,)"); done
node -e '
const [rounds, calls, ...pairs] = process.argv.slice(1);
const med = (xs) => { xs = xs.split(",").map(Number).sort((a, b) => a - b); return xs[(xs.length - 1) >> 1]; };
const m = Object.fromEntries(pairs.map((p) => p.split("=")).map(([k, v]) => [k, med(v)]));
const x = (a, b) => (a / b).toFixed(2) + "x";
console.log(`p50 in ms, median of ${rounds} rounds of ${calls} calls`);
console.log(`ping:       floor ${m["ping-floor"]}  base ${m["ping-base"]} (${x(m["ping-base"], m["ping-floor"])} floor)  this ${m["ping-this"]} (${x(m["ping-this"], m["ping-floor"])} floor, ${x(m["ping-this"], m["ping-base"])} base)`);
console.log(`tools/call: floor ${m["call-floor"]} (echo)  base ${m["call-base"]} (read_file, ${x(m["call-base"], m["call-floor"])} floor)  this ${m["call-this"]} (read_file, ${x(m["call-this"], m["call-floor"])} floor, ${x(m["call-this"], m["call-base"])} base)`);
' "$rounds" "$calls" "${summary[@]}"

if ((pings > 0)); then
	for rev in base this; do
		"$tmp/flood" -n "$pings" -- "$tmp/mcpgen-$rev" serve --manifest "$tmp/mcpgen.toml" files |
			node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const r=JSON.parse(s);
				console.log(`${process.argv[1]}: ${r.pings} unread pings: RSS ${r.rssMB.toFixed(1)} MB, peak ${r.peakMB.toFixed(1)} MB, ${r.takenBeforeMeasure} taken before it stopped reading; all ${r.answered} answered once read`)})' "$rev"
	done
fi
