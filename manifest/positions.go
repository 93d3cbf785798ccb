package manifest

import (
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// A Position is a place in the manifest file, 1-based.
type Position struct {
	Line, Column int
}

// positions maps a dotted key path ("servers.git.tools.log") to where its key
// and its value are written. go-toml decodes values but forgets where they
// came from; a second pass with its unstable parser remembers, so that every
// error can point at the line and column to fix.
type positions struct {
	keys   map[string]Position
	values map[string]Position
	order  map[string]int // first appearance of a path, for file order
}

func pathKey(path []string) string { return strings.Join(path, "\x00") }

func indexPositions(data []byte) positions {
	ix := positions{keys: map[string]Position{}, values: map[string]Position{}, order: map[string]int{}}
	p := &unstable.Parser{}
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = ix.addKey(p, nil, e.Key())
		case unstable.KeyValue:
			ix.addKeyValue(p, table, e)
		}
	}
	return ix
}

// addKey records every prefix of a dotted key and returns the full path.
func (ix positions) addKey(p *unstable.Parser, prefix []string, it unstable.Iterator) []string {
	path := append([]string(nil), prefix...)
	for it.Next() {
		k := it.Node()
		path = append(path, string(k.Data))
		ix.set(ix.keys, path, p, k.Raw)
	}
	return path
}

func (ix positions) addKeyValue(p *unstable.Parser, table []string, kv *unstable.Node) {
	path := ix.addKey(p, table, kv.Key())
	ix.addValue(p, path, kv.Value())
}

func (ix positions) addValue(p *unstable.Parser, path []string, v *unstable.Node) {
	ix.set(ix.values, path, p, v.Raw)
	switch v.Kind {
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			if c := it.Node(); c.Kind == unstable.KeyValue {
				ix.addKeyValue(p, path, c)
			}
		}
	case unstable.Array:
		it := v.Children()
		i := 0
		for it.Next() {
			c := it.Node()
			if c.Kind == unstable.Comment {
				continue
			}
			ix.addValue(p, append(path[:len(path):len(path)], indexKey(i)), c)
			i++
		}
	}
}

func indexKey(i int) string { return "[" + strconv.Itoa(i) + "]" }

func (ix positions) set(m map[string]Position, path []string, p *unstable.Parser, r unstable.Range) {
	k := pathKey(path)
	if _, seen := ix.order[k]; !seen {
		ix.order[k] = len(ix.order)
	}
	if r.Length == 0 {
		return
	}
	if _, ok := m[k]; ok {
		return // keep the first place a table is named
	}
	s := p.Shape(r)
	m[k] = Position{Line: s.Start.Line, Column: s.Start.Column}
}

// key returns where the key at path is written, or the nearest enclosing
// key's place when path itself was never written (a default, say).
func (ix positions) key(path []string) Position {
	for n := len(path); n > 0; n-- {
		if pos, ok := ix.keys[pathKey(path[:n])]; ok {
			return pos
		}
	}
	return Position{Line: 1, Column: 1}
}

// value returns where the value at path is written, else where its key is.
func (ix positions) value(path []string) Position {
	if pos, ok := ix.values[pathKey(path)]; ok {
		return pos
	}
	return ix.key(path)
}
