package codex

import (
	"bytes"
	"slices"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/mcpgen/mcpgen/providers"
)

// unitKind says what a unit of the file is.
type unitKind uint8

const (
	blankUnit      unitKind = iota // a line of nothing but spaces
	commentUnit                    // a line of nothing but a comment
	tableUnit                      // [table] header
	arrayTableUnit                 // [[array.table]] header
	keyValueUnit                   // key = value, maybe over several lines
)

// unit is one top-level expression of the file, or one blank line, with the whole lines it
// spans (trailing comment and line ending included).
type unit struct {
	kind       unitKind
	start, end int      // bytes of data
	at         int      // offset of the first key or of the comment, for positions
	path       []string // headers: the table's key; key/values: the full key, table included
	section    int      // the header whose table holds a key/value, -1 for the root table
	lastInSect int      // headers: the last unit of the section that is not a comment or blank
	valueKind  unstable.Kind
}

// part is a run of units that belongs to one server: a header and the key/values of its
// table (with the comments and blank lines between them), or a key/value outside any table of
// the server.
type part struct {
	first, last int  // unit indexes, inclusive
	tools       bool // under mcp_servers.NAME.tools
	header      bool
}

// server is what the file holds for one name under mcp_servers.
type server struct {
	name     string
	parts    []part
	main     int    // index in parts of the [mcp_servers.NAME] table, -1 if none
	marker   int    // unit index of the marker line above the main table, -1 if none
	markerFP string // the fingerprint that the marker records
	owner    string // the manifest that the marker records; "" if none
	value    any    // decoded
	state    state  // set by plan, which knows whose entries these are
}

// document is the existing file cut into units.
type document struct {
	data      []byte
	eol       string
	units     []unit
	rootLast  int // last key/value of the root table, -1 if none
	decoded   map[string]any
	servers   map[string]*server
	order     []*server // by first appearance
	container int       // a unit that makes mcp_servers something other than a table, -1
}

// parse cuts data into units and decodes it. Invalid TOML is an error with its position.
func parse(data []byte) (*document, error) {
	d := &document{data: data, eol: lineEnding(data), rootLast: -1, container: -1, servers: map[string]*server{}}
	var p unstable.Parser
	p.KeepComments = true
	p.Reset(data)
	var table []string
	section := -1
	pos := 0
	for p.NextExpression() {
		u, last := d.newUnit(p.Expression(), table, section)
		u.start = max(lineStart(data, u.at), pos)
		u.end = lineEnd(data, last)
		d.addBlanks(pos, u.start, section)
		pos = u.end
		i := len(d.units)
		switch u.kind {
		case tableUnit, arrayTableUnit:
			table, section = u.path, i
			u.section, u.lastInSect = i, i
		case keyValueUnit:
			if section < 0 {
				d.rootLast = i
			} else {
				d.units[section].lastInSect = i
			}
		}
		d.units = append(d.units, u)
	}
	if err := p.Error(); err != nil {
		return nil, syntaxError(data, err)
	}
	d.addBlanks(pos, len(data), section)
	d.decoded = map[string]any{}
	if err := toml.Unmarshal(data, &d.decoded); err != nil {
		return nil, decodeError(err)
	}
	d.findServers()
	return d, nil
}

// newUnit describes a top-level expression, found in the table named table (a header at
// index section). It returns the unit without its extent, and the offset of the expression's
// last byte that matters (its line ends after it).
func (d *document) newUnit(e *unstable.Node, table []string, section int) (unit, int) {
	u := unit{section: section, lastInSect: -1}
	switch e.Kind {
	case unstable.Comment:
		u.kind = commentUnit
		u.at = int(e.Raw.Offset)
		return u, int(e.Raw.Offset + e.Raw.Length)
	case unstable.Table, unstable.ArrayTable:
		u.kind = tableUnit
		if e.Kind == unstable.ArrayTable {
			u.kind = arrayTableUnit
		}
		u.at = headerStart(d.data, e)
		keys, end := keyParts(e, nil)
		u.path = keys
		return u, end
	default:
		u.kind = keyValueUnit
		u.at = int(e.Raw.Offset)
		u.path, _ = keyParts(e, table)
		u.valueKind = e.Value().Kind
		return u, int(e.Raw.Offset + e.Raw.Length)
	}
}

