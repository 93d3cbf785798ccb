package jsonfile

import (
	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
)

// An Agent is a provider of the JSON family: its file's format, the shape of its entries,
// and where its files are. Each agent's package declares one.
type Agent struct {
	Format Format
	Shape  Shape
	Where  providers.Files
}

func (a *Agent) Name() string           { return a.Shape.Provider }
func (a *Agent) Title() string          { return a.Shape.Title }
func (a *Agent) Files() providers.Files { return a.Where }

func (a *Agent) Render(m *manifest.Manifest, o providers.Options) ([]providers.Rendered, []string, error) {
	return Render(m, a.Shape, o)
}

func (a *Agent) Merge(existing []byte, entries []providers.Rendered, o providers.MergeOptions) ([]byte, error) {
	return Merge(a.Format, existing, entries, o)
}

func (a *Agent) Owners(data []byte) ([]providers.Owned, error) { return Owners(a.Format, data) }

func (a *Agent) Import(data []byte, file string) (*providers.ImportedFile, error) {
	return Import(a.Format, a.Shape, data, file)
}
