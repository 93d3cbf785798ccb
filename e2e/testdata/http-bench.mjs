// http-bench.mjs: the official TypeScript MCP SDK client over Streamable
// HTTP (StreamableHTTPClientTransport), calling one tool of a remote server
// N times in a row and printing the latency as JSON: the reference that
// BenchmarkRemoteEcho sets mcpgen's transport beside.
//
//   node http-bench.mjs URL CALLS
//
// The SDK is found under $MCP_NODE_MODULES: ES modules do not read NODE_PATH.
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { performance } from "node:perf_hooks";

const nm = process.env.MCP_NODE_MODULES;
if (!nm) {
  console.error('MCP_NODE_MODULES is not set: run eval "$(e2e/clients/install.sh)"');
  process.exit(2);
}
const sdk = (path) => import(pathToFileURL(join(nm, "@modelcontextprotocol/sdk/dist/esm", path)).href);
const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");

const [url, callsArg] = process.argv.slice(2);
const calls = Number(callsArg || 1000);
const client = new Client({ name: "http-bench", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
const call = async (i) => {
  const res = await client.callTool({ name: "echo", arguments: { message: `hello ${i}` } });
  if (res.isError) throw new Error(JSON.stringify(res.content));
};
for (let i = 0; i < 50; i++) await call(i);
const lat = [];
for (let i = 0; i < calls; i++) {
  const s = performance.now();
  await call(i);
  lat.push(performance.now() - s);
}
lat.sort((a, b) => a - b);
const pct = (p) => lat[Math.min(lat.length - 1, Math.ceil((p / 100) * lat.length) - 1)];
console.log(JSON.stringify({ calls, p50_ms: pct(50), p99_ms: pct(99) }));
await transport.terminateSession();
await client.close();
