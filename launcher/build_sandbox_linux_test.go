package launcher

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgen/mcpgen/internal/sandbox"
	"github.com/mcpgen/mcpgen/manifest"
)

// TestBuildSandboxed: a server's build step runs in its sandbox, with the
// manifest's directory writable: it writes its output there, and cannot
// write beside it; without the sandbox it can, which shows the test can
// fail.
func TestBuildSandboxed(t *testing.T) {
	if r := sandbox.Inspect(&sandbox.Policy{Network: sandbox.Network{Mode: sandbox.NetNone}}); !strings.Contains(r.Platform, "landlock") {
		t.Skipf("no Landlock here: %s", r.Platform)
	}
	root := t.TempDir()
	src := filepath.Join(root, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(root, "outside")
	m := &manifest.Manifest{Dir: src}
	s := &manifest.Server{Name: "srv", Build: []string{"sh", "-c", "echo built > out && echo owned > " + outside}}
	policy := &sandbox.Policy{Network: sandbox.Network{Mode: sandbox.NetNone}}

	if _, _, err := Build(context.Background(), nil, m, s, nil, os.Environ(), true); err != nil {
		t.Fatalf("without the sandbox: %v", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatalf("without the sandbox the build wrote nothing beside the manifest: %v (the test cannot tell a refusal from a broken case)", err)
	}
	os.Remove(outside)
	os.Remove(filepath.Join(src, "out"))

	_, _, err := Build(context.Background(), nil, m, s, policy, os.Environ(), true)
	if err == nil || !strings.Contains(err.Error(), "Permission denied") {
		t.Errorf("sandboxed, writing beside the manifest: got %v, want Permission denied", err)
	}
	if b, err := os.ReadFile(filepath.Join(src, "out")); err != nil || string(b) != "built\n" {
		t.Errorf("sandboxed, the build's output in the manifest's directory: %q, %v", b, err)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Errorf("sandboxed, the build wrote %s", outside)
	}
	if len(policy.Write) != 0 {
		t.Errorf("Build changed the server's policy: write %q", policy.Write)
	}
}
