// Package templates holds the files mcpgen writes or runs from its own
// binary: the starter manifest of `mcpgen init`, the demo manifest used when
// there is no mcpgen.toml, and the scaffold of `mcpgen new`.
package templates

import (
	"bytes"
	"embed"
	"text/template"
)

// Starter is the commented manifest that `mcpgen init` writes.
//
//go:embed starter.toml
var Starter []byte

// Demo is the manifest mcpgen uses when there is no mcpgen.toml and no
// --manifest: every server in it runs on a fresh machine, offline.
//
//go:embed demo.toml
var Demo []byte

// DemoName is how messages refer to the demo manifest.
const DemoName = "embedded demo manifest"

//go:embed scaffold
var scaffold embed.FS

// SDKVersion is the official Go MCP SDK that scaffolds use.
const SDKVersion = "v1.8.0"

// ScaffoldData fills the scaffold's templates.
type ScaffoldData struct {
	Name       string // the server's name in the manifest
	Dir        string // its directory, relative to the manifest
	Module     string // its Go module path
	Exe        string // the suffix of the built program's name: ".exe" for Windows
	SDKVersion string
	Entry      string // its manifest entry, for the README
}

// Entry returns the [servers.NAME] table that `mcpgen new` adds to the
// manifest.
func Entry(d ScaffoldData) ([]byte, error) {
	return execute("scaffold/entry.toml.tmpl", d)
}

// Scaffold returns the files of a new Go MCP server, by path relative to
// its directory.
func Scaffold(d ScaffoldData) (map[string][]byte, error) {
	if d.SDKVersion == "" {
		d.SDKVersion = SDKVersion
	}
	entry, err := Entry(d)
	if err != nil {
		return nil, err
	}
	d.Entry = string(entry)
	files := map[string][]byte{}
	// .gitignore is embedded without its dot: embed leaves out dot files.
	for name, tmpl := range map[string]string{
		"go.mod":       "go.mod",
		"main.go":      "main.go",
		"main_test.go": "main_test.go",
		"README.md":    "README.md",
		".gitignore":   "gitignore",
	} {
		b, err := execute("scaffold/"+tmpl+".tmpl", d)
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	return files, nil
}

func execute(name string, d ScaffoldData) ([]byte, error) {
	t, err := template.ParseFS(scaffold, name)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
