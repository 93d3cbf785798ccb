#!/usr/bin/env bash
# client.sh: mcpgen as the client of the official MCP conformance suite
# (@modelcontextprotocol/conformance). For each client scenario the suite
# starts a test server and runs this script with the server's URL as its
# last argument, the scenario's name in MCP_CONFORMANCE_SCENARIO, the
# revision its server speaks in MCP_CONFORMANCE_PROTOCOL_VERSION and, for
# some, what to call in MCP_CONFORMANCE_CONTEXT (JSON); the script maps the
# scenario to the mcpgen commands that exercise it. MCPGEN names the mcpgen
# binary (default: mcpgen on PATH), NODE a node to read the context with.
# mcpgen finds the server's revision itself (--protocol auto), unless
# MCPGEN_CONFORMANCE_PIN=1 pins it to the suite's. run.sh drives it.
set -euo pipefail
url="${!#}"
mcpgen="${MCPGEN:-mcpgen}"
protocol=auto
if [ "${MCPGEN_CONFORMANCE_PIN:-}" = 1 ]; then
  protocol="${MCP_CONFORMANCE_PROTOCOL_VERSION:-auto}"
fi
tools() { "$mcpgen" tools "$1" --url "$url" --protocol "$protocol" "${@:2}"; }

case "${MCP_CONFORMANCE_SCENARIO:-}" in
  initialize|request-metadata|json-schema-ref-no-deref)
    # The handshake (or the era's probe), then tools/list: every request
    # carries the revision's _meta and headers; a $ref is never fetched.
    tools ls ;;
  tools_call)
    # The server's add_numbers tool, with arguments typed by its schema.
    tools call add_numbers a=5 b=3 ;;
  sse-retry)
    # The call's event stream closes before the answer: mcpgen must
    # reconnect after the server's retry delay, with Last-Event-ID.
    tools call test_reconnection ;;
  elicitation-sep1034-client-defaults)
    # The tool asks for a form (elicitation); mcpgen accepts its defaults.
    tools call test_client_elicitation_defaults ;;
  sep-2322-client-request-state)
    # Multi round-trip calls: input_required answered and retried with the
    # server's requestState (or none), a call between them, a result
    # without resultType (complete).
    for tool in test_mrtr_echo_state test_mrtr_no_state test_mrtr_unrelated test_mrtr_no_result_type; do
      tools call "$tool"
    done ;;
  http-standard-headers)
    # Mcp-Method on each POST, Mcp-Name on each call (a name with a hyphen).
    tools ls
    tools call test_headers
    tools call my-hyphenated-tool ;;
  http-custom-headers)
    # The context lists calls whose arguments x-mcp-header annotations
    # mirror into Mcp-Param headers: made as listed.
    node="${NODE:-node}"
    calls="$("$node" -e '
      const ctx = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}");
      for (const c of ctx.toolCalls || []) console.log(JSON.stringify([c.name, JSON.stringify(c.arguments || {})]));')"
    [ -n "$calls" ] || { echo "client.sh: no toolCalls in MCP_CONFORMANCE_CONTEXT" >&2; exit 2; }
    while IFS= read -r call; do
      name="$("$node" -e 'console.log(JSON.parse(process.argv[1])[0])' "$call")"
      args="$("$node" -e 'console.log(JSON.parse(process.argv[1])[1])' "$call")"
      tools call "$name" --args "$args"
    done <<<"$calls" ;;
  http-invalid-tool-headers)
    # Every tool mcpgen lists is called: those whose x-mcp-header
    # annotations are invalid must not be among them.
    names="$(tools ls | awk 'NR > 1 { print $1 }')"
    [ -n "$names" ] || { echo "client.sh: mcpgen listed no tools" >&2; exit 1; }
    for name in $names; do
      tools call "$name"
    done ;;
  json-schema-2020-12-preservation)
    # (Not scored.) A tool's inputSchema as tools ls --json prints it (as
    # listed), handed back verbatim to the echo tool.
    node="${NODE:-node}"
    schema="$(tools ls --json | "$node" -e '
      let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
        const t = JSON.parse(s).find(t => t.name === "json_schema_2020_12_tool");
        console.log(JSON.stringify({schema: t ? t.inputSchema : null}));
      })')"
    tools call json_schema_echo --args "$schema" ;;
  *)
    echo "client.sh: no mcpgen command for scenario '${MCP_CONFORMANCE_SCENARIO:-}'" >&2
    exit 2 ;;
esac
