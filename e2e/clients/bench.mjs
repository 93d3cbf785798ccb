// bench.mjs: the official TypeScript MCP SDK client (Client over
// StdioClientTransport) as a benchmark and a test driver. It starts a stdio
// server, connects, lists every page of its tools, makes warm-up calls, then
// times CALLS calls of one tool (or MCP pings) with up to CONCURRENCY in
// flight, and prints one JSON object: connect and tools/list times, calls per
// second and the latency distribution.
//
//   node bench.mjs [--calls N] [--warmup N] [--concurrency C] [--tool NAME]
//                  [--args JSON] [--timeout MS] -- COMMAND [ARGS...]
//
// --tool ping times the protocol's ping round trip: no tool runs. --args is
// the tools/call arguments as a JSON object; every "$i" in it is replaced by
// the call's number first, so that calls differ ("hello $i", or a bare $i for
// a number). A call that fails, or a result with isError, ends the run with
// exit 1 and the server's last stderr lines; bad flags exit 2.
//
// The SDK comes from $MCP_NODE_MODULES (e2e/clients/install.sh exports it):
// this file lives in the repository, not beside the installed packages.
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";

const usage =
  "usage: node bench.mjs [--calls N] [--warmup N] [--concurrency C] [--tool NAME] [--args JSON] [--timeout MS] -- COMMAND [ARGS...]";

function die(code, msg) {
  console.error(`bench.mjs: ${msg}`);
  process.exit(code);
}

// parseFlags reads the flags before "--"; everything after is the server.
function parseFlags(argv) {
  const sep = argv.indexOf("--");
  if (sep < 0 || sep === argv.length - 1) die(2, `no server command after "--"\n${usage}`);
  const o = { calls: 1000, warmup: 50, concurrency: 1, tool: "echo", args: '{"message":"hello $i"}', timeout: 60000 };
  const counts = { calls: 1, warmup: 0, concurrency: 1, timeout: 1 }; // the least each may be
  const flags = argv.slice(0, sep);
  for (let i = 0; i < flags.length; i += 2) {
    const name = flags[i].replace(/^--/, "");
    if (!flags[i].startsWith("--") || !(name in o)) die(2, `unknown flag ${flags[i]}\n${usage}`);
    if (i + 1 >= flags.length) die(2, `${flags[i]} needs a value\n${usage}`);
    const v = flags[i + 1];
    if (name in counts) {
      if (!/^\d+$/.test(v) || Number(v) < counts[name]) die(2, `${flags[i]} ${v}: want a whole number of at least ${counts[name]}`);
      o[name] = Number(v);
    } else {
      o[name] = v;
    }
  }
  return { o, cmd: argv.slice(sep + 1) };
}

// argsFor returns the arguments of call i.
function argsMaker(text) {
  const make = (i) => JSON.parse(text.replaceAll("$i", String(i)));
  let sample;
  try {
    sample = make(0);
  } catch (err) {
    die(2, `--args ${text}: not JSON: ${err.message}`);
  }
  if (sample === null || typeof sample !== "object" || Array.isArray(sample)) die(2, `--args ${text}: want a JSON object`);
  return make;
}

// tail keeps the last bytes of a stream: the server's stderr, shown when a
// call fails, without holding a chatty server's whole log.
function tail(stream, limit = 16 << 10) {
  let kept = "";
  stream?.on("data", (chunk) => {
    kept = (kept + chunk.toString()).slice(-limit);
  });
  return () => kept.trimEnd();
}

// nearest-rank percentile of sorted values.
const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
const ms = (x) => Math.round(x * 1000) / 1000;

const { o, cmd } = parseFlags(process.argv.slice(2));
const argsFor = o.tool === "ping" ? null : argsMaker(o.args);
const nm = process.env.MCP_NODE_MODULES;
if (!nm) die(2, 'MCP_NODE_MODULES is not set: run eval "$(e2e/clients/install.sh)" from the repository first');
const sdk = (p) => import(pathToFileURL(join(nm, "@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");

// "node" is the node running this client, as a shell would not guarantee.
if (cmd[0] === "node") cmd[0] = process.execPath;
const transport = new StdioClientTransport({ command: cmd[0], args: cmd.slice(1), env: process.env, stderr: "pipe" });
const serverLog = tail(transport.stderr);
const client = new Client({ name: "mcpgen-bench", version: "1.0.0" });
const fail = async (msg) => {
  const log = serverLog();
  console.error(`bench.mjs: ${msg}${log ? `\nthe server's stderr ends with:\n${log}` : ""}`);
  await client.close().catch(() => {});
  process.exit(1);
};
const request = { timeout: o.timeout };

let connectMs, listMs;
const tools = [];
try {
  const t0 = performance.now();
  await client.connect(transport, request);
  connectMs = performance.now() - t0;
  const t1 = performance.now();
  let cursor;
  for (let page = 0; ; page++) {
    if (page === 1000) throw new Error("tools/list: more than 1000 pages");
    const res = await client.listTools(cursor ? { cursor } : {}, request);
    tools.push(...res.tools);
    cursor = res.nextCursor;
    if (!cursor) break;
  }
  listMs = performance.now() - t1;
} catch (err) {
  await fail(`${cmd.join(" ")}: ${err.message}`);
}
if (o.tool !== "ping" && !tools.some((t) => t.name === o.tool)) {
  await fail(`the server has no tool ${o.tool}; it has: ${tools.map((t) => t.name).join(", ") || "none"}`);
}

async function call(i) {
  if (o.tool === "ping") return client.ping(request);
  const res = await client.callTool({ name: o.tool, arguments: argsFor(i) }, undefined, request);
  if (res.isError) throw new Error(`${o.tool} (call ${i}) returned isError: ${JSON.stringify(res.content)}`);
}

const latency = new Array(o.calls);
let totalMs;
try {
  for (let i = 0; i < o.warmup; i++) await call(i);
  let next = 0;
  const start = performance.now();
  // Each worker takes the next call number until none is left: at most
  // concurrency calls in flight, and every number made once.
  const worker = async () => {
    for (let i = next++; i < o.calls; i = next++) {
      const s = performance.now();
      await call(i);
      latency[i] = performance.now() - s;
    }
  };
  await Promise.all(Array.from({ length: Math.min(o.concurrency, o.calls) }, worker));
  totalMs = performance.now() - start;
} catch (err) {
  await fail(err.message);
}

const sorted = latency.slice().sort((a, b) => a - b);
console.log(
  JSON.stringify(
    {
      server: cmd.join(" "),
      serverVersion: client.getServerVersion(),
      node: process.version,
      connectMs: ms(connectMs),
      toolsListMs: ms(listMs),
      toolCount: tools.length,
      tool: o.tool,
      calls: o.calls,
      warmup: o.warmup,
      concurrency: o.concurrency,
      totalMs: ms(totalMs),
      callsPerSec: ms((o.calls / totalMs) * 1000),
      latencyMs: {
        min: ms(sorted[0]),
        p50: ms(percentile(sorted, 50)),
        p90: ms(percentile(sorted, 90)),
        p99: ms(percentile(sorted, 99)),
        max: ms(sorted.at(-1)),
      },
    },
    null,
    2,
  ),
);
await client.close();
