// modern.mjs: a stdio MCP server of the modern revision (2026-07-28) only,
// written on the wire (no dependencies), as a server that never heard of
// the initialize handshake would be: it answers server/discover and every
// request that carries the revision's _meta; it refuses initialize with an
// error that names the version it speaks, as the spec advises, and a
// request without the _meta (or at another version) with the revision's
// errors; it acknowledges subscriptions/listen and keeps it open.
//
//   node modern.mjs
//
// Environment:
//   SHARE_LOG       a file that gets "PID METHOD VERSION CLIENT" for every
//                   message read (VERSION and CLIENT from _meta, "-" if absent)
//   MODERN_CONFIRM  "1": the tool confirm too
//
// Tools: echo {message} answers "modern: message". confirm {message} asks
// the client "Confirm MESSAGE?" the modern way (input_required, with an
// elicitation/create and a requestState), and answers the retry that
// carries the client's answer and the state with "confirmed: ACTION
// MESSAGE"; a client that declared no elicitation gets -32021.
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";

const VERSION = "2026-07-28";
const log = process.env.SHARE_LOG;
const serverInfo = { name: "modern-only", version: "1" };

const send = (msg) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...msg }) + "\n");
const complete = (id, result) =>
  send({ id, result: { resultType: "complete", ...result, _meta: { "io.modelcontextprotocol/serverInfo": serverInfo } } });
const fail = (id, code, message, data) => send({ id, error: { code, message, ...(data ? { data } : {}) } });

const rl = createInterface({ input: process.stdin });
rl.on("line", (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return send({ id: null, error: { code: -32700, message: "parse error" } });
  }
  const meta = msg.params?._meta ?? {};
  const version = meta["io.modelcontextprotocol/protocolVersion"];
  const client = meta["io.modelcontextprotocol/clientInfo"]?.name;
  if (log) appendFileSync(log, `${process.pid} ${msg.method} ${version ?? "-"} ${(client ?? "-").replaceAll(" ", "_")}\n`);
  if (msg.id === undefined || msg.method === undefined) return; // notifications, responses
  if (msg.method === "initialize") {
    return fail(msg.id, -32022, `Unsupported protocol version: this server speaks ${VERSION} only (no initialize)`, {
      supported: [VERSION],
      requested: msg.params?.protocolVersion ?? "",
    });
  }
  if (version !== VERSION) {
    return fail(msg.id, -32022, "Unsupported protocol version", { supported: [VERSION], requested: version ?? "" });
  }
  if (typeof meta["io.modelcontextprotocol/clientCapabilities"] !== "object") {
    return fail(msg.id, -32602, "invalid params: _meta[\"io.modelcontextprotocol/clientCapabilities\"] is required");
  }
  switch (msg.method) {
    case "server/discover":
      return complete(msg.id, {
        supportedVersions: [VERSION],
        capabilities: { tools: { listChanged: true } },
        instructions: "A server of the modern revision only.",
        ttlMs: 0,
        cacheScope: "private",
      });
    case "subscriptions/listen":
      return send({
        method: "notifications/subscriptions/acknowledged",
        params: { _meta: { "io.modelcontextprotocol/subscriptionId": msg.id }, notifications: { toolsListChanged: true } },
      });
    case "tools/list":
      return complete(msg.id, {
        tools: [
          { name: "echo", description: "the echo tool", inputSchema: { type: "object" } },
          ...(process.env.MODERN_CONFIRM === "1"
            ? [{ name: "confirm", description: "asks the client to confirm", inputSchema: { type: "object", properties: { message: { type: "string" } } } }]
            : []),
        ],
        ttlMs: 0,
        cacheScope: "private",
      });
    case "tools/call":
      if (msg.params?.name === "confirm" && process.env.MODERN_CONFIRM === "1") return confirm(msg, meta);
      if (msg.params?.name !== "echo") return fail(msg.id, -32602, `unknown tool ${msg.params?.name}`);
      return complete(msg.id, { content: [{ type: "text", text: `modern: ${msg.params?.arguments?.message}` }] });
    default:
      return fail(msg.id, -32601, `method not found: ${msg.method}`);
  }
});

// confirm is the tool confirm: see the top.
function confirm(msg, meta) {
  const message = msg.params?.arguments?.message;
  const state = `confirm:${Buffer.from(String(message)).toString("base64url")}`;
  const answer = msg.params?.inputResponses?.confirm;
  if (answer === undefined) {
    if (typeof meta["io.modelcontextprotocol/clientCapabilities"].elicitation !== "object") {
      return fail(msg.id, -32021, "Missing required client capability: elicitation");
    }
    return send({
      id: msg.id,
      result: {
        resultType: "input_required",
        inputRequests: {
          confirm: {
            method: "elicitation/create",
            params: { mode: "form", message: `Confirm ${message}?`, requestedSchema: { type: "object", properties: { ok: { type: "boolean" } } } },
          },
        },
        requestState: state,
      },
    });
  }
  if (msg.params?.requestState !== state) return fail(msg.id, -32602, "invalid params: requestState is not this call's");
  return complete(msg.id, { content: [{ type: "text", text: `confirmed: ${answer.action} ${message}` }] });
}
