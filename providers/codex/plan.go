package codex

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/mcpgen/mcpgen/manifest"
	"github.com/mcpgen/mcpgen/providers"
)

// plan is what Merge changes, by unit.
type plan struct {
	drop     []bool         // units to leave out
	replace  map[int]change // by first unit: the units to replace and their new text
	insertAt int            // unit index before which insert goes
	insert   []block        // new servers, in order
	written  []block        // every entry
	removed  []string       // servers removed altogether
}

// change replaces units [first, end) with text.
type change struct {
	end  int
	text []byte
}

func (p *plan) isEmpty() bool {
	return len(p.replace) == 0 && len(p.insert) == 0 && !slices.Contains(p.drop, true)
}

// plan decides what happens to each server, and reports conflicts.
func (d *document) plan(blocks []block, own providers.Ownership, force bool) (*plan, error) {
	if len(blocks) > 0 && d.container >= 0 {
		return nil, d.containerError()
	}
	wanted := make(map[string]*block, len(blocks))
	for i := range blocks {
		wanted[blocks[i].name] = &blocks[i]
	}
	for _, s := range d.order {
		s.state = s.classify(own)
	}
	if err := d.conflicts(wanted, own, force); err != nil {
		return nil, err
	}
	p := &plan{drop: make([]bool, len(d.units)), replace: map[int]change{}, insertAt: d.anchor(), written: blocks}
	for _, b := range blocks {
		s := d.servers[b.name]
		if err := d.write(p, b, s); err != nil {
			return nil, err
		}
	}
	for _, s := range d.order {
		if wanted[s.name] != nil || own.Legacy(s.owner) {
			continue // an entry without owner goes only when this manifest replaces it
		}
		if s.state == owned || s.state == edited && force {
			d.remove(p, s)
			p.removed = append(p.removed, s.name)
		}
	}
	return p, nil
}

// conflicts returns a *providers.ConflictError for the servers that Merge would overwrite or
// delete without owning them, unless force.
func (d *document) conflicts(wanted map[string]*block, own providers.Ownership, force bool) error {
	if force {
		return nil
	}
	var cs []providers.Conflict
	for _, s := range d.order {
		c := providers.Conflict{Name: s.name, Line: d.line(s.firstUnit())}
		switch {
		case s.state == handWritten && wanted[s.name] != nil:
			c.Reason = providers.ReasonHandWritten
		case s.state == foreign && wanted[s.name] != nil:
			c.Reason, c.Owner = providers.ReasonOtherManifest, s.owner
		case s.state == edited && (wanted[s.name] != nil || !own.Legacy(s.owner)):
			c.Reason = providers.ReasonEdited
		default:
			continue
		}
		cs = append(cs, c)
	}
	if len(cs) > 0 {
		return &providers.ConflictError{Conflicts: cs}
	}
	return nil
}

// firstUnit returns the unit where s starts: its marker, or its first part.
func (s *server) firstUnit() int {
	if s.marker >= 0 {
		return s.marker
	}
	first := s.parts[0].first
	for _, pt := range s.parts {
		first = min(first, pt.first)
	}
	return first
}

// write plans entry b over the file's server s (nil if none): in place of its main table if
// it has one, else with the new servers.
func (d *document) write(p *plan, b block, s *server) error {
	if s == nil || s.state == absent {
		// Nothing to replace; approval tables left from an earlier server stay.
		if err := d.checkToolsPlacement(s); err != nil {
			return err
		}
		p.insert = append(p.insert, b)
		return nil
	}
	for i, pt := range s.parts {
		if !pt.tools && i != s.main {
			d.dropPart(p, pt)
		}
	}
	if s.main < 0 {
		if err := d.checkToolsPlacement(s); err != nil {
			return err
		}
		p.insert = append(p.insert, b)
		return nil
	}
	main := s.parts[s.main]
	first := main.first
	if s.marker >= 0 {
		first = s.marker
	}
	p.replace[first] = change{end: main.last + 1, text: d.rewriteMain(b, main)}
	return nil
}

// checkToolsPlacement reports approval settings of s written as dotted keys outside its
// tables: they define the table mcp_servers.NAME, so a [mcp_servers.NAME] header added later
// would be invalid TOML.
func (d *document) checkToolsPlacement(s *server) error {
	if s == nil {
		return nil
	}
	for _, pt := range s.parts {
		if pt.tools && !pt.header {
			line, col := position(d.data, d.units[pt.first].at)
			key := manifest.TOMLKey(s.name)
			return fmt.Errorf("%d:%d: server %q has tool settings written as dotted keys outside its tables, so mcpgen cannot add [mcp_servers.%s] after them: move them into [mcp_servers.%s.tools.TOOL] tables, then re-run",
				line, col, s.name, key, key)
		}
	}
	return nil
}

// rewriteMain returns the new text of a server's main table: the marker, the header as it
// was, the new body, and the approval settings that the table held.
func (d *document) rewriteMain(b block, main part) []byte {
	eol := d.eol
	h := d.units[main.first]
	out := make([]byte, 0, len(b.marker)+(h.end-h.start)+len(b.body)+2)
	out = append(out, b.marker...)
	out = appendLine(out, d.data[h.start:h.end], eol)
	out = append(out, b.body...)
	for i := main.first + 1; i <= main.last; i++ {
		u := d.units[i]
		if u.kind == keyValueUnit && len(u.path) >= 3 && u.path[2] == "tools" {
			out = appendLine(out, d.data[u.start:u.end], eol)
		}
	}
	return out
}

// appendLine appends line, and eol if it has no line ending.
func appendLine(out, line []byte, eol string) []byte {
	out = append(out, line...)
	if !bytes.HasSuffix(line, []byte("\n")) {
		out = append(out, eol...)
	}
	return out
}

// remove plans the removal of everything s has in the file.
func (d *document) remove(p *plan, s *server) {
	if s.marker >= 0 {
		p.drop[s.marker] = true
	}
	for _, pt := range s.parts {
		d.dropPart(p, pt)
	}
}

func (d *document) dropPart(p *plan, pt part) {
	for i := pt.first; i <= pt.last; i++ {
		p.drop[i] = true
	}
}

// anchor returns the unit index before which new servers go: right after the last table that
// holds servers (with the key/values of its section), else the end of the file.
func (d *document) anchor() int {
	last := -1
	for i, u := range d.units {
		if u.kind == blankUnit || u.kind == commentUnit || len(u.path) == 0 || u.path[0] != "mcp_servers" {
			continue
		}
		end := u.lastInSect
		if u.kind == keyValueUnit {
			end = d.rootLast
			if u.section >= 0 {
				end = d.units[u.section].lastInSect
			}
		}
		last = max(last, end, i)
	}
	if last < 0 {
		return len(d.units)
	}
	return last + 1
}

// containerError explains why mcpgen cannot add tables to the mcp_servers of this file.
func (d *document) containerError() error {
	u := d.units[d.container]
	line, col := position(d.data, u.at)
	switch {
	case u.kind == arrayTableUnit:
		return fmt.Errorf("%d:%d: mcp_servers is an array of tables, but Codex reads one [mcp_servers.NAME] table per server: rewrite it that way, then re-run", line, col)
	case u.valueKind == unstable.InlineTable:
		return fmt.Errorf("%d:%d: mcp_servers is an inline table, which mcpgen cannot extend without rewriting it: move each server into its own [mcp_servers.NAME] table, then re-run", line, col)
	default:
		return fmt.Errorf("%d:%d: mcp_servers is not a table, but Codex reads one [mcp_servers.NAME] table per server: remove this line or make it such tables, then re-run", line, col)
	}
}
