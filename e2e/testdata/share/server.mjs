// server.mjs: a small stdio MCP server for the share tests, written on the
// wire (no dependencies) so that it is fast and does what the tests need.
//
//   node server.mjs [--instance TAG]
//
// --instance only marks the process, so that a test can count its
// processes. Environment:
//   SHARE_LOG    a file that gets "PID METHOD" for every request but tools/call
//   SHARE_TOOLS  a file read at startup: more tool names (comma-separated),
//                so that a restarted process can offer other tools
//   SHARE_NAME   echo answers "SHARE_NAME: message", so that a test can
//                tell which server answered
//
// Tools: echo {message} answers message; pid answers the process id;
// slow {ms, tag, stubborn} answers tag after ms; progress {steps, ms, tag}
// sends steps progress notifications (message = tag), then answers tag;
// cancelled answers the tags of the requests cancelled so far (JSON).
// A cancelled request gets no answer, unless it is a stubborn slow one,
// which answers anyway (as a server may, in a race with the cancellation).
import { appendFileSync, readFileSync } from "node:fs";
import { createInterface } from "node:readline";

const log = process.env.SHARE_LOG;
const name = process.env.SHARE_NAME;
let extra = [];
if (process.env.SHARE_TOOLS) {
  try {
    extra = readFileSync(process.env.SHARE_TOOLS, "utf8").split(",").map((s) => s.trim()).filter(Boolean);
  } catch {}
}
const tools = ["echo", "pid", "slow", "progress", "cancelled", ...extra].map((name) => ({
  name,
  description: `the ${name} tool`,
  inputSchema: { type: "object" },
}));

const pending = new Map(); // JSON of the id -> {timer, tag}
const cancelled = [];

const send = (msg) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...msg }) + "\n");
const text = (id, t) => send({ id, result: { content: [{ type: "text", text: t }] } });

function call(id, params) {
  const a = params.arguments ?? {};
  const token = params._meta?.progressToken;
  switch (params.name) {
    case "echo":
      return text(id, name ? `${name}: ${a.message}` : String(a.message));
    case "pid":
      return text(id, String(process.pid));
    case "cancelled":
      return text(id, JSON.stringify(cancelled));
    case "slow": {
      const key = JSON.stringify(id);
      const timer = setTimeout(() => { pending.delete(key); text(id, String(a.tag)); }, Number(a.ms ?? 1000));
      pending.set(key, { timer, tag: a.tag, stubborn: a.stubborn === true });
      return;
    }
    case "progress": {
      const key = JSON.stringify(id);
      const steps = Number(a.steps ?? 3);
      let i = 0;
      const step = () => {
        i++;
        if (token !== undefined) {
          send({ method: "notifications/progress", params: { progressToken: token, progress: i, total: steps, message: String(a.tag) } });
        }
        if (i >= steps) { pending.delete(key); text(id, String(a.tag)); return; }
        pending.get(key).timer = setTimeout(step, Number(a.ms ?? 50));
      };
      pending.set(key, { timer: setTimeout(step, Number(a.ms ?? 50)), tag: a.tag });
      return;
    }
  }
  if (extra.includes(params.name)) return text(id, params.name);
  send({ id, error: { code: -32602, message: `unknown tool ${params.name}` } });
}

createInterface({ input: process.stdin, crlfDelay: Infinity }).on("line", (line) => {
  if (!line.trim()) return;
  let msg;
  try { msg = JSON.parse(line); } catch { return send({ id: null, error: { code: -32700, message: "parse error" } }); }
  if (msg.method && msg.id !== undefined) {
    if (log && msg.method !== "tools/call") appendFileSync(log, `${process.pid} ${msg.method}\n`);
    switch (msg.method) {
      case "initialize":
        return send({ id: msg.id, result: {
          protocolVersion: msg.params?.protocolVersion ?? "2025-06-18",
          capabilities: { tools: { listChanged: true } },
          serverInfo: { name: "share-test-server", version: "1.0.0" },
        } });
      case "ping":
        return send({ id: msg.id, result: {} });
      case "tools/list":
        return send({ id: msg.id, result: { tools } });
      case "tools/call":
        return call(msg.id, msg.params ?? {});
      default:
        return send({ id: msg.id, error: { code: -32601, message: `no method ${msg.method}` } });
    }
  }
  if (msg.method === "notifications/cancelled") {
    const key = JSON.stringify(msg.params?.requestId);
    const p = pending.get(key);
    if (p) {
      cancelled.push(p.tag);
      if (!p.stubborn) { clearTimeout(p.timer); pending.delete(key); }
    }
  }
});
