// Package templates holds the files mcpgen writes or runs from its own
// binary: the starter manifest of `mcpgen init`, the demo manifest used when
// there is no mcpgen.toml, and the scaffold of `mcpgen new`.
package templates

import (
	_ "embed"
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
