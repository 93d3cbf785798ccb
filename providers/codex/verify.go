package codex

import (
	"fmt"

	"github.com/pelletier/go-toml/v2"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
)

// verify checks the merged file: it must parse, hold each entry as written (with the
// approval tables of the servers mcpgen owned), not hold the servers removed, and hold
// everything else as before. A failure is a bug in Merge, reported rather than written.
func verify(d *document, p *plan, out []byte) error {
	got := map[string]any{}
	if err := toml.Unmarshal(out, &got); err != nil {
		return fmt.Errorf("internal error: the merged file does not parse (%w); please report this bug", decodeError(err))
	}
	bug := func(key string) error {
		return fmt.Errorf("internal error: the merged file gets %s wrong; please report this bug", key)
	}
	for k, v := range d.decoded {
		if k != "mcp_servers" && !sameValue(v, got[k]) {
			return bug(k)
		}
	}
	for k := range got {
		if _, ok := d.decoded[k]; !ok && k != "mcp_servers" {
			return bug(k)
		}
	}
	oldServers, _ := d.decoded["mcp_servers"].(map[string]any)
	gotServers, _ := got["mcp_servers"].(map[string]any)
	touched := make(map[string]bool, len(p.written)+len(p.removed))
	for _, name := range p.removed {
		touched[name] = true
		if _, ok := gotServers[name]; ok {
			return bug("mcp_servers." + manifest.TOMLKey(name))
		}
	}
	for _, b := range p.written {
		touched[b.name] = true
		v, ok := gotServers[b.name]
		oldValue, _ := oldServers[b.name].(map[string]any)
		gotValue, _ := v.(map[string]any)
		keepsTools := d.servers[b.name] == nil || d.servers[b.name].state != owned || sameValue(oldValue["tools"], gotValue["tools"])
		if !ok || !sameValue(withoutTools(v), b.value) || !keepsTools {
			return bug("mcp_servers." + manifest.TOMLKey(b.name))
		}
	}
	for name, v := range oldServers {
		if !touched[name] && !sameValue(v, gotServers[name]) {
			return bug("mcp_servers." + manifest.TOMLKey(name))
		}
	}
	for name := range gotServers {
		if _, ok := oldServers[name]; !ok && !touched[name] {
			return bug("mcp_servers." + manifest.TOMLKey(name))
		}
	}
	return nil
}

// sameValue reports whether two decoded values are equal (NaN included).
func sameValue(a, b any) bool {
	return providers.Fingerprint(a) == providers.Fingerprint(b)
}
