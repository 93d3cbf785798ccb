// http-resume.mjs: the official TypeScript MCP SDK client (v1) over
// Streamable HTTP, resuming a broken stream on its own: it connects to URL
// (with "Authorization: Bearer $MCP_TOKEN" when that variable is set),
// calls the tool progress {steps, ms, tag} with a progress handler, and
// cuts the call's event stream (as a network would) once the first event
// with an id has come through. The SDK then GETs with Last-Event-ID; this
// prints what it got as one JSON object: {"text": the result's text,
// "progress": [the progress values seen], "resumes": [the Last-Event-ID
// of each GET], "cut": the id of the event after which the stream was
// cut}, or {"error": message}.
//
//   node http-resume.mjs URL STEPS MS
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

const [url, steps, ms] = process.argv.slice(2);
const headers = process.env.MCP_TOKEN ? { Authorization: `Bearer ${process.env.MCP_TOKEN}` } : {};
const out = { progress: [], resumes: [] };

// cutAfterFirstID passes a response's body through up to the end of the
// first event with an id, then fails it, as a dropped connection does.
function cutAfterFirstID(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let seen = "";
  let cut = false;
  return new ReadableStream({
    async pull(controller) {
      if (cut) {
        await reader.cancel().catch(() => {});
        // After the event went through: an error discards what is queued.
        controller.error(new TypeError("terminated: the test cut the stream"));
        return;
      }
      const { value, done } = await reader.read();
      if (done) {
        controller.close();
        return;
      }
      const before = seen.length;
      seen += decoder.decode(value, { stream: true });
      const m = /(?:^|\n)id: ([^\n]*)\n(?:[^\n]+\n)*\n/.exec(seen);
      if (!m) {
        controller.enqueue(value);
        return;
      }
      out.cut = m[1];
      cut = true;
      controller.enqueue(new TextEncoder().encode(seen.slice(before, m.index + m[0].length)));
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

let cutDone = false;
async function cuttingFetch(input, init) {
  const method = init?.method ?? "GET";
  const h = new Headers(init?.headers);
  if (method === "GET" && h.get("last-event-id")) {
    out.resumes.push(h.get("last-event-id"));
  }
  const resp = await fetch(input, init);
  const isCall = method === "POST" && typeof init?.body === "string" && init.body.includes('"tools/call"');
  if (!cutDone && isCall && resp.ok && (resp.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    cutDone = true;
    return new Response(cutAfterFirstID(resp.body), { status: resp.status, statusText: resp.statusText, headers: resp.headers });
  }
  return resp;
}

const client = new Client({ name: "mcpgen-e2e-http-resume", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers },
  fetch: cuttingFetch,
  reconnectionOptions: { initialReconnectionDelay: 1000, maxReconnectionDelay: 2000, reconnectionDelayGrowFactor: 1.5, maxRetries: 3 },
});
try {
  await client.connect(transport);
} catch (e) {
  console.error(`connect: ${e.message}`);
  process.exit(1);
}
try {
  const res = await client.callTool(
    { name: "progress", arguments: { steps: Number(steps), ms: Number(ms), tag: "resumed" } },
    undefined,
    { onprogress: (p) => out.progress.push(p.progress), timeout: 60000 },
  );
  out.text = (res.content ?? []).filter((x) => x.type === "text").map((x) => x.text).join("");
} catch (e) {
  out.error = e.message;
}
await transport.terminateSession().catch(() => {});
await client.close();
console.log(JSON.stringify(out));
