//go:build unix

package e2e

// The share tests run the real mcpgen binary as a workspace launcher and
// drive it with real clients: the official TypeScript SDK client (through
// testdata/share/agents.mjs), raw JSON-RPC lines over `mcpgen connect`, and
// the real Codex and Claude Code through configs from `emit --launcher`.
// They check the issue "share one server process among every agent of a
// workspace": one process per server whatever the number of clients, every
// answer to its own caller, ids, progress tokens and cancellations remapped,
// crashes and reloads survived by the clients, and nothing left behind.
//
// They run only with MCPGEN_E2E=1, after the clients' install script:
//
//	eval "$(e2e/clients/install.sh)"
//	MCPGEN_E2E=1 go test -count=1 -v -run Share ./e2e/
//
// Nothing here asserts a timing: every wait is a generous guard against a
// hang, and the benchmarks live in testdata/share/bench.sh.
//
// The files: share_world_test.go (a workspace, its launcher, its
// processes), share_sdk_test.go and share_line_test.go (the two kinds of
// client), then the phases: share_clients_test.go (many clients, the
// reference server), share_cancel_test.go (ids, progress, cancellation),
// share_crash_test.go (crashes and reloads), share_codex_claude_test.go
// (the real agents) and share_modern_test.go (the agents with a server of
// the modern revision only).

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// Hang guards, never timing assertions.
const (
	shareWait  = 30 * time.Second
	shareQuiet = 500 * time.Millisecond // how long "nothing more arrives" is watched
)

func TestShare(t *testing.T) {
	if os.Getenv("MCPGEN_E2E") != "1" {
		t.Skip("end-to-end: set MCPGEN_E2E=1 (after eval \"$(e2e/clients/install.sh)\")")
	}
	for _, v := range []string{"MCP_NODE_MODULES", "SERVER_EVERYTHING"} {
		if os.Getenv(v) == "" {
			t.Fatalf("%s is not set: run eval \"$(e2e/clients/install.sh)\" first", v)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node: %v", err)
	}
	bin := shareBinary(t)

	t.Run("EightClients", func(t *testing.T) { shareEightClients(t, bin) })
	t.Run("Crash", func(t *testing.T) { shareCrash(t, bin) })
	t.Run("CancelProgressRaw", func(t *testing.T) { shareCancelProgressRaw(t, bin) })
	t.Run("CancelProgressSDK", func(t *testing.T) { shareCancelProgressSDK(t, bin) })
	t.Run("Everything", func(t *testing.T) { shareEverything(t, bin) })
	t.Run("ReloadAndCrash", func(t *testing.T) { shareReloadAndCrash(t, bin) })
	t.Run("Agents", func(t *testing.T) { shareAgentsCodexClaude(t, bin) })
	t.Run("ModernServer", func(t *testing.T) { shareModernServer(t, bin) })
	t.Run("Translation", func(t *testing.T) { shareTranslation(t, bin) })
}

// shareBinary builds mcpgen for the share tests, with the race detector
// when the tests have it, so that the launcher's races surface too.
func shareBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcpgen")
	args := []string{"build", "-o", bin}
	if shareRace() {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "../cmd/mcpgen")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, out)
	}
	return bin
}

func shareRace() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}

// shareTestdata returns the absolute path of a file of testdata/share.
func shareTestdata(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "share", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
