// Package e2e checks mcpgen against software that nobody here wrote: the
// real Codex CLI and Claude Code, which must accept what mcpgen emits and
// start every server in it; the official TypeScript MCP SDK client, driving
// mcpgen serve; and third-party MCP servers run from a manifest.
//
// The tests are skipped unless MCPGEN_E2E=1, and need the clients that
// ../shared/clients/install.sh installs:
//
//	eval "$(../shared/clients/install.sh)"
//	MCPGEN_E2E=1 go test -count=1 -v ./e2e/
package e2e
