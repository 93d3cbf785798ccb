// http-client.mjs: the official TypeScript MCP SDK client (v1) over
// Streamable HTTP, for the Go end-to-end tests: it connects to URL (with
// "Authorization: Bearer $MCP_TOKEN" when that variable is set), lists the
// tools, makes the calls it is given in order, and prints what it got as
// one JSON object: {"tools": [names], "results": [...]}, each result
// {"isError": bool, "text": the text contents joined}, or {"error":
// message} for a call that failed at the protocol level.
//
//   node http-client.mjs URL CALLS
//
// CALLS is a JSON array of {"tool": NAME, "arguments": {...}}. A client
// that cannot connect exits 1, with the reason on stderr.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const nm = process.env.MCP_NODE_MODULES;
if (!nm) {
  console.error('MCP_NODE_MODULES is not set: run eval "$(e2e/clients/install.sh)"');
  process.exit(2);
}
const sdk = (path) => import(pathToFileURL(join(nm, "@modelcontextprotocol/sdk/dist/esm", path)).href);
const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");

const [url, callsArg] = process.argv.slice(2);
const calls = JSON.parse(callsArg || "[]");
const headers = process.env.MCP_TOKEN ? { Authorization: `Bearer ${process.env.MCP_TOKEN}` } : {};
const client = new Client({ name: "mcpgen-e2e-http", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
try {
  await client.connect(transport);
} catch (e) {
  console.error(`connect: ${e.message}`);
  process.exit(1);
}
const out = { tools: [], results: [] };
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  out.tools.push(...page.tools.map((t) => t.name));
  cursor = page.nextCursor;
} while (cursor);
for (const c of calls) {
  try {
    const res = await client.callTool({ name: c.tool, arguments: c.arguments ?? {} });
    const text = (res.content ?? []).filter((x) => x.type === "text").map((x) => x.text).join("");
    out.results.push({ isError: !!res.isError, text });
  } catch (e) {
    out.results.push({ error: e.message });
  }
}
await transport.terminateSession().catch(() => {});
await client.close();
console.log(JSON.stringify(out));
