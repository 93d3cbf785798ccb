// http-client.mjs: an official TypeScript MCP SDK client over Streamable
// HTTP, for the Go end-to-end tests: v1 (@modelcontextprotocol/sdk, the
// legacy era: a session) or, with MCP_SDK=v2, v2 (@modelcontextprotocol/
// client, pinned to 2026-07-28: stateless requests, and input_required
// fulfilled by the client, which accepts every elicitation with
// {ok: true}). It connects to URL (with "Authorization: Bearer $MCP_TOKEN"
// when that variable is set), lists the tools, makes the calls it is given
// in order, and prints what it got as one JSON object: {"era": the era
// negotiated, "tools": [names], "asked": [elicitation messages],
// "results": [...]}, each result {"isError": bool, "text": the text
// contents joined}, or {"error": message} for a call that failed at the
// protocol level.
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
const load = (path) => import(pathToFileURL(join(nm, path)).href);

const [url, callsArg] = process.argv.slice(2);
const calls = JSON.parse(callsArg || "[]");
const headers = process.env.MCP_TOKEN ? { Authorization: `Bearer ${process.env.MCP_TOKEN}` } : {};
const asked = [];
const accept = (request) => {
  asked.push((request.params ?? request).message);
  return { action: "accept", content: { ok: true } };
};

let client, transport, era;
if (process.env.MCP_SDK === "v2") {
  const { Client, StreamableHTTPClientTransport } = await load("@modelcontextprotocol/client/dist/index.mjs");
  client = new Client(
    { name: "mcpgen-e2e-http-v2", version: "1.0.0" },
    { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  client.setRequestHandler("elicitation/create", accept);
  transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
} else {
  const { Client } = await load("@modelcontextprotocol/sdk/dist/esm/client/index.js");
  const { StreamableHTTPClientTransport } = await load("@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js");
  const { ElicitRequestSchema } = await load("@modelcontextprotocol/sdk/dist/esm/types.js");
  client = new Client({ name: "mcpgen-e2e-http", version: "1.0.0" }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, accept);
  transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
}
try {
  await client.connect(transport);
} catch (e) {
  console.error(`connect: ${e.message}`);
  process.exit(1);
}
era = typeof client.getProtocolEra === "function" ? client.getProtocolEra() : "legacy";
const out = { era, tools: [], asked, results: [] };
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
if (typeof transport.terminateSession === "function" && transport.sessionId) {
  await transport.terminateSession().catch(() => {});
}
await client.close();
console.log(JSON.stringify(out));
