package files

import (
	"path/filepath"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"github.com/mcpgen/mcpgen/mcp"
)

// FuzzResolve checks path resolution against the symlink fixture: whatever
// the input, resolve and follow never panic and never return a path outside
// the workspace, and a path that follow returns, once the kernel resolves
// it, is inside too.
func FuzzResolve(f *testing.F) {
	w, top := fixture(f)
	for _, seed := range []string{
		".", "", "a.txt", "..", "../outside/secret.txt", "a/../../x", "/etc/passwd",
		w.dir, w.dir + "/a.txt", w.dir + "/../outside", filepath.Join(top, "outside", "secret.txt"),
		"link-out-dir/inner.txt", "abs-out-dir/secret.txt", "chain-out1/outside", "sub/up/..",
		"sub/up/link-out-file", "sub/deep-out", "loop1/x", "self", "root-slash/etc",
		"link-in-dir/b.txt", "abs-in", "chain-in1", `"a\x2etxt"`, `"../x"`, "new\nline.txt",
		"bad\xff\xfe.txt", "a\x00b", strings.Repeat("../", 20), strings.Repeat("a/", 3000),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		rel, err := w.resolve(name)
		if err != nil {
			return
		}
		if !filepath.IsLocal(rel) || strings.Contains(rel, "\x00") {
			t.Fatalf("resolve(%q) = %q, not a local path", name, rel)
		}
		for _, last := range []bool{true, false} {
			p, err := w.follow(name, rel, last)
			if err != nil {
				continue
			}
			if !filepath.IsLocal(p) {
				t.Fatalf("follow(%q, last %v) = %q, not a local path", name, last, p)
			}
			check := filepath.Join(w.dir, p)
			if !last && p != "." {
				check = filepath.Dir(check) // the last component is not followed
			}
			real, err := filepath.EvalSymlinks(check)
			if err != nil {
				continue // missing: writes create it below the checked parent
			}
			if _, ok := w.within(real); !ok && real != w.real {
				t.Fatalf("follow(%q, last %v) = %q, which the kernel resolves to %s, outside %s", name, last, p, real, w.real)
			}
		}
	})
}

// BenchmarkReadFile reads a 100 KiB source file through the read_file
// handler, and through the handler plus the JSON encoding of the result,
// as the server sends it.
func BenchmarkReadFile(b *testing.B) {
	var content strings.Builder
	for content.Len() < 100<<10 {
		content.WriteString("\tif err := w.root.Rename(tmp, p); err != nil { return err } // 64b\n")
	}
	w := workspaceWith(b, map[string]string{"src/big.go": content.String()[:100<<10]})
	handler := readTool(w).Handler
	req := &mcp.CallToolRequest{Name: "read_file", Arguments: json.RawMessage(`{"path":"src/big.go"}`)}
	run := func(b *testing.B, encode bool) {
		b.SetBytes(100 << 10)
		b.ReportAllocs()
		for b.Loop() {
			res, err := handler(b.Context(), req)
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
			if encode {
				if _, err := json.Marshal(res); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("handler", func(b *testing.B) { run(b, false) })
	b.Run("handler+encode", func(b *testing.B) { run(b, true) })
}
