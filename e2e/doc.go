// Package e2e checks mcpgen against software that nobody here wrote: the
// real Codex CLI and Claude Code, which must accept what mcpgen emits and
// start every server in it, and so must Gemini CLI, Qwen Code, opencode and
// Copilot CLI; rulesync, an independent reader of the other agents' files;
// the official TypeScript MCP SDK client, driving mcpgen serve; and
// third-party MCP servers run from a manifest.
//
// The tests are skipped unless MCPGEN_E2E=1, and need the clients that
// clients/install.sh installs: the versions that clients/package.json and
// its lockfile pin, with npm ci into a cache directory, and on linux-x64
// those of clients/linux-x64 (opencode, Qwen Code; elsewhere their tests
// skip). From the repository's root:
//
//	eval "$(e2e/clients/install.sh)"
//	MCPGEN_E2E=1 go test -count=1 -v ./e2e/
//
// The validators (validate_test.go) are the package's own: they run the
// real Codex and Claude Code on a config, offline, in a throwaway home.
package e2e