// keyParts returns the decoded parts of e's key after prefix, and the offset where the key
// ends.
func keyParts(e *unstable.Node, prefix []string) ([]string, int) {
	path := slices.Clip(prefix)
	end := 0
	it := e.Key()
	for it.Next() {
		k := it.Node()
		path = append(path, string(k.Data))
		end = int(k.Raw.Offset + k.Raw.Length)
	}
	return path, end
}

// headerStart returns the offset of the '[' that opens the table header e.
func headerStart(data []byte, e *unstable.Node) int {
	it := e.Key()
	it.Next()
	at := int(it.Node().Raw.Offset)
	if i := bytes.LastIndexByte(data[:at], '['); i >= 0 {
		at = i
		if e.Kind == unstable.ArrayTable && i > 0 && data[i-1] == '[' {
			at = i - 1
		}
	}
	return at
}

// addBlanks adds a blank unit for each line of data[from:to], which holds only whitespace.
func (d *document) addBlanks(from, to, section int) {
	for from < to {
		end := lineEnd(d.data, from)
		if end > to {
			end = to
		}
		d.units = append(d.units, unit{kind: blankUnit, start: from, end: end, at: from, section: section, lastInSect: -1})
		from = end
	}
}

// lineStart returns the offset of the line that holds offset at.
func lineStart(data []byte, at int) int {
	return bytes.LastIndexByte(data[:at], '\n') + 1
}

// lineEnd returns the offset just past the line ending that follows offset at, or the end
// of data.
func lineEnd(data []byte, at int) int {
	if at >= len(data) {
		return len(data)
	}
	i := bytes.IndexByte(data[at:], '\n')
	if i < 0 {
		return len(data)
	}
	return at + i + 1
}

// findServers groups the units under mcp_servers by server.
func (d *document) findServers() {
	decodedServers, _ := d.decoded["mcp_servers"].(map[string]any)
	for i := range d.units {
		u := &d.units[i]
		if u.kind == blankUnit || u.kind == commentUnit || len(u.path) == 0 || u.path[0] != "mcp_servers" {
			continue
		}
		if len(u.path) == 1 {
			if u.kind != tableUnit && d.container < 0 {
				d.container = i
			}
			continue
		}
		if u.kind == keyValueUnit && u.section >= 0 && len(d.units[u.section].path) >= 2 {
			continue // part of its header's run
		}
		s := d.servers[u.path[1]]
		if s == nil {
			s = &server{name: u.path[1], main: -1, marker: -1, value: decodedServers[u.path[1]]}
			d.servers[s.name] = s
			d.order = append(d.order, s)
		}
		pt := part{first: i, last: i, tools: len(u.path) >= 3 && u.path[2] == "tools", header: u.kind != keyValueUnit}
		if pt.header {
			pt.last = u.lastInSect
		}
		if u.kind == tableUnit && len(u.path) == 2 {
			s.main = len(s.parts)
			if owner, fp, ok := d.markerAbove(i); ok {
				s.marker, s.markerFP, s.owner = i-1, fp, owner
			}
		}
		s.parts = append(s.parts, pt)
	}
}

// markerAbove returns the owner and the fingerprint of the marker on the line right above
// unit i.
func (d *document) markerAbove(i int) (owner, fingerprint string, ok bool) {
	if i == 0 || d.units[i-1].kind != commentUnit {
		return "", "", false
	}
	u := d.units[i-1]
	return readMarker(d.data[u.at:u.end])
}

// state is how the file's copy of a server relates to the manifest that merges.
type state uint8

const (
	absent      state = iota // not in the file, or only its approval tables
	owned                    // marked as the manifest's (or without owner), unchanged since
	edited                   // marked as the manifest's (or without owner), changed since
	handWritten              // not marked
	foreign                  // marked as another manifest's
)

// classify tells how s relates to the manifest that own describes.
func (s *server) classify(own providers.Ownership) state {
	if s.marker >= 0 {
		switch {
		case !own.Mine(s.owner) && !own.Legacy(s.owner):
			return foreign
		case providers.Fingerprint(withoutTools(s.value)) == s.markerFP:
			return owned
		}
		return edited
	}
	for _, pt := range s.parts {
		if !pt.tools {
			return handWritten
		}
	}
	return absent
}

// withoutTools returns a server's value without its approval tables.
func withoutTools(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if _, ok := m["tools"]; !ok {
		return m
	}
	c := make(map[string]any, len(m))
	for k, e := range m {
		if k != "tools" {
			c[k] = e
		}
	}
	return c
}

// line returns the line where unit i starts.
func (d *document) line(i int) int {
	line, _ := position(d.data, d.units[i].start)
	return line
}
