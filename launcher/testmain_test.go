package launcher

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpgen/mcpgen/internal/sandbox"
	"github.com/mcpgen/mcpgen/launcher/internal/testserver"
)

// The test binary doubles as the MCP servers that the sessions under test
// run: see testserver.Main for how, and its serve for the modes.
func TestMain(m *testing.M) {
	// A sandboxed server's setup step is mcpgen itself, here this binary.
	if code, ok := sandbox.Main(); ok {
		os.Exit(code)
	}
	testserver.Main()
	os.Exit(m.Run())
}

// Hang guards: generous, never a timing assertion.
const (
	waitLong  = testserver.WaitLong
	waitQuiet = testserver.WaitQuiet
)

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
