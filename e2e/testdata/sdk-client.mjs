// sdk-client.mjs: the official TypeScript MCP SDK client driving a stdio
// server, for the Go end-to-end tests. It connects (initialize, then
// notifications/initialized), lists every page of tools, makes the calls it
// is given in order, and prints everything it got back as one JSON object,
// so that the test checks real results rather than "it did not crash".
//
//   node sdk-client.mjs CALLS -- COMMAND [ARGS...]
//
// CALLS is a JSON array of {"tool": NAME, "arguments": {...}}. Each result
// is {"isError": bool, "text": the text contents joined}, or, when the call
// failed at the protocol level, {"error": message, "code": number}.
// The SDK is found under $MCP_NODE_MODULES: ES modules do not read NODE_PATH.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const nm = process.env.MCP_NODE_MODULES;
if (!nm) {
  console.error('MCP_NODE_MODULES is not set: run eval "$(e2e/clients/install.sh)" from the repository');
  process.exit(2);
}
const sdk = (path) => import(pathToFileURL(join(nm, "@modelcontextprotocol/sdk/dist/esm", path)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");

const argv = process.argv.slice(2);
if (argv.length < 3 || argv[1] !== "--") {
  console.error("usage: node sdk-client.mjs CALLS -- COMMAND [ARGS...]");
  process.exit(2);
}
const calls = JSON.parse(argv[0]);
const [command, ...args] = argv.slice(2);

const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "pipe" });
let stderr = "";
transport.stderr?.on("data", (chunk) => { stderr += chunk; });
const client = new Client({ name: "mcpgen-e2e", version: "1.0.0" });
try {
  await client.connect(transport);
} catch (e) {
  console.error(`connect: ${e.message}\nserver stderr:\n${stderr}`);
  process.exit(1);
}

const tools = [];
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  tools.push(...page.tools.map((t) => t.name));
  cursor = page.nextCursor;
} while (cursor);

const results = [];
for (const call of calls) {
  try {
    const res = await client.callTool({ name: call.tool, arguments: call.arguments ?? {} });
    const text = (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
    results.push({ isError: res.isError === true, text });
  } catch (e) {
    results.push({ error: String(e.message ?? e), code: typeof e.code === "number" ? e.code : null });
  }
}

console.log(JSON.stringify({ serverInfo: client.getServerVersion(), tools, results }));
await client.close();
