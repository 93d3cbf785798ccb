package manifest

import (
	"bytes"
	"sort"
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
	// lines holds the offset where each line starts. The parser's own
	// Shape counts lines from the start of the file on every call, which
	// made indexing a manifest quadratic in its size (70% of emit for 100
	// servers).
	lines []int
}

func pathKey(path []string) string { return strings.Join(path, "\x00") }

// dotted writes a key path as users write it: env.API_KEY, args[2].
func dotted(path []string) string {
	var b strings.Builder
	for i, p := range path {
		if i > 0 && !strings.HasPrefix(p, "[") {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

func indexPositions(data []byte) positions {
	ix := positions{keys: map[string]Position{}, values: map[string]Position{}, order: map[string]int{}, lines: []int{0}}
	for i := 0; ; {
		n := bytes.IndexByte(data[i:], '\n')
		if n < 0 {
			break
		}
		i += n + 1
		ix.lines = append(ix.lines, i)
	}
	p := &unstable.Parser{}
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = ix.addKey(nil, e.Key())
		case unstable.KeyValue:
			ix.addKeyValue(table, e)
		}
	}
	return ix
}

// addKey records every prefix of a dotted key and returns the full path.
func (ix positions) addKey(prefix []string, it unstable.Iterator) []string {
	path := append([]string(nil), prefix...)
	for it.Next() {
		k := it.Node()
		path = append(path, string(k.Data))
		ix.set(ix.keys, path, k.Raw)
	}
	return path
}

func (ix positions) addKeyValue(table []string, kv *unstable.Node) {
	path := ix.addKey(table, kv.Key())
	ix.addValue(path, kv.Value())
}

func (ix positions) addValue(path []string, v *unstable.Node) {
	ix.set(ix.values, path, v.Raw)
	switch v.Kind {
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			if c := it.Node(); c.Kind == unstable.KeyValue {
				ix.addKeyValue(path, c)
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
			ix.addValue(append(path[:len(path):len(path)], indexKey(i)), c)
			i++
		}
	}
}

func indexKey(i int) string { return "[" + strconv.Itoa(i) + "]" }

func (ix positions) set(m map[string]Position, path []string, r unstable.Range) {
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
	m[k] = ix.at(int(r.Offset))
}

// at returns the line and column of a byte offset; columns count bytes, as
// the parser's own errors do.
func (ix positions) at(offset int) Position {
	line := sort.Search(len(ix.lines), func(i int) bool { return ix.lines[i] > offset }) - 1
	return Position{Line: line + 1, Column: offset - ix.lines[line] + 1}
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
