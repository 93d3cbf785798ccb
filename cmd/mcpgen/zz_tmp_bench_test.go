package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgen/mcpgen/providers/registry"
)

func BenchmarkZZEach(b *testing.B) {
	manifest := benchManifest(b, b.TempDir())
	home := b.TempDir()
	for _, dir := range []string{".codex", ".config/Claude", ".gemini", ".qwen", ".config/opencode", ".cursor",
		".config/Code/User", ".copilot", ".codeium/windsurf", ".kiro/settings", ".config/crush", ".junie/mcp", ".warp",
		".config/amp", ".cline/data/settings", ".config/zed", ".config/goose", ".gemini/config"} {
		os.MkdirAll(filepath.Join(home, dir), 0o755)
	}
	os.WriteFile(filepath.Join(home, ".claude.json"), []byte("{}\n"), 0o600)
	b.Setenv("HOME", home)
	for _, v := range []string{"XDG_CONFIG_HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR"} {
		b.Setenv(v, "")
	}
	for _, provider := range append(registry.Names(), "all") {
		b.Run(provider, func(b *testing.B) {
			args := emitArgs(manifest, provider, []string{"--write", "--scope", "user", "--workspace", "ws-42"})
			var e strings.Builder
			if code := run(args, strings.NewReader(""), io.Discard, &e); code != 0 {
				b.Skip("exit", code, e.String())
			}
			for b.Loop() {
				run(args, strings.NewReader(""), io.Discard, io.Discard)
			}
		})
	}
}
