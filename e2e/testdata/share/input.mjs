// input.mjs: a call that needs the client's input, made by a client of the
// official TypeScript SDK, v2 (@modelcontextprotocol/client, in the modern
// era: pinned to 2026-07-28, with input_required fulfilled by the client)
// or v1 (@modelcontextprotocol/sdk, legacy: it answers the server's
// elicitation/create), through a stdio command (mcpgen connect). It accepts
// every elicitation with {ok: true}, and prints one JSON object: the era
// the client negotiated, the elicitations it was asked (their messages),
// and the call's result.
//
//   node input.mjs v1|v2 TOOL MESSAGE -- COMMAND [ARGS...]
//
// The SDKs come from $MCP_NODE_MODULES (e2e/clients/install.sh exports it).
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [sdk, tool, message, sep, command, ...args] = process.argv.slice(2);
if (!["v1", "v2"].includes(sdk) || sep !== "--" || !command) {
  console.error("usage: node input.mjs v1|v2 TOOL MESSAGE -- COMMAND [ARGS...]");
  process.exit(2);
}
const modules = process.env.MCP_NODE_MODULES;
if (!modules) {
  console.error("input.mjs: MCP_NODE_MODULES is not set: run eval \"$(e2e/clients/install.sh)\" first");
  process.exit(2);
}
const load = (path) => import(pathToFileURL(join(modules, path)).href);

const asked = [];
const accept = (request) => {
  const params = request.params ?? request;
  asked.push(params.message);
  return { action: "accept", content: { ok: true } };
};

let client, era;
if (sdk === "v2") {
  const { Client } = await load("@modelcontextprotocol/client/dist/index.mjs");
  const { StdioClientTransport } = await load("@modelcontextprotocol/client/dist/stdio.mjs");
  client = new Client(
    { name: "input-v2", version: "1" },
    { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  client.setRequestHandler("elicitation/create", accept);
  await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" }));
  era = client.getProtocolEra();
} else {
  const { Client } = await load("@modelcontextprotocol/sdk/dist/esm/client/index.js");
  const { StdioClientTransport } = await load("@modelcontextprotocol/sdk/dist/esm/client/stdio.js");
  const { ElicitRequestSchema } = await load("@modelcontextprotocol/sdk/dist/esm/types.js");
  client = new Client({ name: "input-v1", version: "1" }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, accept);
  await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" }));
  era = "legacy";
}
try {
  const result = await client.callTool({ name: tool, arguments: { message } });
  console.log(JSON.stringify({ era, asked, result }));
} catch (err) {
  console.log(JSON.stringify({ era, asked, error: String(err?.message ?? err) }));
  process.exitCode = 1;
} finally {
  await client.close();
}
