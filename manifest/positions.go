package manifest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// A Position is a place in the manifest file, 1-based.
type Position struct {
	Line, Column int
}

// Limits on the shape of a manifest. A manifest needs a handful of levels
// and a few dozen keys per table; these bounds are far beyond that, and
// keep a hostile or broken file from costing seconds and gigabytes.
const (
	// MaxDepth is how deeply a manifest may nest tables, dotted keys,
	// arrays and inline tables, counted as the parts of a key path
	// (servers.git.tools.log.args.count.enum[0] is 8).
	MaxDepth = 64
	// MaxTableKeys is how many keys one table may hold, and MaxKeys how
	// many key paths the whole manifest may write (array elements do not
	// count). go-toml's decoder looks every key up among the keys before
	// it, so its time grows with their square: 40,000 keys in one table
	// take it 3 s.
	MaxTableKeys = 10_000
	MaxKeys      = 200_000
)

// positions remembers where each key path ("servers.git.tools.log") and its
// value are written. go-toml decodes values but forgets where they came
// from; a second pass with its unstable parser remembers, so that every
// error can point at the line and column to fix.
//
// The paths form a tree, each node found from its parent by one key part,
// so that indexing costs one map entry per key part written: a table of
// full path strings cost the square of the depth for each key (1 GB for a
// 10,000-level inline table).
type positions struct {
	nodes    []pathNode // nodes[0] is the root; a node's index is its first appearance
	children map[edge]int32
	keys     int // key paths written, array elements left out
	// lines holds the offset where each line starts. The parser's own
	// Shape counts lines from the start of the file on every call, which
	// made indexing a manifest quadratic in its size.
	lines []int
}

type pathNode struct {
	key, value Position // zero Line: not written
	where      Position // the key's place, else the nearest enclosing one
	depth      int
	keys       int // how many keys the table at this path holds
}

type edge struct {
	parent int32
	part   string
}

// limitError says where a manifest goes past one of its limits.
type limitError struct {
	at  Position
	msg string
}

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

// indexPositions walks the file's expressions and records where every key
// path is written. It stops at the first place that goes past a limit
// (MaxDepth, MaxTableKeys, MaxKeys) and reports it, before anything
// decodes the file. A file that does
// not parse gets the positions before the syntax error; go-toml's decoder
// reports the error itself.
func indexPositions(data []byte) (positions, *limitError) {
	ix := positions{nodes: []pathNode{{where: Position{1, 1}}}, children: map[edge]int32{}, lines: []int{0}}
	for i, c := range data {
		if c == '\n' {
			ix.lines = append(ix.lines, i+1)
		}
	}
	p := &unstable.Parser{}
	p.Reset(data)
	table := int32(0)
	for p.NextExpression() {
		e := p.Expression()
		var err *limitError
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table, err = ix.addKey(0, e.Key())
		case unstable.KeyValue:
			err = ix.addKeyValue(table, e)
		}
		if err != nil {
			return ix, err
		}
	}
	return ix, nil
}

// addKey records every part of a dotted key below parent and returns the
// node of the full key.
func (ix *positions) addKey(parent int32, it unstable.Iterator) (int32, *limitError) {
	n := parent
	for it.Next() {
		k := it.Node()
		var err *limitError
		if n, err = ix.child(n, string(k.Data), false, k.Raw); err != nil {
			return 0, err
		}
		ix.setKey(n, k.Raw)
	}
	return n, nil
}

func (ix *positions) addKeyValue(table int32, kv *unstable.Node) *limitError {
	n, err := ix.addKey(table, kv.Key())
	if err != nil {
		return err
	}
	return ix.addValue(n, kv.Value())
}

// addValue records a value at node n, and the values inside it. It
// recurses once per level, and the levels are at most MaxDepth.
func (ix *positions) addValue(n int32, v *unstable.Node) *limitError {
	ix.setValue(n, v.Raw)
	switch v.Kind {
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			if c := it.Node(); c.Kind == unstable.KeyValue {
				if err := ix.addKeyValue(n, c); err != nil {
					return err
				}
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
			e, err := ix.child(n, indexKey(i), true, c.Raw)
			if err == nil {
				err = ix.addValue(e, c)
			}
			if err != nil {
				return err
			}
			i++
		}
	}
	return nil
}

