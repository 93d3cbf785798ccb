// elicit.mjs: a stdio MCP server of the legacy revision (the initialize
// handshake) whose tool asks its client for input the legacy way: during
// the call, with a request of its own (elicitation/create), written on the
// wire (no dependencies).
//
//   node elicit.mjs
//
// Tools: confirm {message} asks the client "Confirm MESSAGE?" and answers
// "confirmed: ACTION MESSAGE" (ACTION is the client's: accept, decline,
// cancel), or "refused: ERROR" when the client answered with an error.
import { createInterface } from "node:readline";

const send = (msg) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...msg }) + "\n");
const text = (id, t) => send({ id, result: { content: [{ type: "text", text: t }] } });
const asks = new Map(); // our requests' ids, to what their answer does
let nextAsk = 0;

const rl = createInterface({ input: process.stdin });
rl.on("line", (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return send({ id: null, error: { code: -32700, message: "parse error" } });
  }
  if (msg.method === undefined) {
    const then = asks.get(msg.id);
    asks.delete(msg.id);
    return then?.(msg);
  }
  if (msg.id === undefined) return; // notifications
  switch (msg.method) {
    case "initialize":
      return send({
        id: msg.id,
        result: {
          protocolVersion: msg.params?.protocolVersion ?? "2025-06-18",
          capabilities: { tools: {} },
          serverInfo: { name: "elicit-legacy", version: "1" },
        },
      });
    case "ping":
      return send({ id: msg.id, result: {} });
    case "tools/list":
      return send({
        id: msg.id,
        result: { tools: [{ name: "confirm", description: "asks the client to confirm", inputSchema: { type: "object", properties: { message: { type: "string" } } } }] },
      });
    case "tools/call": {
      if (msg.params?.name !== "confirm") return send({ id: msg.id, error: { code: -32602, message: `unknown tool ${msg.params?.name}` } });
      const message = msg.params?.arguments?.message;
      const ask = `ask-${++nextAsk}`;
      asks.set(ask, (answer) => {
        if (answer.error) return text(msg.id, `refused: ${answer.error.message}`);
        text(msg.id, `confirmed: ${answer.result?.action} ${message}`);
      });
      return send({
        id: ask,
        method: "elicitation/create",
        params: { mode: "form", message: `Confirm ${message}?`, requestedSchema: { type: "object", properties: { ok: { type: "boolean" } } } },
      });
    }
    default:
      return send({ id: msg.id, error: { code: -32601, message: `method not found: ${msg.method}` } });
  }
});
