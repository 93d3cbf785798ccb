package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// benchServers is how many servers the benchmark manifest holds: a large
// workspace, to show what emit costs where it matters.
const benchServers = 100

// benchManifest writes a manifest of benchServers servers of every kind,
// each with what makes its provider work: context and secrets in env and
// args (which send Codex through mcpgen serve), cwd, timeouts, remote
// headers and declared tools with arguments.
func benchManifest(tb testing.TB, dir string) string {
	tb.Helper()
	var b strings.Builder
	b.WriteString("version = 1\n\n[workspace]\ndir = \"/srv/ws/${WORKSPACE_ID}\"\nuser = \"bench\"\n\n[workspace.vars]\nTENANT = \"acme\"\n")
	for i := range benchServers {
		fmt.Fprintf(&b, "\n[servers.s%03d]\ndescription = \"server %d\"\n", i, i)
		switch i % 5 {
		case 0: // stdio, native for both providers
			fmt.Fprintf(&b, "command = \"npx\"\nargs = [\"-y\", \"@acme/server-%d\"]\n", i)
			b.WriteString("env = { API_KEY = \"${API_KEY}\", MEMORY_FILE_PATH = \"${WORKSPACE_DIR}/.memory.json\" }\n")
			b.WriteString("startup_timeout = \"30s\"\ntool_timeout = \"2m\"\n")
		case 1:
			b.WriteString("builtin = \"files\"\nread_only = true\n")
		case 2:
			fmt.Fprintf(&b, "[servers.s%03d.tools.status]\nrun = [\"git\", \"status\", \"--short\"]\n", i)
			fmt.Fprintf(&b, "[servers.s%03d.tools.log]\nrun = [\"git\", \"log\", \"-n\", \"{count}\", \"--\", \"{path}\"]\n", i)
			b.WriteString("args.count = { type = \"integer\", default = 10 }\nargs.path = { type = \"string\", required = false }\n")
		case 3: // remote: left out of Claude Desktop
			fmt.Fprintf(&b, "url = \"https://mcp%d.example.com/mcp\"\nbearer_token_env = \"DOCS_TOKEN\"\n", i)
			b.WriteString("headers = { X-Tenant = \"${TENANT}\", X-Workspace = \"${WORKSPACE_ID}\" }\n")
		case 4: // context inside args and a cwd: mcpgen serve for Codex
			fmt.Fprintf(&b, "command = \"./bin/tool-%d\"\nargs = [\"--root\", \"${WORKSPACE_DIR}/data\", \"--token=${TOKEN}\"]\ncwd = \"data\"\ncontext = [\"WORKSPACE_ID\", \"WORKSPACE_DIR\"]\n", i)
		}
	}
	path := filepath.Join(dir, "mcpgen.toml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// benchCases are the emits measured: each provider, portable where it can
// be (Claude Desktop needs --workspace).
var benchCases = []struct {
	provider string
	args     []string
}{
	{"codex", nil},
	{"claude", nil},
	{"claude-desktop", []string{"--workspace", "ws-42"}},
}

func emitArgs(manifest, provider string, extra []string) []string {
	return append([]string{"emit", "--manifest", manifest, "--provider", provider, "--mcpgen-path", "/usr/local/bin/mcpgen"}, extra...)
}

// BenchmarkEmit measures a whole emit inside the process: flags, loading
// and validating the manifest, rendering every entry, printing.
func BenchmarkEmit(b *testing.B) {
	manifest := benchManifest(b, b.TempDir())
	for _, bc := range benchCases {
		b.Run(bc.provider, func(b *testing.B) {
			args := emitArgs(manifest, bc.provider, bc.args)
			var out, errs bytes.Buffer
			if code := run(args, strings.NewReader(""), &out, &errs); code != 0 {
				b.Fatalf("mcpgen %s: exit %d\n%s", strings.Join(args, " "), code, errs.String())
			}
			if n := strings.Count(out.String(), "/usr/local/bin/mcpgen"); n < benchServers/5 {
				b.Fatalf("the output runs mcpgen serve %d times, want at least %d:\n%s", n, benchServers/5, out.String())
			}
			b.SetBytes(int64(out.Len()))
			b.ReportAllocs()
			for b.Loop() {
				run(args, strings.NewReader(""), io.Discard, io.Discard)
			}
		})
	}
}

// binDir holds the binaries that the benchmarks and tests build once for
// the whole test binary (mcpgen, the floor); cleanupM removes it.
var binDir string

var makeBinDir = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "mcpgen-bench-")
	if err != nil {
		return "", err
	}
	binDir = dir
	return dir, nil
})

var buildMcpgen = sync.OnceValues(func() (string, error) {
	dir, err := makeBinDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "mcpgen"+exeSuffix)
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// BenchmarkEmitProcess measures what a user or a CI job waits for: a
// built mcpgen started, emitting, and exited. The target is under 20 ms
// per process.
func BenchmarkEmitProcess(b *testing.B) {
	bin, err := buildMcpgen()
	if err != nil {
		b.Fatal(err)
	}
	manifest := benchManifest(b, b.TempDir())
	for _, bc := range benchCases {
		b.Run(bc.provider, func(b *testing.B) {
			args := emitArgs(manifest, bc.provider, bc.args)
			if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
				b.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
			}
			for b.Loop() {
				// Output to /dev/null, as nil streams are: no copying
				// goroutines in the measurement.
				if err := exec.Command(bin, args...).Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEmitAll measures emit --provider all --write for every agent at
// once, against one agent's emit (the target: all of them in under 3x one's
// time), in one process, with a home where every agent is set up and its
// file up to date: what a run that changes nothing costs.
func BenchmarkEmitAll(b *testing.B) {
	manifest := benchManifest(b, b.TempDir())
	home := b.TempDir()
	for _, dir := range []string{".codex", ".config/Claude", ".gemini", ".qwen", ".config/opencode", ".cursor",
		".config/Code/User", ".copilot", ".codeium/windsurf", ".kiro/settings", ".config/crush", ".junie/mcp", ".warp",
		".config/amp", ".cline/data/settings", ".config/zed", ".config/goose", ".gemini/config"} {
		if err := os.MkdirAll(filepath.Join(home, dir), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte("{}\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Setenv("HOME", home)
	for _, v := range []string{"XDG_CONFIG_HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR"} {
		b.Setenv(v, "")
	}
	for _, provider := range []string{"codex", "gemini", "all"} {
		b.Run(provider, func(b *testing.B) {
			args := emitArgs(manifest, provider, []string{"--write", "--scope", "user", "--workspace", "ws-42"})
			var errs bytes.Buffer
			if code := run(args, strings.NewReader(""), io.Discard, &errs); code != 0 {
				b.Fatalf("mcpgen %s: exit %d\n%s", strings.Join(args, " "), code, errs.String())
			}
			if provider == "all" && strings.Contains(errs.String(), "skipped") {
				b.Fatalf("an agent was skipped:\n%s", errs.String())
			}
			b.ReportAllocs()
			before, ok := cpuTime()
			for b.Loop() {
				if code := run(args, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
					b.Fatal("exit", code)
				}
			}
			if after, _ := cpuTime(); ok {
				// Steadier than ns/op on a busy machine: the work, not the wait.
				b.ReportMetric(float64(after-before)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
