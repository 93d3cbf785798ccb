// Package registry lists the providers mcpgen writes for: one row per agent.
package registry

import (
	"github.com/mcpgen/mcpgen/providers"
	"github.com/mcpgen/mcpgen/providers/amp"
	"github.com/mcpgen/mcpgen/providers/antigravity"
	"github.com/mcpgen/mcpgen/providers/claude"
	"github.com/mcpgen/mcpgen/providers/cline"
	"github.com/mcpgen/mcpgen/providers/codex"
	"github.com/mcpgen/mcpgen/providers/copilot"
	"github.com/mcpgen/mcpgen/providers/crush"
	"github.com/mcpgen/mcpgen/providers/cursor"
	"github.com/mcpgen/mcpgen/providers/gemini"
	"github.com/mcpgen/mcpgen/providers/goose"
	"github.com/mcpgen/mcpgen/providers/junie"
	"github.com/mcpgen/mcpgen/providers/kiro"
	"github.com/mcpgen/mcpgen/providers/opencode"
	"github.com/mcpgen/mcpgen/providers/qwen"
	"github.com/mcpgen/mcpgen/providers/vscode"
	"github.com/mcpgen/mcpgen/providers/warp"
	"github.com/mcpgen/mcpgen/providers/windsurf"
	"github.com/mcpgen/mcpgen/providers/zed"
)

// all is every provider, in the order that lists and --provider all follow.
var all = []providers.Provider{
	codex.Provider,
	claude.CodeProvider,
	claude.DesktopProvider,
	gemini.Provider,
	qwen.Provider,
	opencode.Provider,
	cursor.Provider,
	vscode.Provider,
	zed.Provider,
	copilot.Provider,
	windsurf.Provider,
	kiro.Provider,
	crush.Provider,
	junie.Provider,
	warp.Provider,
	amp.Provider,
	cline.Provider,
	goose.Provider,
	antigravity.Provider,
}

// All returns every provider.
func All() []providers.Provider { return all }

// Lookup returns the provider named name.
func Lookup(name string) (providers.Provider, bool) {
	for _, p := range all {
		if p.Name() == name {
			return p, true
		}
	}
	return nil, false
}

// Names returns the providers' names.
func Names() []string {
	names := make([]string, len(all))
	for i, p := range all {
		names[i] = p.Name()
	}
	return names
}
