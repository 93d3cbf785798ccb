// agents.mjs: MCP clients of the official TypeScript SDK (Client +
// StdioClientTransport), driven by a Go test one JSON line at a time.
//
//   node agents.mjs        (MCP_NODE_MODULES must point at the SDK's node_modules)
//
// Every command on stdin carries a tag; its answer on stdout carries the
// same tag. Events that no command asked for ({"event": ...}) come on
// stdout too: list_changed, log, error (the SDK's onerror: a response or a
// progress notification for nothing it sent), close, progress.
//
//   {tag, op:"connect", client, cmd:[...], env:{...}}      -> {serverInfo, tools}
//   {tag, op:"list", client}                               -> {tools}
//   {tag, op:"call", client, name, args, timeoutMs, progress}
//                                       -> {result} or {error:{code,message}}, and progress
//                                          (each also as an event as it comes)
//   {tag, op:"abort", target}           aborts the call with tag target -> {}
//   {tag, op:"echo", client, calls, concurrency, prefix, tools}
//       unique echo calls, each checked -> {calls, errors:[...], wrong:[...]};
//       tools (default ["echo"]) are called in turn, and a tool named
//       SERVER__echo must answer "SERVER: message" (server.mjs's SHARE_NAME)
//   {tag, op:"close", client}                              -> {}
// Stdin's end closes every client, then the process exits.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const nm = process.env.MCP_NODE_MODULES;
if (!nm) {
  console.error("agents.mjs: set MCP_NODE_MODULES (eval \"$(e2e/clients/install.sh)\" from the repository)");
  process.exit(2);
}
const sdk = (p) => import(pathToFileURL(join(nm, "@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { ToolListChangedNotificationSchema, LoggingMessageNotificationSchema } = await sdk("types.js");

const out = (msg) => process.stdout.write(JSON.stringify(msg) + "\n");
const clients = new Map();
const aborts = new Map();
const errorOf = (e) => ({ code: e?.code ?? null, message: String(e?.message ?? e) });

async function connect(c) {
  const transport = new StdioClientTransport({
    command: c.cmd[0], args: c.cmd.slice(1), stderr: "inherit",
    env: { ...process.env, ...(c.env ?? {}) },
  });
  const client = new Client({ name: `agent-${c.client}`, version: "1.0.0" }, { capabilities: {} });
  client.onerror = (e) => out({ event: "error", client: c.client, error: errorOf(e) });
  client.onclose = () => out({ event: "close", client: c.client });
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => out({ event: "list_changed", client: c.client }));
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => out({ event: "log", client: c.client, params: n.params }));
  await client.connect(transport);
  clients.set(c.client, client);
  const { tools } = await client.listTools();
  return { serverInfo: client.getServerVersion(), capabilities: client.getServerCapabilities(), tools: tools.map((t) => t.name) };
}

function get(name) {
  const c = clients.get(name);
  if (!c) throw new Error(`no client ${name}`);
  return c;
}

async function call(c) {
  const ctl = new AbortController();
  aborts.set(c.tag, ctl);
  const progress = [];
  const opts = { signal: ctl.signal, timeout: c.timeoutMs ?? 60000 };
  if (c.progress) {
    opts.onprogress = (p) => { progress.push(p); out({ event: "progress", client: c.client, target: c.tag, params: p }); };
  }
  try {
    const result = await get(c.client).callTool({ name: c.name, arguments: c.args ?? {} }, undefined, opts);
    return { result, progress };
  } catch (e) {
    return { error: errorOf(e), progress };
  } finally {
    aborts.delete(c.tag);
  }
}

// echo makes unique calls and checks that each answer is its own.
async function echo(c) {
  const client = get(c.client);
  const errors = [], wrong = [];
  let next = 0, done = 0;
  await Promise.all(Array.from({ length: c.concurrency ?? 1 }, async () => {
    for (let i = next++; i < c.calls; i = next++) {
      const message = `${c.prefix}-${i}-${Math.random().toString(36).slice(2)}`;
      const tools = c.tools ?? ["echo"];
      const tool = tools[i % tools.length];
      const server = tool.includes("__") ? tool.split("__")[0] : null;
      try {
        const r = await client.callTool({ name: tool, arguments: { message } });
        const text = r.content?.[0]?.text;
        const ok = server ? text === `${server}: ${message}` : text === message || text === `Echo: ${message}`;
        if (!ok || r.isError) wrong.push({ tool, sent: message, got: text });
        done++;
      } catch (e) {
        errors.push(errorOf(e));
      }
    }
  }));
  return { calls: done, errors, wrong };
}

async function run(c) {
  switch (c.op) {
    case "connect": return connect(c);
    case "list": return { tools: (await get(c.client).listTools()).tools.map((t) => t.name) };
    case "call": return call(c);
    case "abort": aborts.get(c.target)?.abort("aborted by the test"); return {};
    case "echo": return echo(c);
    case "close": await get(c.client).close(); clients.delete(c.client); return {};
  }
  throw new Error(`unknown op ${c.op}`);
}

const pending = new Set();
createInterface({ input: process.stdin, crlfDelay: Infinity })
  .on("line", (line) => {
    if (!line.trim()) return;
    const c = JSON.parse(line);
    const p = run(c).then((r) => out({ tag: c.tag, ...r }), (e) => out({ tag: c.tag, fail: errorOf(e) }));
    pending.add(p);
    p.finally(() => pending.delete(p));
  })
  .on("close", async () => {
    const quit = new Promise((resolve) => setTimeout(resolve, 10000));
    await Promise.race([Promise.allSettled([...pending]), quit]);
    await Promise.race([Promise.allSettled([...clients.values()].map((c) => c.close())), quit]);
    process.exit(0);
  });