func indexKey(i int) string { return "[" + strconv.Itoa(i) + "]" }

// child returns the node of part below parent, made if new; index says
// that part is an array index. r is where the part is written, for the
// error when it goes past a limit.
func (ix *positions) child(parent int32, part string, index bool, r unstable.Range) (int32, *limitError) {
	e := edge{parent, part}
	if n, ok := ix.children[e]; ok {
		return n, nil
	}
	where := ix.nodes[parent].where
	if r.Length > 0 {
		where = ix.at(int(r.Offset))
	}
	depth := ix.nodes[parent].depth + 1
	switch {
	case depth > MaxDepth:
		return 0, &limitError{where, fmt.Sprintf("nested more than %d levels deep (tables, dotted keys, arrays and inline tables count): a manifest needs a handful; flatten this value", MaxDepth)}
	case index:
	case ix.nodes[parent].keys >= MaxTableKeys:
		return 0, &limitError{where, fmt.Sprintf("more than %d keys in one table: mcpgen reads at most that many", MaxTableKeys)}
	case ix.keys >= MaxKeys:
		return 0, &limitError{where, fmt.Sprintf("more than %d keys in the manifest: mcpgen reads at most that many", MaxKeys)}
	default:
		ix.nodes[parent].keys++
		ix.keys++
	}
	n := int32(len(ix.nodes))
	ix.nodes = append(ix.nodes, pathNode{where: where, depth: depth})
	ix.children[e] = n
	return n, nil
}

// setKey and setValue keep the first place a path is written: where a
// table is first named.
func (ix *positions) setKey(n int32, r unstable.Range) {
	if r.Length > 0 && ix.nodes[n].key.Line == 0 {
		ix.nodes[n].key = ix.at(int(r.Offset))
	}
}

func (ix *positions) setValue(n int32, r unstable.Range) {
	if r.Length > 0 && ix.nodes[n].value.Line == 0 {
		ix.nodes[n].value = ix.at(int(r.Offset))
	}
}

// at returns the line and column of a byte offset; columns count bytes, as
// the parser's own errors do.
func (ix *positions) at(offset int) Position {
	line := sort.Search(len(ix.lines), func(i int) bool { return ix.lines[i] > offset }) - 1
	return Position{Line: line + 1, Column: offset - ix.lines[line] + 1}
}

// walk returns the nodes of path's prefixes that the file writes, root
// first: fewer than len(path)+1 when the file stops short of path.
func (ix *positions) walk(path []string) []int32 {
	nodes := make([]int32, 1, len(path)+1)
	n := int32(0)
	for _, part := range path {
		c, ok := ix.children[edge{n, part}]
		if !ok {
			break
		}
		n = c
		nodes = append(nodes, n)
	}
	return nodes
}

// childOrder returns when each of the keys below path first appears in the
// file, to keep file order; keys the file does not write are left out.
func (ix *positions) childOrder(path []string, keys []string) map[string]int {
	order := make(map[string]int, len(keys))
	nodes := ix.walk(path)
	if ix.nodes == nil || len(nodes) != len(path)+1 {
		return order
	}
	parent := nodes[len(nodes)-1]
	for _, k := range keys {
		if n, ok := ix.children[edge{parent, k}]; ok {
			order[k] = int(n)
		}
	}
	return order
}

// key returns where the key at path is written, or the nearest enclosing
// key's place when path itself was never written (a default, say).
func (ix *positions) key(path []string) Position {
	if ix.nodes == nil {
		return Position{Line: 1, Column: 1}
	}
	nodes := ix.walk(path)
	for i := len(nodes) - 1; i > 0; i-- {
		if pos := ix.nodes[nodes[i]].key; pos.Line > 0 {
			return pos
		}
	}
	return Position{Line: 1, Column: 1}
}

// value returns where the value at path is written, else where its key is.
func (ix *positions) value(path []string) Position {
	if ix.nodes != nil {
		if nodes := ix.walk(path); len(nodes) == len(path)+1 {
			if pos := ix.nodes[nodes[len(nodes)-1]].value; pos.Line > 0 {
				return pos
			}
		}
	}
	return ix.key(path)
}

func (e *limitError) error(file string) *Error {
	return &Error{File: file, Pos: e.at, Msg: e.msg}
}
